import GatehouseCore
import Logging
import PostgresNIO

/// One leased connection inside `BEGIN … COMMIT`.
struct PostgresTransaction: SQLExecutor {
    let connection: PostgresConnection
    let logger: Logger
    let prepared: Bool
    var dialect: SQLDialect { .postgres }

    func query(_ sql: String, _ binds: [SQLValue]) async throws(StoreError) -> [SQLRow] {
        do {
            return try await PostgresDatabase.run(sql, binds, on: connection, logger: logger, prepared: prepared, inTransaction: true)
        } catch {
            throw PostgresDatabase.map(error)
        }
    }
}
