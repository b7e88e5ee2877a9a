import Logging

/// Where the data lives: `sqlite:///absolute/path`, `sqlite://relative/path` or `postgres://…`.
public enum DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    /// Parses a URL, or says in one sentence what is wrong with it.
    public static func parse(_ string: String) -> Result<DatabaseURL, DatabaseURLError> {
        if string.hasPrefix("sqlite:") {
            var path = String(string.dropFirst("sqlite:".count))
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            guard !path.isEmpty else { return .failure(.init("a sqlite URL needs a file path, e.g. sqlite:///var/lib/gatehouse.sqlite")) }
            return .success(.sqlite(path: path))
        }
        if string.hasPrefix("postgres://") || string.hasPrefix("postgresql://") {
            do {
                _ = try PostgresURL(string)
            } catch {
                if case .unavailable(let why) = error { return .failure(.init(why)) }
                return .failure(.init("\(error)"))
            }
            return .success(.postgres(url: string))
        }
        return .failure(.init("must start with sqlite:// or postgres://"))
    }

    /// Safe to log: no password.
    public var description: String {
        switch self {
        case .sqlite(let path): return "sqlite://\(path)"
        case .postgres(let url): return (try? PostgresURL(url).redacted) ?? "postgres://"
        }
    }

    /// Opens the database. For PostgreSQL, a pool of at most `poolSize` connections, `poolMinimum` of
    /// them kept open when idle, that still has to be run (see `PostgresDatabase`), sending named
    /// prepared statements unless `preparedStatements` is false.
    public func open(
        logger: Logger, poolSize: Int = 20, poolMinimum: Int = 0, preparedStatements: Bool = true, observer: (any PoolObserver)? = nil
    ) async throws(StoreError) -> any SQLDatabase {
        switch self {
        case .sqlite(let path):
            return try await SQLiteDatabase.open(path: path, logger: logger, observer: observer)
        case .postgres(let url):
            return try PostgresDatabase(
                url: url, maximumConnections: poolSize, minimumConnections: poolMinimum, preparedStatements: preparedStatements,
                logger: logger, observer: observer)
        }
    }
}

public struct DatabaseURLError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
