import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// A loaded account as ``Bench/loadAccount(_:into:hash:now:)`` answers it: what it wrote, and
/// the rows of its times it left for ``Bench/writeInTimeOrder(_:into:)``.
struct LoadedAccount: Sendable {
    var index: Int
    var user: User
    /// The provider of its sessions and audit rows.
    var provider: Provider
    /// Not yet written: the one still in use first, then the signed-out one.
    var sessions: [Session] = []
    /// The length of each session's chain of refresh tokens.
    var chains: [Int] = []
    /// When each of its audit rows happened.
    var audits: [Date] = []
    /// When it added a passkey, if it did.
    var passkeyAddedAt: Date?
}

extension Bench {
    /// Rows to a transaction when writing in time order.
    static let timeOrderBatch = 2_000

    /// One row to write, by the account it belongs to: which session, link or entry it is.
    struct Stamp: Sendable {
        var at: Double
        var account: Int32
        var number: UInt8
        var link: UInt8
    }

    /// Writes the loaded accounts' sessions, refresh tokens, audit rows and events, each table's
    /// rows in the order of their times, as a server appends them. Written account by account,
    /// the audit trail's order (and the other three's) followed the accounts, so that a sweep of
    /// old rows deleted a few rows from every page of the table; a real one deletes the first
    /// pages (BENCHMARKS.md, issue 65, step 11). On PostgreSQL a few batches are written at
    /// once, so the order holds to within those.
    static func writeInTimeOrder(_ accounts: [LoadedAccount], into store: SQLStore) async throws {
        let lanes = store.dialect == .postgres ? 4 : 1
        var sessions: [Stamp] = []
        var tokens: [Stamp] = []
        var audits: [Stamp] = []
        var events: [Stamp] = []
        for (position, account) in accounts.enumerated() {
            let owner = Int32(position)
            for (number, session) in account.sessions.enumerated() {
                sessions.append(Stamp(at: session.createdAt.timeIntervalSince1970, account: owner, number: UInt8(number), link: 0))
                for link in 0..<account.chains[number] {
                    let issued = issuedAt(account, number, link)
                    tokens.append(Stamp(at: issued.timeIntervalSince1970, account: owner, number: UInt8(number), link: UInt8(link)))
                }
            }
            for (entry, time) in account.audits.enumerated() {
                audits.append(Stamp(at: time.timeIntervalSince1970, account: owner, number: UInt8(entry), link: 0))
            }
            for (kind, time) in [account.user.createdAt, account.user.createdAt + 1, account.passkeyAddedAt].enumerated() {
                if let time { events.append(Stamp(at: time.timeIntervalSince1970, account: owner, number: UInt8(kind), link: 0)) }
            }
        }
        try await write(sessions, into: store, lanes: lanes) { stamp, tx in
            try await tx.insertSession(accounts[Int(stamp.account)].sessions[Int(stamp.number)])
        }
        try await write(tokens, into: store, lanes: lanes) { stamp, tx in
            let account = accounts[Int(stamp.account)]
            let (number, link) = (Int(stamp.number), Int(stamp.link))
            let issued = issuedAt(account, number, link)
            let rotated = link == account.chains[number] - 1 && number == 0 ? nil : issued + 60
            try await tx.insertRefreshToken(
                RefreshTokenRecord(
                    hash: Array(SHA256.hash(data: Data("load-\(account.index)-\(number)-\(link)".utf8))), sessionID: account.sessions[number].id,
                    issuedAt: issued, expiresAt: issued + 30 * 86_400, rotatedAt: rotated))
        }
        try await write(audits, into: store, lanes: lanes) { stamp, tx in
            let account = accounts[Int(stamp.account)]
            let failed = stamp.number % 6 == 5
            try await tx.insertAudit(
                AuditEvent(
                    createdAt: Date(timeIntervalSince1970: stamp.at), event: .login, outcome: failed ? .failure : .success, userID: account.user.id,
                    ipAddress: "10.\(account.index % 250).0.1", userAgent: "Loaded/1.0",
                    details: failed ? ["reason": "invalid credentials"] : ["provider": account.provider.rawValue]))
        }
        // The feed's order takes a lock until a transaction ends (PostgreSQL): one lane.
        try await write(events, into: store, lanes: 1) { stamp, tx in
            let account = accounts[Int(stamp.account)]
            let at = Date(timeIntervalSince1970: stamp.at)
            let event =
                switch stamp.number {
                case 0: DomainEvent(type: .userCreated, userID: account.user.id, createdAt: at)
                case 1: DomainEvent(type: .planChanged, userID: account.user.id, data: ["plan": "free"], createdAt: at)
                default: DomainEvent(type: .passkeyAdded, userID: account.user.id, createdAt: at)
                }
            try await tx.insertEvent(event)
        }
    }

    /// When link `link` of session `number`'s chain was issued: spread evenly from the session's
    /// opening to its last use.
    static func issuedAt(_ account: LoadedAccount, _ number: Int, _ link: Int) -> Date {
        let session = account.sessions[number]
        let span = session.lastActiveAt.timeIntervalSince(session.createdAt)
        return session.createdAt + span * Double(link) / Double(account.chains[number])
    }

    /// Writes `stamps` sorted by time, `timeOrderBatch` to a transaction, `lanes` at once.
    static func write(
        _ stamps: [Stamp], into store: SQLStore, lanes: Int,
        _ row: @escaping @Sendable (Stamp, any GatehouseStore) async throws -> Void
    ) async throws {
        let sorted = stamps.sorted { $0.at < $1.at }
        let batches = stride(from: 0, to: sorted.count, by: timeOrderBatch).map { sorted[$0..<min($0 + timeOrderBatch, sorted.count)] }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = batches.makeIterator()
            func add() {
                guard let batch = next.next() else { return }
                group.addTask {
                    try await store.transaction { tx in
                        for stamp in batch { try await row(stamp, tx) }
                    }
                }
            }
            for _ in 0..<lanes { add() }
            while try await group.next() != nil { add() }
        }
    }
}
