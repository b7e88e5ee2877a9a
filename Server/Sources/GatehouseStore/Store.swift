/// All of Gatehouse's storage, behind one protocol with a SQLite and a PostgreSQL
/// implementation that pass the same contract suite.
public protocol GatehouseStore: UserStore, PasswordStore, IdentityStore, ProfileStore, IdempotencyStore, EventStore,
    SessionStore, SessionAssuranceStore, RefreshTokenStore, ThrottleStore, SigningKeyStore, SecretStore, AuditStore, OutboxStore,
    EmailTokenStore, JobStore, EntitlementStore, AppStoreSubscriptionStore, ReplayStore, RetentionStore, UsageStore, PasskeyStore,
    MFAFactorStore, RecoveryCodeStore, MFAChallengeStore, ConsoleStore, PhoneStore, PlanLedgerStore, OAuthClientStore, OAuthGrantStore,
    AccountPageStore
{
    var dialect: SQLDialect { get }
    /// Runs `body` in one transaction against a store bound to it.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any GatehouseStore) async throws -> T) async throws -> T
    /// Throws `.unavailable` when the database does not answer promptly.
    func ping() async throws(StoreError)
}

/// Transactions over the whole store seen through a narrower composition: what infrastructure
/// outside a use case (the key ring's rotation, the mail worker's composing) declared it
/// writes. Built by a composition root, which alone sees the whole store.
public struct Transactions<Stores: Sendable>: Sendable {
    private let store: any GatehouseStore
    private let narrow: @Sendable (any GatehouseStore) -> Stores

    /// `narrow` is the upcast, usually `{ $0 }` with `Stores` inferred from where it goes.
    public init(_ store: any GatehouseStore, narrow: @escaping @Sendable (any GatehouseStore) -> Stores) {
        self.store = store
        self.narrow = narrow
    }

    /// Runs `body` in one transaction.
    public func run<T: Sendable>(_ body: @escaping @Sendable (Stores) async throws -> T) async throws -> T {
        try await store.transaction { [narrow] tx in try await body(narrow(tx)) }
    }
}
