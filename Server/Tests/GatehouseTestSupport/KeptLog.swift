import Logging
import Synchronization

/// A logger whose lines a test reads back: each event at `level` or above becomes the line `line`
/// makes of it, or none when it answers nil.
public final class KeptLog: Sendable {
    private let kept = Mutex<[String]>([])
    private let level: Logger.Level
    private let line: @Sendable (LogEvent) -> String?

    public init(level: Logger.Level = .info, line: @escaping @Sendable (LogEvent) -> String?) {
        self.level = level
        self.line = line
    }

    /// The lines kept so far, in order.
    public var lines: [String] { kept.withLock { $0 } }

    public func logger(label: String) -> Logger {
        Logger(label: label) { _ in Handler(log: self, logLevel: self.level) }
    }

    struct Handler: LogHandler {
        let log: KeptLog
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?
        var logLevel: Logger.Level

        init(log: KeptLog, logLevel: Logger.Level) {
            self.log = log
            self.logLevel = logLevel
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard let line = log.line(event) else { return }
            log.kept.withLock { $0.append(line) }
        }
    }
}
