import Foundation
import GatehouseClient

/// A client clock the test moves: `sleep` returns at once and moves the clock by the time asked,
/// so backoffs are checked without waiting.
public final class TestClientClock: ClientClock, @unchecked Sendable {
    private let lock = NSLock()
    private var elapsed: TimeInterval = 0
    private var wall: Date
    private var sleeps: [TimeInterval] = []

    public init(now: Date = Date()) { wall = now }

    public func uptime() -> TimeInterval { lock.withLock { elapsed } }
    public func now() -> Date { lock.withLock { wall } }

    public func sleep(seconds: TimeInterval) async throws {
        lock.withLock {
            sleeps.append(seconds)
            elapsed += seconds
            wall += seconds
        }
        await Task.yield()
    }

    public func advance(by seconds: TimeInterval) {
        lock.withLock {
            elapsed += seconds
            wall += seconds
        }
    }

    /// The wall clock alone jumps (the person changed the date); uptime does not move.
    public func setWallClock(by seconds: TimeInterval) {
        lock.withLock { wall += seconds }
    }

    /// Every wait the SDK asked for, in order.
    public var waits: [TimeInterval] { lock.withLock { sleeps } }
}

/// Passes requests to a real transport and counts them by method and path, so a test can see
/// how many refreshes a burst of calls caused. Can be switched to act as if the network were
/// down (the request never leaves).
public final class CountingTransport: HTTPTransport, @unchecked Sendable {
    private let inner: any HTTPTransport
    private let lock = NSLock()
    private var counts: [String: Int] = [:]
    private var log: [String] = []
    private var answerLog: [String] = []
    private var down = false
    /// When set, a request to this path reaches the server but its answer is lost.
    private var loseAnswerTo: String?

    public init(_ inner: any HTTPTransport = URLSessionTransport()) { self.inner = inner }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let key = "\(request.method) \(request.url.path)"
        let (isDown, lose) = lock.withLock { () -> (Bool, Bool) in
            counts[key, default: 0] += 1
            log.append(key)
            return (down, loseAnswerTo == request.url.path)
        }
        if isDown { throw URLError(.notConnectedToInternet) }
        let response = try await inner.send(request)
        lock.withLock { answerLog.append("\(key) \(response.status)") }
        if lose { throw URLError(.networkConnectionLost) }
        return response
    }

    /// Each answer that came back, as `METHOD /path STATUS`, in order.
    public var answers: [String] { lock.withLock { answerLog } }

    public func count(_ key: String) -> Int { lock.withLock { counts[key] ?? 0 } }
    public var requests: [String] { lock.withLock { log } }
    public func reset() { lock.withLock { counts = [:]; log = []; answerLog = [] } }
    public func setNetworkDown(_ value: Bool) { lock.withLock { down = value } }
    public func loseAnswers(to path: String?) { lock.withLock { loseAnswerTo = path } }
}
