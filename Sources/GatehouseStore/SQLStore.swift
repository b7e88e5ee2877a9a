import Foundation
import GatehouseCore

/// The store over either database. The statements are portable SQL; where the dialects
/// differ, the statement is chosen by `dialect`.
public struct SQLStore: GatehouseStore {
    let executor: any SQLExecutor
    /// Set when this store runs on the whole database rather than inside a transaction.
    private let database: (any SQLDatabase)?

    /// True inside `transaction`.
    var isTransaction: Bool { database == nil }

    public init(database: any SQLDatabase) {
        self.executor = database
        self.database = database
    }

    private init(transaction executor: any SQLExecutor) {
        self.executor = executor
        self.database = nil
    }

    public var dialect: SQLDialect { executor.dialect }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any GatehouseStore) async throws -> T) async throws -> T {
        guard let database else {
            // Already inside a transaction: join it.
            return try await body(self)
        }
        return try await database.transaction { executor in
            try await body(SQLStore(transaction: executor))
        }
    }

    public func ping() async throws(StoreError) {
        if let database {
            try await database.ping()
        } else {
            try await executor.query("SELECT 1 AS ok")
        }
    }
}
