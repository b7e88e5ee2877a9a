import Foundation
import GatehouseStore

// The database section of the configuration.
extension GatehouseConfig {
    /// The database URL, its pool and statements, the migration backup and the session cache.
    static func readDatabase(_ settings: inout Settings, into config: inout GatehouseConfig) {
        if let url = settings.string("database_url") {
            switch DatabaseURL.parse(url) {
            case .success(let database): config.database = database
            case .failure(let error): settings.problem("database_url", error.description)
            }
        }
        if let size = settings.int("database_pool_size", range: 2...500, meaning: "a number of connections from 2 to 500") {
            config.databasePoolSize = size
        }
        if let minimum = settings.int("database_pool_minimum", range: 0...500, meaning: "a number of connections from 0 to 500") {
            if minimum > config.databasePoolSize {
                settings.problem("database_pool_minimum", "\(minimum) is more than GATEHOUSE_DATABASE_POOL_SIZE (\(config.databasePoolSize))")
            } else {
                config.databasePoolMinimum = minimum
            }
        }
        if let prepared = settings.onOff("database_prepared_statements") { config.databasePreparedStatements = prepared }
        if let keep = settings.onOff("keep_migration_backup") { config.keepMigrationBackup = keep }
        if let cache = settings.onOff("session_cache") { config.sessionCache = cache }
    }
}
