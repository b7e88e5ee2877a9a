import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The lock the processes sharing one ``TokenStore`` (an app, its widget, its share extension)
/// take around a refresh: the one holding it reads the stored session, refreshes it and writes
/// the rotated token back; the others wait, then read the new token instead of presenting the
/// old one (which the server would take for a stolen token and end the session everywhere).
///
/// A lock is a lease: it lapses on its own `lease` seconds after it was taken, so a process
/// killed or suspended while holding it holds up the others for that long at most.
public protocol SessionLock: Sendable {
    /// Seconds the lock stays taken unless released first.
    var lease: TimeInterval { get }
    /// Takes the lock for `owner` when it is free, lapsed or already `owner`'s, and answers
    /// whether `owner` holds it now. Never waits for another holder.
    func tryAcquire(owner: String) throws -> Bool
    /// Gives the lock back, if `owner` holds it.
    func release(owner: String) throws
    /// Runs `body` while no other process runs the body of its own `exclusively`, whoever holds
    /// the lease: the SDK reads and writes the store in it, so a write never lands on a token
    /// another process has just replaced. Brief: never held across a request.
    func exclusively<T>(_ body: () throws -> T) throws -> T
}

/// Thrown by a ``TokenStore`` whose session cannot be read or written *yet*: a Keychain item
/// before the device's first unlock (`errSecInteractionNotAllowed`, during iOS prewarming, for
/// example). The SDK keeps the state ``AuthState/restoring`` (or the session it has) and reads
/// again later; it never signs the person out for it.
public protocol TokenStoreAvailabilityError: Error {
    /// True when the store may answer later; false for a store that is broken for good.
    var isTemporarilyUnavailable: Bool { get }
}

/// A ``SessionLock`` in a file that every sharing process can open: in the app group's container
/// on iOS (`FileManager.default.containerURL(forSecurityApplicationGroupIdentifier:)`), anywhere
/// on Linux and macOS.
///
/// The file holds the lease (its holder and until when). It is changed under `flock(2)`, held
/// only for that read and write, never across a request: iOS ends a suspended process that holds
/// a file lock in a shared container, and a lease cannot outlive its holder's death by more than
/// its length.
public struct FileSessionLock: SessionLock {
    /// The lock's file; its folder is created when the lock is first taken.
    public let url: URL
    /// Seconds a taken lock lasts unless released: longer than a refresh takes.
    public let lease: TimeInterval

    /// A lock in the file at `url`.
    ///
    /// - Parameters:
    ///   - url: The lock's file, in a folder every sharing process can write.
    ///   - lease: How long a holder keeps the lock at most; 30 seconds by default (a refresh
    ///     gives up after `URLSessionTransport`'s 20-second timeout).
    public init(url: URL, lease: TimeInterval = 30) {
        self.url = url
        self.lease = lease
    }

    /// Takes the lease for `owner` when it is free, lapsed or `owner`'s already; throws when the
    /// lock's file cannot be opened.
    public func tryAcquire(owner: String) throws -> Bool {
        try withLease { held in
            let now = ProcessInfo.processInfo.systemUptime
            // A lease ending further ahead than one lease was taken before the machine restarted
            // (uptime began again): it has lapsed.
            if let held, held.owner != owner, now < held.until, held.until - now <= lease { return (held, false) }
            return (Lease(owner: owner, until: now + lease), true)
        }
    }

    /// Frees the lease when `owner` holds it; throws when the lock's file cannot be opened.
    public func release(owner: String) throws {
        try withLease { held in held?.owner == owner ? (nil, ()) : (held, ()) }
    }

    /// Runs `body` under an exclusive `flock(2)` on the lock's file, whoever holds the lease.
    public func exclusively<T>(_ body: () throws -> T) throws -> T {
        let fd = try locked()
        defer { unlock(fd) }
        return try body()
    }

    /// Who holds the lock and until when, on the machine's uptime (the same clock for every
    /// process, unlike the wall clock, which may be changed).
    struct Lease: Equatable {
        var owner: String
        var until: TimeInterval

        init(owner: String, until: TimeInterval) {
            self.owner = owner
            self.until = until
        }

        /// Reads `<owner> <until>`; nil for an empty or unreadable file (a free lock).
        init?(_ text: String) {
            let parts = text.split(separator: " ")
            guard parts.count == 2, let until = TimeInterval(parts[1]) else { return nil }
            self.init(owner: String(parts[0]), until: until)
        }

        var text: String { "\(owner) \(until)" }
    }

    /// The lock's file, open and under an exclusive `flock(2)`.
    private func locked() throws -> Int32 {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                close(fd)
                throw CocoaError(.fileLocking)
            }
        }
        return fd
    }

    private func unlock(_ fd: Int32) {
        flock(fd, LOCK_UN)
        close(fd)
    }

    /// Reads the lease and writes what `body` makes of it, all under an exclusive `flock(2)`.
    private func withLease<T>(_ body: (Lease?) -> (Lease?, T)) throws -> T {
        let fd = try locked()
        defer { unlock(fd) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = pread(fd, &bytes, bytes.count, 0)
        guard count >= 0 else { throw CocoaError(.fileReadUnknown) }
        let held = Lease(String(decoding: bytes[0..<count], as: UTF8.self))
        let (next, result) = body(held)
        if next != held {
            let text = Array((next?.text ?? "").utf8)
            guard ftruncate(fd, 0) == 0, pwrite(fd, text, text.count, 0) == text.count else { throw CocoaError(.fileWriteUnknown) }
        }
        return result
    }
}
