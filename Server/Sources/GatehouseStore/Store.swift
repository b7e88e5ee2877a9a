/// All of Gatehouse's storage, behind one protocol with a SQLite and a PostgreSQL
/// implementation that pass the same contract suite.
public protocol GatehouseStore: UserStore, SigningKeyStore, SessionStore, ThrottleStore, AuditStore, SecretStore, OutboxStore,
    EmailTokenStore, JobStore, AccountStore, EntitlementStore, SubscriptionStore, ReplayStore, RetentionStore, UsageStore,
    PasskeyStore, MFAStore, ConsoleStore
{
    var dialect: SQLDialect { get }
    /// Runs `body` in one transaction against a store bound to it.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any GatehouseStore) async throws -> T) async throws -> T
    /// Throws `.unavailable` when the database does not answer promptly.
    func ping() async throws(StoreError)
}
