/// Which sessions a sign-out ends (`POST /v1/auth/logout` `scope`; the SDK's `signOut(scope:)`).
public struct SignOutScope: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// This device only (the default: a phone signing out leaves the person's other devices
    /// alone). supabase-swift's default is `.global`.
    public static let local: SignOutScope = "local"
    /// Every other device; this one stays signed in.
    public static let others: SignOutScope = "others"
    /// Every device, this one included.
    public static let global: SignOutScope = "global"

    /// Every scope the server accepts.
    public static let all: [SignOutScope] = [.local, .others, .global]
}
