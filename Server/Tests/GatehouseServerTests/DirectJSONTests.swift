import Foundation
@testable import GatehouseServer
import GatehouseWire
import Testing

/// Issue 61: the signed-in reads' answers, and the sign-in and refresh answers, are written by
/// themselves (`DirectJSON`), and must be the bytes `CompactJSON` writes through `Encoder` (which
/// `CompactJSONTests` holds to `JSONEncoder`'s): every conforming type, with every member set and
/// with every optional one unset, with text that needs escaping and keys that sort by their bytes.
@Suite struct DirectJSONTests {
    static let awkward = "quote \" backslash \\ slash / é 😀 \u{2028} nul \u{0} tab \t nl \n \u{1F}"

    static let metadata: [String: JSONValue] = [
        "b": .array([.number(1), .number(2.5), .null, .number(-0.0), .number(1e300), .number(9_007_199_254_740_992), .number(4_503_599_627_370_495.5)]),
        "a": .object(["nested": .string(awkward), "Z": .bool(true), "é": .bool(false), "": .object([:])]),
        "A": .string("upper"), "aa": .array([]),
    ]

    static let identity = IdentityPayload(provider: .apple, email: "relay@privaterelay.appleid.com", isPrivateRelay: true, createdAt: "2026-11-28T01:40:00Z")

    static let user = UserPayload(
        id: "0b7e6a52-3c1d-4c53-9f1e-2a1d8e0b6c11", email: "zoë@example.com", emailVerified: true, isAnonymous: false, displayName: awkward,
        handle: "zoe", avatarURL: "https://example.com/a/b.png", createdAt: "2026-11-28T01:40:00Z", onboardingComplete: true,
        identities: [identity, IdentityPayload(provider: .email, email: nil, isPrivateRelay: false, createdAt: "2026-11-29T00:00:00Z")],
        phone: "+14155550100", phoneVerified: true, userMetadata: metadata, appMetadata: ["roles": .array([.string("admin")])])

    static let subscription = SubscriptionInfo(
        productID: "pro.monthly", status: "active", renewsAt: "2026-12-28T01:40:00Z", expiresAt: "2026-12-29T01:40:00Z", willRenew: true,
        source: "google_play", testPurchase: true)

    static let entitlements = EntitlementsPayload(
        planState: .proGrace, capabilities: ["save_flow": true, "Export": false, "ai": true],
        limits: ["saved_flows": 10, "practice": nil, "Zed": 0],
        credits: ["practice": CreditBalance(remaining: 3, granted: 5, resetsAt: "2027-01-01T00:00:00Z"), "ai": CreditBalance(remaining: 0, granted: 0, resetsAt: nil)],
        trial: TrialInfo(endsAt: "2026-12-05T01:40:00Z", daysLeft: 7), readOnly: true, tier: "nutritionist", subscription: subscription,
        sources: [subscription, SubscriptionInfo(productID: "grant", status: "active", renewsAt: nil, expiresAt: nil, willRenew: false)],
        evaluatedAt: "2026-11-28T01:40:00Z")

    static let decision = GateDecision(
        allowed: false, gate: "paywall", reasonCode: "plan_required", message: awkward, secondaryMessage: "Try Pro free for 7 days.",
        actions: [GateAction(id: "upgrade", label: "Upgrade to Pro"), GateAction(id: "not_now", label: "Not now")])

    static let session = SessionPayload(
        accessToken: "eyJhbGciOiJFUzI1NiJ9.e30.\(awkward)", expiresIn: 900, expiresAt: 1_795_000_000, refreshToken: "r/+=\(awkward)",
        sessionID: "5f0c7a52-3c1d-4c53-9f1e-2a1d8e0b6c11")

    static let challenge = MFAChallengePayload(
        challengeID: "c-\(awkward)", factors: [MFAFactorSummary(id: "f1", type: "totp", name: awkward), MFAFactorSummary(id: "f2", type: "totp", name: "")],
        expiresAt: "2026-11-28T01:45:00Z")

    /// Each type with every member set, and with the optional ones unset.
    static let full: [any DirectJSON & Sendable] = [
        MeResponse(user: user, entitlements: entitlements), user, identity, entitlements, entitlements.credits["practice"]!, entitlements.trial!,
        subscription, decision, decision.actions[0],
        // The sign-in and refresh answers.
        AuthResponse(user: user, session: session), SignInResponse(user: user, session: session, created: true), SessionResponse(session: session),
        session, SignInAnswer<AuthResponse>.signedIn(AuthResponse(user: user, session: session)),
        SignInAnswer<SignInResponse>.signedIn(SignInResponse(user: user, session: session, created: false)),
        SignInAnswer<AuthResponse>.mfaRequired(challenge), SignInAnswer<SignInResponse>.mfaRequired(challenge), challenge, challenge.factors[0],
    ]
    static let bare: [any DirectJSON & Sendable] = [
        MeResponse(
            user: UserPayload(
                id: "u", email: nil, emailVerified: false, isAnonymous: true, displayName: nil, handle: nil, avatarURL: nil, createdAt: "c",
                onboardingComplete: false, identities: []),
            entitlements: EntitlementsPayload(planState: .guest, evaluatedAt: "e")),
        IdentityPayload(provider: .anonymous, email: nil, isPrivateRelay: false, createdAt: "c"),
        CreditBalance(remaining: -1, granted: .max, resetsAt: nil),
        SubscriptionInfo(productID: "p", status: "s", renewsAt: nil, expiresAt: nil, willRenew: false, source: nil, testPurchase: false),
        GateDecision(allowed: true, gate: nil, reasonCode: nil, message: nil, secondaryMessage: nil, actions: []),
        SessionPayload(accessToken: "", expiresIn: 0, expiresAt: -1, refreshToken: "", sessionID: ""),
        MFAChallengePayload(challengeID: "c", factors: [], expiresAt: "e"),
    ]

    static func bytes(_ value: some DirectJSON) throws -> (direct: [UInt8], encoded: [UInt8]) {
        (try CompactJSON.encode(value), try throughEncoder(value))
    }

    /// `CompactJSON`'s bytes through `Encoder`: all `T` is known to be here is `Encodable`.
    static func throughEncoder<T: Encodable>(_ value: T) throws -> [UInt8] { try CompactJSON.encode(value) }

    @Test func everyAnswerIsTheBytesEncoderGives() throws {
        for value in Self.full + Self.bare {
            let (direct, encoded) = try Self.bytes(value)
            #expect(
                Data(direct) == Data(encoded),
                "\(type(of: value)):\n\(String(decoding: direct, as: UTF8.self))\n!=\n\(String(decoding: encoded, as: UTF8.self))")
        }
    }

    /// The members of `value` that are nil.
    static func unset(_ value: Any) -> [String] {
        Mirror(reflecting: value).children.compactMap { child in
            let inner = Mirror(reflecting: child.value)
            return inner.displayStyle == .optional && inner.children.isEmpty ? child.label ?? "?" : nil
        }
    }

    /// The full samples leave no member unset, so a member a type gains and its writer lacks
    /// shows in the comparison above (a nil member is written as `null` or left out, and a
    /// writer that forgot it could match by chance).
    @Test func theFullSamplesSetEveryMember() {
        for value in Self.full {
            #expect(Self.unset(value).isEmpty, "\(type(of: value)): \(Self.unset(value))")
        }
        // The check finds a nil member.
        #expect(Self.unset(Self.bare[3]) == ["renewsAt", "expiresAt", "source"])
    }
}
