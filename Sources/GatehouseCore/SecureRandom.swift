import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Random bytes from the system's CSPRNG, a buffer filled by one call (to 256 bytes): the tokens,
/// salts, secrets and random ids Gatehouse draws itself come from here (keys and nonces that
/// swift-crypto makes come from its own generator).
///
/// `UInt8.random(using: &SystemRandomNumberGenerator())` made one `getrandom(2)` per byte (32 for a
/// refresh token), and Foundation's `UUID()` opens, reads and closes `/dev/urandom` for every id on
/// Linux (BENCHMARKS.md, issue 61 step 17).
public enum SecureRandom {
    /// Fills `buffer` from the system's CSPRNG: `getentropy` (one `getrandom(2)` for up to 256
    /// bytes) on Linux, `arc4random_buf` on Apple platforms. It never returns fewer bytes than
    /// asked: a failure stops the process, as the standard library's generator does.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let start = buffer.baseAddress else { return }
        #if canImport(Darwin)
            arc4random_buf(start, buffer.count)
        #else
            var at = 0
            while at < buffer.count {
                let length = min(256, buffer.count - at)
                guard getentropy(start + at, length) == 0 else { fatalError("getentropy failed: errno \(errno)") }
                at += length
            }
        #endif
    }

    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// A random (version 4, variant 1) UUID, as `UUID()` makes them.
    public static func uuid() -> UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { buffer in
            fill(buffer)
            buffer[6] = buffer[6] & 0x0f | 0x40
            buffer[8] = buffer[8] & 0x3f | 0x80
        }
        return UUID(uuid: bytes)
    }

    /// A version 7 UUID (RFC 9562): its first 48 bits are `time` in Unix milliseconds, then the
    /// version and 74 random bits. Rows appended as time passes (audit rows, events, sessions,
    /// jobs, mail and SMS, credit spends) take these, so each new key goes to the end of its
    /// table's id index, on the few pages a cache keeps, instead of a page anywhere in it
    /// (BENCHMARKS.md, issue 65 step 29). Accounts keep random ids: a user id never tells when
    /// the account was made.
    public static func timeOrderedUUID(at time: Date) -> UUID {
        let milliseconds = UInt64(max(0, min((time.timeIntervalSince1970 * 1000).rounded(.down), Double((1 << 48) - 1))))
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { buffer in
            fill(UnsafeMutableRawBufferPointer(rebasing: buffer[6...]))
            for index in 0..<6 { buffer[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(index))) }
            buffer[6] = buffer[6] & 0x0f | 0x70
            buffer[8] = buffer[8] & 0x3f | 0x80
        }
        return UUID(uuid: bytes)
    }
}
