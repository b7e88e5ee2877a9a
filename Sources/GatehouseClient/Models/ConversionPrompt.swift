import Foundation
import GatehouseWire
import Observation

/// What the person was doing when a gate stopped them, to resume after signing up (CH07-G5):
/// an action name and the app's own context (the flow to duplicate, the screen).
public struct PendingAction: Sendable, Equatable, Codable {
    /// The gated action's name as the device's gate knows it (e.g. `duplicate_shared_flow`).
    public var action: String
    /// What the app needs to resume the action, in its own keys (e.g. the share's id and the
    /// screen).
    public var context: [String: String]

    /// An action to resume after sign-up: its gate name and the app's context for it.
    public init(action: String, context: [String: String] = [:]) {
        self.action = action
        self.context = context
    }
}

/// CH07 §6's conversion prompt, one model for every trigger: the copy verbatim from the preset,
/// an extra line once the person has dismissed it before, Apple / Google / Email (never "Try
/// without account"), "Not now" back to browsing, and the pending action handed back after
/// sign-up.
@MainActor @Observable
public final class ConversionPrompt {
    /// Whether the prompt shows; bind a sheet to it. Set by ``present(for:)`` and
    /// ``gate(_:surface:)``, cleared by ``notNow()`` and ``didSignIn()``.
    public private(set) var isPresented = false
    /// The action the prompt interrupted, handed back by ``didSignIn()``; nil when none is waiting.
    public private(set) var pending: PendingAction?
    /// Dismissals so far (kept on the device across launches).
    public private(set) var dismissals: Int

    private let client: Gatehouse
    private let storage: any ClientStorage
    private var copy: [String: String] = [:]
    private var methods: [String] = ["apple", "google", "email_password"]

    /// A prompt that decides gates through `client` and keeps its dismissal count in `storage`.
    ///
    /// - Parameters:
    ///   - client: The client whose gates, sign-in methods and copy the prompt uses.
    ///   - storage: The same ``ClientStorage`` the client was made with, so ``dismissals``
    ///     survives relaunches.
    public init(client: Gatehouse, storage: any ClientStorage) {
        self.client = client
        self.storage = storage
        dismissals = storage.data(forKey: "conversion_dismissals").flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
    }

    /// Reads the enabled sign-in methods and the preset's copy; call it before showing the prompt.
    public func loadCopy() async {
        if let configuration = await client.configurationSnapshot {
            methods = configuration.signInMethods
        }
        copy = await client.copy
    }

    /// The prompt's heading in the preset's words.
    public var title: String { copy["conversion.title"] ?? "Create an account" }
    /// The line under the heading that says why an account is needed, in the preset's words.
    public var body: String {
        copy["conversion.body"] ?? "An account keeps your work safe on every device."
    }
    /// Shown the second time on: "Without an account, your work is not kept."
    public var repeatLine: String? {
        dismissals > 0 ? copy["conversion.repeat_line"] ?? "Without an account, your work is not kept." : nil
    }

    /// The provider buttons, in CH07's order, for the methods the preset enables. There is no
    /// "Try without account" here: that would loop.
    public var buttons: [GateAction] { providerButtons(enabled: methods, copy: copy) }

    /// The label of the button that runs ``notNow()``.
    public var notNowLabel: String { copy["conversion.not_now"] ?? "Not now" }

    /// Asks before `action` when the device's gate says an account is needed; true when the
    /// prompt is now showing (the action must wait), false when the action may go ahead.
    public func gate(_ action: PendingAction, surface: GateSurface? = nil) async -> Bool {
        guard let decision = try? await client.decide(action.action, surface: surface), !decision.allowed, decision.gate == "account" else {
            return false
        }
        present(for: action)
        return true
    }

    /// Shows the prompt for `action` without asking the gate, for a trigger the app decides itself.
    public func present(for action: PendingAction) {
        pending = action
        isPresented = true
    }

    /// "Not now": back to browsing; the pending action is dropped.
    public func notNow() {
        isPresented = false
        pending = nil
        dismissals += 1
        storage.set(Data(String(dismissals).utf8), forKey: "conversion_dismissals")
    }

    /// After the person signed up or in from the prompt: the action to resume, exactly as it
    /// was (CH07-G5). Nil when nobody is signed in yet.
    public func didSignIn() async -> PendingAction? {
        guard await client.state.user != nil else { return nil }
        isPresented = false
        defer { pending = nil }
        return pending
    }
}

/// "Continue with Apple / Google / Email" for the enabled sign-in methods, in CH07's order,
/// labelled with the preset's copy (CH07's words before any configuration was loaded).
func providerButtons(enabled methods: [String], copy: [String: String]) -> [GateAction] {
    var buttons: [GateAction] = []
    if methods.contains("apple") { buttons.append(GateAction(id: "apple", label: copy["welcome.continue_apple"] ?? "Continue with Apple")) }
    if methods.contains("google") { buttons.append(GateAction(id: "google", label: copy["welcome.continue_google"] ?? "Continue with Google")) }
    if methods.contains("email_password") || methods.contains("magic_link") {
        buttons.append(GateAction(id: "email", label: copy["welcome.continue_email"] ?? "Continue with Email"))
    }
    return buttons
}

/// CH08 §3.1's inline upsell: shown at most once per app session, unless the person asks for it.
@MainActor @Observable
public final class UpsellPolicy {
    /// Whether the inline upsell has had its showing this app session; reset by ``newSession()``.
    public private(set) var shownThisSession = false

    /// A policy at the start of an app session, with the inline upsell not shown yet.
    public init() {}

    /// Whether to show the inline upsell now; the first true uses up this session's showing.
    public func shouldShowInline() -> Bool {
        guard !shownThisSession else { return false }
        shownThisSession = true
        return true
    }

    /// The person asked (tapped "Upgrade"): always shown.
    public func shouldShowOnRequest() -> Bool { true }

    /// A new app session (the app came back after being terminated).
    public func newSession() { shownThisSession = false }
}

/// The plan as Hannah's and Handz's screens show it: the banner, the paywall, read-only.
@MainActor @Observable
public final class PlanStatus {
    /// The plan as shown now (the cached snapshot, with `pro_grace` offline), as of the last
    /// ``update()``; nil before it or when there is none for this person.
    public private(set) var snapshot: EntitlementsPayload?
    /// The banner above the app: a trial's days left (from the preset's `banner_from_day`) or
    /// pro_grace's "can't confirm your subscription" line; nil when there is nothing to say.
    public private(set) var banner: String?
    private let client: Gatehouse
    private var creditsTemplate = "{remaining} of {granted} credits left"

    /// How many flows the person has saved, which only the app knows (decision 22): set it so a
    /// downgrade reports whether flows are now beyond the cap.
    public var savedFlowCount: Int?

    /// A status that reads the plan from `client`; empty until ``update()`` runs.
    public init(client: Gatehouse) { self.client = client }

    /// Refreshes from the server (or the cache when offline). A paid plan (trial, Pro, pro_grace)
    /// the server now answers as Free is reported as CH08 §9 `downgrade_detected` (decision 22).
    public func update() async {
        let before = await client.currentEntitlements?.planState
        let confirmed = try? await client.entitlements()
        snapshot = await client.currentEntitlements
        if let before, let confirmed, await !client.isOffline, before == .trial || before.isPro, confirmed.planState == .free {
            var properties: [String: JSONValue] = ["previousPlan": .string(before.rawValue), "newPlan": .string(confirmed.planState.rawValue)]
            if let savedFlowCount, let cap = confirmed.limits["saved_flow_cap"] ?? nil {
                properties["hasOverCapFlows"] = .bool(savedFlowCount > cap)
            }
            await client.track("downgrade_detected", properties)
        }
        banner = await client.banner
        creditsTemplate = await client.text("credits.label", creditsTemplate)
        practiceProLabel = await client.text("practice.cta_pro", practiceProLabel)
        practiceCreditLabel = await client.text("practice.cta_credit", practiceCreditLabel)
    }

    /// `guest`, `free`, `trial`, `pro` or `pro_grace`; `guest` while there is no snapshot.
    public var planState: PlanState { snapshot?.planState ?? .guest }
    /// Past data stays readable; nothing can be changed (Hannah after the trial).
    public var isReadOnly: Bool { snapshot?.readOnly ?? false }
    /// Paid features answer the paywall: Free after a trial that ended.
    public var showsPaywall: Bool { planState == .free && isReadOnly }
    /// Days left in the trial; nil when the plan is not a trial.
    public var trialDaysLeft: Int? { snapshot?.trial?.daysLeft }
    /// The practice button of a flow (Handz CH08 §5.1): "Practice (Pro)" on plans without a
    /// monthly limit, "Practice (1 credit)" where a practice spends a credit, nil for a guest.
    public func practiceLabel(credit name: String = "practice") -> String? {
        switch planState {
        case .pro, .trial, .proGrace: return practiceProLabel
        case .free where snapshot?.credits[name] != nil: return practiceCreditLabel
        default: return nil
        }
    }
    private var practiceProLabel = "Practice (Pro)"
    private var practiceCreditLabel = "Practice (1 credit)"

    /// "Credits: 2/3 this month" (the preset's `credits.label`), for a plan that grants `name`.
    public func creditsLabel(_ name: String) -> String? {
        guard let balance = snapshot?.credits[name] else { return nil }
        return creditsTemplate.replacingOccurrences(of: "{remaining}", with: String(balance.remaining))
            .replacingOccurrences(of: "{granted}", with: String(balance.granted))
    }
}

/// The tile shown when a person has no avatar: initials and a colour that stays the same for
/// the same person.
public struct AvatarPlaceholder: Sendable, Equatable {
    /// The first letters, capitalised, of up to two words of the display name (else the handle,
    /// else the address before the `@`); `?` when there are none.
    public var initials: String
    /// `#rrggbb`, from a fixed palette.
    public var color: String

    static let palette = ["#e57373", "#f06292", "#ba68c8", "#7986cb", "#4fc3f7", "#4db6ac", "#81c784", "#ffb74d", "#a1887f", "#90a4ae"]

    /// The tile for `user`: initials from the first name available, the colour from the
    /// account's id.
    public init(user: UserPayload) {
        let source = user.displayName ?? user.handle ?? user.email?.split(separator: "@").first.map(String.init) ?? ""
        let words = source.split(whereSeparator: { $0 == " " || $0 == "." || $0 == "_" || $0 == "-" }).filter { !$0.isEmpty }
        let letters = words.prefix(2).compactMap { $0.first }.map { String($0).uppercased() }
        initials = letters.isEmpty ? "?" : letters.joined()
        // FNV-1a over the id: stable across launches and platforms (Hasher is seeded per process).
        var hash: UInt32 = 2_166_136_261
        for byte in user.id.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        color = Self.palette[Int(hash % UInt32(Self.palette.count))]
    }
}
