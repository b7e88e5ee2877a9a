import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// Named prepared statements for the store's queries (issue 23). Sent as unnamed statements,
/// every query was parsed and planned by PostgreSQL on every call, which cost more than running
/// it (BENCHMARKS.md). A named statement is parsed once per connection and, after a few calls,
/// planned once too; each call then sends only Bind, Execute and Sync.
///
/// postgres-nio prepares a statement under its Swift type's static name and SQL, while the
/// store's SQL strings are values. So a fixed family of generic types stands for 512 slots,
/// and each slot is given one statement (its SQL and the kinds of its parameters) for the life
/// of the process, on first use. The kinds are part of the key because PostgreSQL fixes a
/// parameter's type when the statement is parsed: the same SQL called with a number once and
/// with NULL or text later gets a statement of its own for each. Once the slots are taken,
/// further statements go unnamed, as before.
enum PreparedStatements {
    static let capacity = 1 << SlotDepth.bits

    private struct Registry {
        var slots: [String: Int] = [:]
        var statements: [String] = []
        /// Each slot's parameter types, sent when it is prepared (as an unnamed statement's
        /// Parse sends them): PostgreSQL would otherwise guess them from the SQL.
        var types: [[PostgresDataType]] = []
        /// Statements PostgreSQL refused to keep prepared (a schema change under a running
        /// node): sent unnamed from then on.
        var unnamed: Set<String> = []
    }
    private static let registry = Mutex(Registry())
    /// Every slot's type, in slot order, built once.
    private static let slotTypes: [any PreparedSlot.Type] = {
        var types: [any PreparedSlot.Type] = [SlotRoot.self]
        for _ in 0..<SlotDepth.bits { types = types.flatMap { extend($0) } }
        return types
    }()

    private static func extend<Slot: PreparedSlot>(_: Slot.Type) -> [any PreparedSlot.Type] {
        [SlotStep<Slot, SlotZero>.self, SlotStep<Slot, SlotOne>.self]
    }

    /// The SQL (with `$n` placeholders) of a slot that has been given out.
    static func sql(at slot: Int) -> String { registry.withLock { $0.statements[slot] } }

    /// The parameter types of a slot that has been given out.
    static func types(at slot: Int) -> [PostgresDataType] { registry.withLock { $0.types[slot] } }

    /// A statement to send: its slot (nil: unnamed) and its SQL with `$n` placeholders, worked
    /// out once per statement.
    static func statement(_ sql: String, _ binds: [SQLValue]) -> (slot: Int?, sql: String) {
        let key = key(sql, binds)
        return registry.withLock { registry in
            if let slot = registry.slots[key] { return (slot, registry.statements[slot]) }
            let numbered = PostgresDatabase.numberPlaceholders(sql)
            guard registry.statements.count < capacity, Self.preparable(sql), !registry.unnamed.contains(key) else { return (nil, numbered) }
            registry.slots[key] = registry.statements.count
            registry.statements.append(numbered)
            registry.types.append(binds.map(\.postgresType))
            return (registry.statements.count - 1, numbered)
        }
    }

    /// Sends `sql` as unnamed from now on (PostgreSQL would not run its prepared form).
    static func stopPreparing(_ sql: String, _ binds: [SQLValue]) {
        let key = key(sql, binds)
        registry.withLock { registry in
            registry.unnamed.insert(key)
            registry.slots[key] = nil
        }
    }

    /// Only the statements that run again and again: not DDL, nor anything else a migration
    /// sends once.
    static func preparable(_ sql: String) -> Bool {
        let head = sql.utf8.drop(while: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }).prefix(6)
        let word = String(decoding: head, as: UTF8.self).uppercased()
        return ["SELECT", "INSERT", "UPDATE", "DELETE"].contains(word) || word.hasPrefix("WITH")
    }

    private static func key(_ sql: String, _ binds: [SQLValue]) -> String {
        var key = String()
        key.reserveCapacity(binds.count * 3 + 1 + sql.utf8.count)
        for bind in binds {
            key += String(bind.postgresType.rawValue)
            key += ","
        }
        key += "|"
        key += sql
        return key
    }

    /// Runs the statement in `slot` on `connection`.
    static func execute(
        slot: Int, bindings: PostgresBindings, on connection: PostgresConnection, logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow> {
        try await run(slotTypes[slot], bindings: bindings, on: connection, logger: logger)
    }

    private static func run<Slot: PreparedSlot>(
        _: Slot.Type, bindings: PostgresBindings, on connection: PostgresConnection, logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, PostgresRow> {
        try await connection.execute(SlotStatement<Slot>(bindings: bindings), logger: logger)
    }

    /// Whether `error` says the connection's prepared form of a statement cannot be used (its
    /// result columns changed under it, or it is gone), so the statement should go unnamed.
    static func isStalePreparation(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        if state == "26000" { return true }  // invalid_sql_statement_name
        return state == "0A000" && (error.serverInfo?[.message] ?? "").contains("cached plan")
    }
}

/// A slot number spelled as a type: `SlotStep<SlotStep<SlotRoot, SlotOne>, SlotZero>` is slot 2.
protocol PreparedSlot: SendableMetatype { static var number: Int { get } }
enum SlotDepth { static let bits = 9 }
protocol SlotBit { static var value: Int { get } }
enum SlotZero: SlotBit { static let value = 0 }
enum SlotOne: SlotBit { static let value = 1 }
enum SlotRoot: PreparedSlot { static let number = 0 }
enum SlotStep<Rest: PreparedSlot, Bit: SlotBit>: PreparedSlot {
    static var number: Int { Rest.number * 2 + Bit.value }
}

/// The statement of one slot, as postgres-nio wants it.
struct SlotStatement<Slot: PreparedSlot>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { "gatehouse_\(Slot.number)" }
    static var sql: String { PreparedStatements.sql(at: Slot.number) }
    static var bindingDataTypes: [PostgresDataType] { PreparedStatements.types(at: Slot.number) }
    let bindings: PostgresBindings
    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension SQLValue {
    /// The type postgres-nio gives the value when binding it (`.null`: PostgreSQL infers it).
    fileprivate var postgresType: PostgresDataType {
        switch self {
        case .null: .null
        case .integer: .int8
        case .real: .float8
        case .text: .text
        case .blob: .bytea
        }
    }
}
