import Foundation

/// Reads what a time-ordered id (`SecureRandom.timeOrderedUUID(at:)`) begins with.
public enum TimeOrderedIDs {
    /// The Unix milliseconds a version 7 (variant 1) id begins with, or nil for any other id.
    public static func milliseconds(_ uuid: UUID) -> UInt64? {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            guard bytes[6] >> 4 == 7, bytes[8] >> 6 == 2 else { return nil }
            return (0..<6).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[$1]) }
        }
    }

    /// `time` in whole Unix milliseconds, as an id made at it begins with.
    public static func milliseconds(_ time: Date) -> UInt64 { UInt64((time.timeIntervalSince1970 * 1000).rounded(.down)) }
}
