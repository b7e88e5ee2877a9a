import CArgon2
import Foundation
import GatehouseCore
import GatehouseWire
import HummingbirdBcrypt
import Logging
import NIOCore
import NIOPosix
import GatehouseStore
import ServiceLifecycle
import Synchronization
import Tracing

/// Argon2id parameters (RFC 9106 / OWASP: m=19 MiB, t=2, p=1 by default).
public struct Argon2Parameters: Sendable, Equatable {
    /// Memory in KiB.
    public var memoryKiB: UInt32
    public var iterations: UInt32
    public var parallelism: UInt32

    public init(memoryKiB: UInt32 = 19_456, iterations: UInt32 = 2, parallelism: UInt32 = 1) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
    }

    /// The parameters a PHC string (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`) was made with.
    init?(phc: String) {
        guard case .success(let parsed) = Argon2idPHC.parse(phc), let m = UInt32(exactly: parsed.memoryKiB),
            let t = UInt32(exactly: parsed.iterations), let p = UInt32(exactly: parsed.parallelism)
        else { return nil }
        self.init(memoryKiB: m, iterations: t, parallelism: p)
    }
}

/// Hashes and verifies passwords off the event loops, on a thread pool of its own so that a
/// burst of logins cannot starve database calls either.
///
/// Hashes are PHC strings: Argon2id for everything Gatehouse makes (``Argon2Implementation``:
/// Gatehouse's own kernels); bcrypt (`$2a$`, `$2b$`,
/// `$2y$`) and Firebase's modified scrypt (`FirebaseScrypt`) are verified for accounts imported
/// from elsewhere and replaced at the next login.
public final class PasswordHasher: Sendable {
    public let parameters: Argon2Parameters
    private let pool: NIOThreadPool
    /// A hash of a random password, verified when an email is unknown so that the answer
    /// takes the same work as for a real account.
    private let decoy: String
    /// A decoy for each scheme of stored hashes besides Gatehouse's own Argon2id (bcrypt by
    /// cost, `$2a$12$`; Firebase scrypt by project, `$firebase-scrypt$<key id>`): every check also
    /// runs the decoy of each scheme but its own, so it costs the same whichever account, or
    /// none, is behind it (finding 5 of issue 40: an imported account answered in bcrypt's time,
    /// an unknown address in Argon2id's). Kept by `useSchemes(_:)`.
    private let schemeDecoys = Mutex<[String: String]>([:])
    /// The imported Firebase projects' parameters (nil: no Firebase hash verifies).
    private let firebaseKeys: FirebaseHashKeys?
    /// Told how long each hash (`hash`) or check (`verify`) took on its thread (the metrics).
    private let timed: (@Sendable (String, Duration) -> Void)?
    /// Each hash and check is a `password.hash` or `password.verify` span, from the queue for a
    /// thread to the answer (nil: traces are off).
    private let tracer: (any Tracer)?

    public convenience init(parameters: Argon2Parameters = Argon2Parameters(), threads: Int = System.coreCount) throws {
        try self.init(parameters: parameters, threads: threads, firebaseKeys: nil)
    }

    init(
        parameters: Argon2Parameters, threads: Int, firebaseKeys: FirebaseHashKeys?, timed: (@Sendable (String, Duration) -> Void)? = nil,
        tracer: (any Tracer)? = nil
    ) throws {
        self.tracer = tracer
        self.parameters = parameters
        self.firebaseKeys = firebaseKeys
        self.timed = timed
        // Made first: bad parameters fail here, before any thread is started.
        decoy = try Self.argon2id(Array(SecureRandom.uuid().uuidString.utf8), parameters: parameters)
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    /// Runs `body` on one of the pool's threads, which first lowers its own scheduling priority
    /// (`nice` ``hashingNiceness``, on Linux, where a thread's niceness is its own). A login's hash then
    /// takes what the event loops and the database's threads leave: when eight logins hash on
    /// both cores, a `GET /v1/me` still gets a core at once instead of queueing behind them
    /// (issue 47), and with nothing else to run the hashes take the cores as before.
    private func onHashingThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive {
            Self.lowerPriority()
            return try body()
        }
    }

    /// The niceness of a hashing thread (0 is the default, 19 the lowest priority).
    static let hashingNiceness: Int32 = 10

    /// Lowers the calling thread to ``hashingNiceness``, never raises it: a server started at a
    /// lower priority (`nice 15 gatehouse`) keeps its own for hashing too.
    private static func lowerPriority() {
        #if os(Linux)
        let thread = id_t(gatehouse_thread_id())
        errno = 0
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread)
        guard errno == 0, current < hashingNiceness else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread, hashingNiceness)
        #endif
    }

    /// A new Argon2id hash of `password`.
    public func hash(_ password: String) async throws -> String {
        let (parameters, timed) = (self.parameters, self.timed)
        return try await traced(tracer, "password.hash", attributes: ["gatehouse.hash.algorithm": .string("argon2id")]) {
            try await onHashingThread {
                let started = ContinuousClock.now
                defer { timed?("hash", ContinuousClock.now - started) }
                return try Self.argon2id(Array(password.utf8), parameters: parameters)
            }
        }
    }

    public struct Verification: Sendable {
        public var matches: Bool
        /// The hash is bcrypt or Argon2id under other parameters: store a fresh one.
        public var needsRehash: Bool
    }

    /// Checks `password` against `hash`; with no hash (unknown account) does the same work
    /// against a decoy and answers no. Input over `PasswordPolicy.maximumBytes` is refused
    /// before any hashing.
    public func verify(_ password: String, against hash: String?) async throws -> Verification {
        guard password.utf8.count <= PasswordPolicy.maximumBytes else {
            return Verification(matches: false, needsRehash: false)
        }
        let target = hash ?? decoy
        let own = Self.scheme(of: target)
        // The other schemes in use, in a fixed order: Argon2id's decoy stands in for Gatehouse's own.
        let others = (schemeDecoys.withLock { $0 }.merging([Self.argon2Scheme: decoy]) { kept, _ in kept })
            .filter { $0.key != own }.sorted { $0.key < $1.key }
        let attributes: SpanAttributes = [
            "gatehouse.hash.algorithm": .string(Self.algorithm(of: target)),
            "gatehouse.hash.decoys": .string(others.map(\.key).joined(separator: " ")),
        ]
        return try await traced(tracer, "password.verify", attributes: attributes) {
            let verification = try await check(password, against: target, known: hash != nil)
            for (_, other) in others { _ = try await check(password, against: other, known: false) }
            return verification
        }
    }

    static let argon2Scheme = "$argon2id$"

    /// What a hash's check costs by, read from its start (a whole hash or the store's prefix of
    /// one): Argon2id (Gatehouse's parameters; others are re-hashed at the next sign-in), bcrypt
    /// by its cost whatever the variant (`$2$12$`), Firebase scrypt by project.
    static func scheme(of hash: String) -> String {
        if hash.hasPrefix("$2") { return "$2$" + hash.dropFirst(4).prefix(2) + "$" }
        if hash.hasPrefix(FirebaseScrypt.prefix) {
            return FirebaseScrypt.prefix + hash.dropFirst(FirebaseScrypt.prefix.count).prefix { $0 != "$" }
        }
        return argon2Scheme
    }

    /// The schemes of the stored hashes (`UserStore.passwordHashSchemes`): a decoy is made
    /// for each new one (on the hashing threads), and one no longer in use is dropped.
    public func useSchemes(_ schemes: [String]) async throws {
        let known = schemeDecoys.withLock { $0 }
        var decoys: [String: String] = [:]
        for scheme in Set(schemes.map(Self.scheme(of:))) where scheme != Self.argon2Scheme {
            if let made = known[scheme] {
                decoys[scheme] = made
            } else if let made = try await makeDecoy(scheme) {
                decoys[scheme] = made
            }
        }
        schemeDecoys.withLock { $0 = decoys }
    }

    /// The scheme of one hash just stored (an operator's account made with a hash from
    /// elsewhere): a decoy for it now, without reading every stored hash again (a read of the
    /// whole `users` table per call).
    public func useScheme(of hash: String) async throws {
        let scheme = Self.scheme(of: hash)
        guard scheme != Self.argon2Scheme, schemeDecoys.withLock({ $0[scheme] }) == nil, let made = try await makeDecoy(scheme) else { return }
        schemeDecoys.withLock { $0[scheme] = $0[scheme] ?? made }
    }

    private func makeDecoy(_ scheme: String) async throws -> String? {
        let secret = SecureRandom.uuid().uuidString
        if scheme.hasPrefix(FirebaseScrypt.prefix) {
            return FirebaseScrypt.encode(keyID: String(scheme.dropFirst(FirebaseScrypt.prefix.count)), salt: randomBytes(16), hash: randomBytes(32))
        }
        // bcrypt within the bounds only: a stored hash over them is never run (the Argon2id decoy is).
        guard scheme.hasPrefix("$2$"), let cost = UInt8(scheme.dropFirst(3).prefix(2)), cost >= 4,
            Int(cost) <= PasswordHashBounds.maximumBcryptCost
        else { return nil }
        return try await onHashingThread { Bcrypt.hash(secret, cost: cost) }
    }

    private func check(_ password: String, against target: String, known: Bool) async throws -> Verification {
        let (parameters, timed) = (self.parameters, self.timed)
        if let firebase = FirebaseScrypt.decode(target) {
            guard let project = try await firebaseKeys?.parameters(keyID: firebase.keyID) else {
                return Verification(matches: false, needsRehash: false)
            }
            return try await onHashingThread {
                let started = ContinuousClock.now
                defer { timed?("verify", ContinuousClock.now - started) }
                let computed = try FirebaseScrypt.hash(Array(password.utf8), salt: firebase.salt, parameters: project)
                return Verification(matches: constantTimeEquals(computed, firebase.hash) && known, needsRehash: true)
            }
        }
        // A stored hash over the bounds (imported before they were checked) is never run: it
        // does not match, and costs what the decoy costs.
        let target = PasswordHashBounds.problem(target) == nil ? target : decoy
        let known = known && target != decoy
        return try await onHashingThread {
            let started = ContinuousClock.now
            defer { timed?("verify", ContinuousClock.now - started) }
            let bytes = Array(password.utf8)
            if target.hasPrefix("$argon2id$") {
                let matches = Argon2Implementation.serving.verify(bytes, against: target)
                return Verification(matches: matches && known, needsRehash: Argon2Parameters(phc: target) != parameters)
            }
            if target.hasPrefix("$2a$") || target.hasPrefix("$2b$") || target.hasPrefix("$2y$") {
                // bcrypt reads at most 72 bytes; an imported hash can only be checked its way.
                // The Argon2id hash that replaces it at this login covers the whole password.
                // `$2y$` (PHP's crypt_blowfish) is the same function as `$2b$`, which is the
                // name the bcrypt library reads (it refused `$2y$`: the fixtures of issue 61).
                let readable = target.hasPrefix("$2y$") ? "$2b$" + target.dropFirst(4) : target
                return Verification(matches: Bcrypt.verify(password, hash: readable) && known, needsRehash: true)
            }
            return Verification(matches: false, needsRehash: false)
        }
    }

    /// What made `hash`, for the span (never the hash itself).
    static func algorithm(of hash: String) -> String {
        if hash.hasPrefix("$argon2id$") { return "argon2id" }
        if hash.hasPrefix("$2") { return "bcrypt" }
        return FirebaseScrypt.decode(hash) == nil ? "unknown" : "firebase_scrypt"
    }

    /// Stops the pool's threads.
    public func shutdown() async {
        try? await pool.shutdownGracefully()
    }

    /// A new Argon2id hash, by the implementation the server uses (``Argon2Implementation/serving``).
    static func argon2id(_ password: [UInt8], parameters: Argon2Parameters) throws -> String {
        try Argon2Implementation.serving.hash(password, parameters: parameters)
    }
}

public struct PasswordHasherError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { "argon2: \(message)" }
}

/// Stops the hasher's threads when the application stops.
struct PasswordHasherLifecycle: Service {
    let hasher: PasswordHasher
    let store: any PasswordStore
    let logger: Logger

    /// How often the schemes of stored hashes are read again (an import on another node, or by
    /// the CLI, is decoyed here within this long).
    static let schemeRefreshSeconds = 300
    /// The time between two readings (``schemeRefreshSeconds``; a test's own).
    var interval: Duration = .seconds(Self.schemeRefreshSeconds)

    func run() async throws {
        await everyInterval(interval) {
            do {
                try await hasher.useSchemes(store.passwordHashSchemes())
            } catch {
                logger.backgroundWork(.passwordHashSchemes, endedBy: error)
            }
        }
        await hasher.shutdown()
    }
}
