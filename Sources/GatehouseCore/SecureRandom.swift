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
}
