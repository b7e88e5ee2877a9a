import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every distinct statement the store sends, written once to the file that
/// `GATEHOUSE_STATEMENT_LOG` names: its dialect, its SQL and the kinds of its parameters, never
/// a value. The plan check (`Server/Tests/plans/check.py`, issue 65) explains each one on an
/// empty schema and reports every scan of a table that grows with accounts or time. Off (one
/// comparison per statement) unless the variable is set.
enum StatementLog {
    static let path = ProcessInfo.processInfo.environment["GATEHOUSE_STATEMENT_LOG"].flatMap { $0.isEmpty ? nil : $0 }
    private static let seen = Mutex(Set<String>())

    /// Notes `sql` with its parameters' kinds, the first time this process sends it.
    static func note(_ dialect: SQLDialect, _ sql: String, _ binds: [SQLValue]) {
        guard let path else { return }
        let kinds = binds.map(\.kindName)
        let key = "\(dialect.rawValue)|\(kinds.joined(separator: ","))|\(sql)"
        guard seen.withLock({ $0.insert(key).inserted }) else { return }
        let entry: [String: Any] = ["dialect": dialect.rawValue, "sql": sql, "kinds": kinds]
        guard var line = try? JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys]) else { return }
        line.append(UInt8(ascii: "\n"))
        // One write(2) per line with O_APPEND: lines of processes writing at once never interleave.
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

extension SQLValue {
    /// The value's kind, as the statement log names it.
    var kindName: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}
