import Foundation
import Logging
import Synchronization

/// Writes one JSON object a line to standard error: `ts`, `level`, `label`, `msg`, then the
/// metadata. Metadata keys that name secrets are redacted as a last line of defence; code
/// never logs secrets in the first place.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let json: Bool

    public init(label: String, level: Logger.Level, json: Bool = true) {
        self.label = label
        self.logLevel = level
        self.json = json
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static let secretMarkers = ["password", "token", "secret", "authorization", "cookie", "key", "code"]

    static func isSecret(_ key: String) -> Bool {
        let lower = key.lowercased()
        return secretMarkers.contains { lower.contains($0) } && lower != "kid" && !lower.hasSuffix("_id")
            && !lower.hasSuffix("_count") && lower != "error_code" && lower != "status_code"
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let line: String
        if json {
            var object: [String: Any] = [
                "ts": (Date().timeIntervalSince1970 * 1000).rounded() / 1000, "level": event.level.rawValue, "label": label,
                "msg": event.message.description,
            ]
            for (key, value) in merged {
                object[key] = Self.isSecret(key) ? "<redacted>" : Self.plain(value)
            }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            line = String(decoding: data, as: UTF8.self)
        } else {
            let fields = merged.sorted { $0.key < $1.key }.map {
                "\($0.key)=\(Self.isSecret($0.key) ? "<redacted>" : "\($0.value)")"
            }
            line = "\(event.level.rawValue) \(label): \(event.message) \(fields.joined(separator: " "))"
        }
        standardErrorLock.withLock { _ in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }

    private static func plain(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): return text
        case .stringConvertible(let convertible): return convertible.description
        case .array(let values): return values.map(plain)
        case .dictionary(let values):
            return values.reduce(into: [String: Any]()) { result, entry in
                result[entry.key] = isSecret(entry.key) ? "<redacted>" : plain(entry.value)
            }
        }
    }
}

/// Keeps lines from different threads from interleaving.
private let standardErrorLock = Mutex<Void>(())
