import Foundation
import GatehouseWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The attacker's way of sending requests "at the same moment" (the last-byte technique): open
/// one connection per request, send each request but its last byte, then release every last
/// byte in one tight loop, so the server receives them all within microseconds and works on
/// them together. Blocking sockets on a thread of their own (`onOwnThread`).
enum LastByteRace {
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        var error: ErrorPayload? { try? JSONDecoder().decode(ErrorBody.self, from: body).error }
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: body) as? [String: Any] }
    }

    /// Runs blocking socket work on a thread of its own: never on Swift's cooperative pool (two
    /// threads here) nor on dispatch's shared workers, which the in-process servers under test
    /// need to answer meanwhile (blocking them stalled the suite until the read time-outs).
    static func onOwnThread(_ work: @escaping @Sendable () -> Void) {
        Thread.detachNewThread(work)
    }

    /// A raw HTTP/1.1 request with a JSON body (`Connection: close` unless `keepAlive`).
    static func request(
        _ method: String, _ path: String, json: String? = nil, headers: [String: String] = [:], keepAlive: Bool = false
    ) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(keepAlive ? "" : "Connection: close\r\n")"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        let body = Array((json ?? "").utf8)
        if json != nil { head += "Content-Type: application/json\r\n" }
        head += "Content-Length: \(body.count)\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// Sends `requests` to 127.0.0.1:`port` released together; the answers in the same order.
    static func send(port: Int, _ requests: [[UInt8]]) async throws -> [Answer] {
        try await withCheckedThrowingContinuation { continuation in
            onOwnThread {
                continuation.resume(with: Result { try run(port: port, requests) })
            }
        }
    }

    /// Sends each request from `requests` `copies` times, all released together.
    static func send(port: Int, _ request: [UInt8], copies: Int) async throws -> [Answer] {
        try await send(port: port, Array(repeating: request, count: copies))
    }

    /// Sends `bytes` (a request cut short) and hangs up without reading the answer: a client
    /// that goes away before its body has arrived.
    static func hangUp(port: Int, after bytes: [UInt8]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            onOwnThread {
                continuation.resume(
                    with: Result {
                        let fd = try connectLoopback(port: port)
                        defer { close(fd) }
                        try writeAll(fd, bytes)
                        // Long enough for the server to have read the head and started on the body.
                        usleep(200_000)
                    })
            }
        }
    }

    /// One kept-alive connection, written in `steps`: each sends its bytes, waits its pause, and
    /// (`answers`) reads the answer that is due, by its `Content-Length`. The answers in order.
    static func keptAlive(port: Int, _ steps: [(bytes: [UInt8], pause: Duration, answers: Bool)]) async throws -> [Answer] {
        try await withCheckedThrowingContinuation { continuation in
            onOwnThread {
                continuation.resume(
                    with: Result {
                        let fd = try connectLoopback(port: port)
                        defer { close(fd) }
                        var answers: [Answer] = []
                        var pending = Data()
                        for step in steps {
                            try writeAll(fd, step.bytes)
                            let (seconds, attoseconds) = step.pause.components
                            usleep(useconds_t(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
                            if step.answers { answers.append(try readLengthDelimited(fd, buffered: &pending)) }
                        }
                        return answers
                    })
            }
        }
    }

    /// One answer from a kept-alive connection: its head, then `Content-Length` bytes of body.
    private static func readLengthDelimited(_ fd: Int32, buffered data: inout Data) throws -> Answer {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        func more() throws {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { throw RaceError("the connection ended before the answer did (recv: \(count), errno \(errno))") }
            data.append(contentsOf: buffer[0..<count])
        }
        while data.range(of: Data("\r\n\r\n".utf8)) == nil { try more() }
        let split = data.range(of: Data("\r\n\r\n".utf8))!
        let (status, headers) = head(data[..<split.lowerBound])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while data.count - (split.upperBound - data.startIndex) < length { try more() }
        let bodyStart = split.upperBound
        let body = Data(data[bodyStart..<(bodyStart + length)])
        data = Data(data[(bodyStart + length)...])
        return Answer(status: status, headers: headers, body: body)
    }

    /// An answer's status and its headers (names lowercased), from the bytes before its blank line.
    private static func head(_ bytes: Data) -> (status: Int, headers: [String: String]) {
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }

    /// Requests sent but their last byte and held there: the server has read their heads and
    /// all but the end of their bodies. `release()` sends the last bytes together and reads the
    /// answers, in order.
    final class Held: Sendable {
        private let sockets: [Int32]
        private let lastBytes: [[UInt8]]

        fileprivate init(sockets: [Int32], lastBytes: [[UInt8]]) {
            self.sockets = sockets
            self.lastBytes = lastBytes
        }

        func release() async throws -> [Answer] {
            let (sockets, lastBytes) = (self.sockets, self.lastBytes)
            return try await withCheckedThrowingContinuation { continuation in
                onOwnThread {
                    continuation.resume(
                        with: Result {
                            defer { for fd in sockets { close(fd) } }
                            for (fd, last) in zip(sockets, lastBytes) { try writeAll(fd, last) }
                            return try sockets.map { try readAnswer($0) }
                        })
                }
            }
        }
    }

    /// Sends each of `requests` but its last byte to 127.0.0.1:`port` and holds them there.
    static func hold(port: Int, _ requests: [[UInt8]]) async throws -> Held {
        try await withCheckedThrowingContinuation { continuation in
            onOwnThread {
                continuation.resume(
                    with: Result {
                        var sockets: [Int32] = []
                        do {
                            for request in requests {
                                let fd = try connectLoopback(port: port)
                                sockets.append(fd)
                                try writeAll(fd, request.dropLast())
                            }
                        } catch {
                            for fd in sockets { close(fd) }
                            throw error
                        }
                        // A moment for the server to read every head and every body but its last byte.
                        usleep(200_000)
                        return Held(sockets: sockets, lastBytes: requests.map { Array($0.suffix(1)) })
                    })
            }
        }
    }

    private static func run(port: Int, _ requests: [[UInt8]]) throws -> [Answer] {
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for request in requests {
            let fd = try connectLoopback(port: port)
            sockets.append(fd)
            try writeAll(fd, request.dropLast())
        }
        // A moment for the server to read every head and every body but its last byte.
        usleep(200_000)
        for (fd, request) in zip(sockets, requests) {
            try writeAll(fd, request.suffix(1))
        }
        return try sockets.map { try readAnswer($0) }
    }

    /// A blocking TCP connection to 127.0.0.1:`port` (reads time out after 60 s).
    static func connectLoopback(port: Int) throws -> Int32 {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw RaceError("socket() failed: \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw RaceError("connect() failed: \(errno)")
        }
        return fd
    }

    private static func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>) throws {
        var remaining = Array(bytes)[...]
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw RaceError("send() failed: \(errno)") }
            remaining = remaining.dropFirst(written)
        }
    }

    /// Reads until the server closes (`Connection: close`), then splits head and body.
    private static func readAnswer(_ fd: Int32) throws -> Answer {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                data.append(contentsOf: buffer[0..<count])
            } else if count == 0 || errno == ECONNRESET {
                break
            } else {
                throw RaceError("recv() failed: \(errno)")
            }
        }
        guard let split = data.range(of: Data("\r\n\r\n".utf8)) else { return Answer(status: 0, headers: [:], body: data) }
        let (status, headers) = head(data[..<split.lowerBound])
        var body = Data(data[split.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        return Answer(status: status, headers: headers, body: body)
    }

    private static func dechunk(_ data: Data) -> Data {
        var out = Data()
        var rest = data[...]
        while let lineEnd = rest.range(of: Data("\r\n".utf8)) {
            let size = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16) ?? 0
            if size == 0 { break }
            let start = lineEnd.upperBound
            let end = rest.index(start, offsetBy: size, limitedBy: rest.endIndex) ?? rest.endIndex
            out.append(rest[start..<end])
            rest = rest[min(rest.endIndex, rest.index(end, offsetBy: 2, limitedBy: rest.endIndex) ?? rest.endIndex)...]
        }
        return out
    }

    struct RaceError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

/// Tests that put a burst of parallel requests on one database row take turns with each other:
/// on two cores, two such bursts at once push each other's requests past the pool's 10 s lease
/// wait (503), which proves nothing about either limit.
actor BurstGate {
    static let shared = BurstGate()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` when no other burst is running.
    static func exclusive<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await shared.enter()
        do {
            let result = try await body()
            await shared.leave()
            return result
        } catch {
            await shared.leave()
            throw error
        }
    }

    private func enter() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func leave() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
