import Foundation

/// The synchronous auth hooks of the contract's "Next wave 3": the moments of an account's life
/// at which the app's own endpoint decides. Closed: a new hook does not compile until its
/// settings, its payload and its doors have decided about it.
public enum HookName: String, CaseIterable, Sendable {
    case beforeUserCreated = "BEFORE_USER_CREATED"
    case beforeSignIn = "BEFORE_SIGN_IN"
    case customAccessToken = "CUSTOM_ACCESS_TOKEN"
    case sendEmail = "SEND_EMAIL"

    /// The settings' stem: `hook_before_user_created` (`GATEHOUSE_HOOK_BEFORE_USER_CREATED_URL`…).
    var settingStem: String { "hook_" + rawValue.lowercased() }

    /// The label of its metric, span and audit rows.
    var label: String { rawValue.lowercased() }

    /// Whether the hook is called while a person's request waits (and so may fail open): not
    /// `SEND_EMAIL`, which is delivered from the outbox and tried again as SMTP is.
    var isCalledInRequest: Bool {
        switch self {
        case .beforeUserCreated, .beforeSignIn, .customAccessToken: true
        case .sendEmail: false
        }
    }

    /// Whether Supabase Auth has a hook for this moment (`FORMAT=supabase` speaks its payloads).
    var hasSupabaseFormat: Bool {
        switch self {
        case .beforeUserCreated, .customAccessToken, .sendEmail: true
        case .beforeSignIn: false
        }
    }
}

/// Which payloads a hook speaks: Gatehouse's own, or Supabase Auth's for the hooks it has.
public enum HookFormat: String, Sendable, CaseIterable {
    case gatehouse
    case supabase
}

/// One configured hook: where it is, its Standard Webhooks secret's bytes, and what a failure
/// does.
public struct HookEndpoint: Sendable, Equatable {
    public var url: URL
    public var secret: [UInt8]
    /// `GATEHOUSE_HOOK_<NAME>_FAIL_OPEN`: a failed or timed-out call lets the request through
    /// (audited) instead of answering 503 `hook_unavailable`.
    public var failOpen: Bool
    public var format: HookFormat

    /// A hook at `url` signed with `secret` (`whsec_` and base64); nil when it is not one.
    public init?(url: URL, secret: String, failOpen: Bool = false, format: HookFormat = .gatehouse) {
        guard let bytes = HookCaller.secretBytes(secret) else { return nil }
        self.init(url: url, secret: bytes, failOpen: failOpen, format: format)
    }

    init(url: URL, secret: [UInt8], failOpen: Bool, format: HookFormat) {
        (self.url, self.secret, self.failOpen, self.format) = (url, secret, failOpen, format)
    }
}

/// Every hook's settings, read together at start (`GatehouseConfig.hooks(_:)`).
public struct HookSettings: Sendable, Equatable {
    public var endpoints: [HookName: HookEndpoint] = [:]
    /// `GATEHOUSE_HOOK_TIMEOUT_MS`: the whole call, connection to the answer's last byte.
    public var timeout: Duration = .milliseconds(defaultTimeoutMilliseconds)

    static let defaultTimeoutMilliseconds = 5_000

    public init() {}

    public subscript(_ name: HookName) -> HookEndpoint? {
        get { endpoints[name] }
        set { endpoints[name] = newValue }
    }
}

extension GatehouseConfig {
    /// The settings a file may hold for the hooks, each also `GATEHOUSE_<NAME>`.
    static let hookKeys: [String] = ["hook_timeout_ms"] + HookName.allCases.flatMap { hook in
        ["url", "secret", "fail_open", "format"].map { "\(hook.settingStem)_\($0)" }
    }

    /// The hooks' secrets, never shown in a configuration dump.
    static let hookSecretKeys: Set<String> = Set(HookName.allCases.map { "\($0.settingStem)_secret" })

    /// Reads every hook's section: a URL needs its `whsec_` secret, a setting without its URL
    /// is a mistake, and `FORMAT=supabase` only where Supabase has the hook.
    static func hooks(_ settings: inout Settings) -> HookSettings {
        var hooks = HookSettings()
        if let milliseconds = settings.int("hook_timeout_ms", range: 100...30_000, meaning: "a number of milliseconds from 100 to 30000") {
            hooks.timeout = .milliseconds(milliseconds)
        }
        for hook in HookName.allCases {
            let stem = hook.settingStem
            let url = settings.url("\(stem)_url", schemes: ["http", "https"])
            let secret = settings.string("\(stem)_secret")
            let failOpen = settings.onOff("\(stem)_fail_open")
            let formatText = settings.string("\(stem)_format")
            guard let url else {
                for rest in ["secret", "fail_open", "format"] where settings.has("\(stem)_\(rest)") && !settings.has("\(stem)_url") {
                    settings.problem("\(stem)_\(rest)", "is set without \(Settings.variable("\(stem)_url"))")
                }
                continue
            }
            guard let secret else {
                settings.problem("\(stem)_secret", "is required when \(Settings.variable("\(stem)_url")) is set")
                continue
            }
            guard let bytes = HookCaller.secretBytes(secret) else {
                settings.problem("\(stem)_secret", "must be a Standard Webhooks secret: whsec_ and at least 16 bytes in base64")
                continue
            }
            var format = HookFormat.gatehouse
            if let formatText {
                guard let named = HookFormat(rawValue: formatText.lowercased()) else {
                    settings.problem("\(stem)_format", "'\(formatText)' is not gatehouse or supabase")
                    continue
                }
                if named == .supabase, !hook.hasSupabaseFormat {
                    settings.problem("\(stem)_format", "supabase has no such hook; only gatehouse is spoken here")
                    continue
                }
                format = named
            }
            if failOpen == true, !hook.isCalledInRequest {
                settings.problem("\(stem)_fail_open", "\(hook.rawValue) is delivered from the outbox and tried again; it has no fail-open")
                continue
            }
            hooks.endpoints[hook] = HookEndpoint(url: url, secret: bytes, failOpen: failOpen ?? false, format: format)
        }
        return hooks
    }
}
