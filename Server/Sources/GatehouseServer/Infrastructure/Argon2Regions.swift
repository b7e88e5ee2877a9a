#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The working memory of Gatehouse's Argon2id, kept from one hash to the next (issue 61, step 9).
///
/// libsodium maps fresh memory for every hash, the kernel zeroes and faults in every page of it
/// (1,792 pages at 7 MiB), and it is unmapped when the hash ends: about 3 ms of a 13.6 ms login
/// in step 6's profile. Here a hash takes a free region at least as large as it needs, or maps
/// one, and gives it back when it ends; at most one region per hash running at once (the
/// hashing threads) is ever held.
///
/// A region nobody took between two sweeps is unmapped: `MemoryTrim` sweeps every
/// `GATEHOUSE_MEMORY_TRIM_SECONDS`, so after a burst the regions go back to the system within two
/// intervals (with the trim off they are kept). What a region holds after a hash is the last
/// pass's blocks: with two passes or more, testing a guessed password against them costs at
/// least a pass of the hash; after a one-pass hash the region is zeroed before it is kept.
final class Argon2Regions: Sendable {
    static let shared = Argon2Regions()

    private struct Region {
        /// The mapping's address (a number, so that the list is plain data under the lock).
        let address: UInt
        let bytes: Int
        /// Taken since the last sweep: kept by the next one.
        var taken: Bool
    }

    private let free = Mutex<[Region]>([])

    /// Runs `body` with a 64-byte aligned region of at least `bytes`, zeroed first if `wipe`
    /// after it (one-pass hashes).
    func withRegion<T>(bytes: Int, wipe: Bool, _ body: (UnsafeMutableRawPointer) throws -> T) throws -> T {
        let region = try take(bytes)
        guard let base = UnsafeMutableRawPointer(bitPattern: region.address) else { throw PasswordHasherError(message: "no region") }
        defer {
            if wipe { memset(base, 0, region.bytes) }
            free.withLock { $0.append(region) }
        }
        return try body(base)
    }

    private func take(_ bytes: Int) throws -> Region {
        let kept = free.withLock { regions -> Region? in
            guard let index = regions.indices.filter({ regions[$0].bytes >= bytes }).min(by: { regions[$0].bytes < regions[$1].bytes })
            else { return nil }
            var region = regions.remove(at: index)
            region.taken = true
            return region
        }
        if let kept { return kept }
        let mapped = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let mapped, mapped != MAP_FAILED else { throw PasswordHasherError(message: "no memory for \(bytes) bytes of Argon2id") }
        return Region(address: UInt(bitPattern: mapped), bytes: bytes, taken: true)
    }

    /// Unmaps every free region not taken since the last sweep; returns the bytes given back.
    @discardableResult
    func sweep() -> Int {
        let idle = free.withLock { regions -> [Region] in
            let idle = regions.filter { !$0.taken }
            regions = regions.filter(\.taken).map { Region(address: $0.address, bytes: $0.bytes, taken: false) }
            return idle
        }
        for region in idle { munmap(UnsafeMutableRawPointer(bitPattern: region.address), region.bytes) }
        return idle.reduce(0) { $0 + $1.bytes }
    }

    /// The bytes held in free regions (tests, the benchmark).
    var keptBytes: Int { free.withLock { $0.reduce(0) { $0 + $1.bytes } } }
}
