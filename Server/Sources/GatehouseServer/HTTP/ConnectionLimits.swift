import Foundation
import Logging
import NIOCore
import Synchronization

/// Caps open connections in all and per client address (finding 10: 8,000 connections each
/// holding a nearly complete 64 KiB body took a gigabyte that stayed taken). A connection over
/// a cap is closed as soon as it opens, before it can buffer anything. The per-address cap
/// skips trusted proxies (every client behind them shares their address) and is lifted with the
/// other per-IP limits by `GATEHOUSE_IP_LIMITS=off`.
final class ConnectionLimiter: Sendable {
    let total: Int
    let perAddress: Int?
    let trustedProxies: [IPRange]
    private let state = Mutex(State())

    private struct State {
        var open = 0
        var byAddress: [String: Int] = [:]
        var refused = 0
    }

    init(total: Int, perAddress: Int?, trustedProxies: [String]) {
        self.total = total
        self.perAddress = perAddress
        self.trustedProxies = trustedProxies.compactMap(IPRange.init)
    }

    /// Counts a new connection from `address` in; false (nothing counted) when a cap is full.
    func admit(_ address: String?) -> Bool {
        let trusted = address.flatMap(IPAddress.init).map { ip in trustedProxies.contains { $0.contains(ip) } } ?? true
        let cap = trusted ? Int.max : (perAddress ?? Int.max)
        return state.withLock { state in
            let fromAddress = address.map { state.byAddress[$0, default: 0] } ?? 0
            guard state.open < total, fromAddress < cap else {
                state.refused += 1
                return false
            }
            state.open += 1
            if let address { state.byAddress[address] = fromAddress + 1 }
            return true
        }
    }

    func release(_ address: String?) {
        state.withLock { state in
            state.open -= 1
            if let address, let count = state.byAddress[address] {
                state.byAddress[address] = count > 1 ? count - 1 : nil
            }
        }
    }

    /// Open connections now, and connections refused since the start.
    var counts: (open: Int, refused: Int) { state.withLock { ($0.open, $0.refused) } }
}

/// The per-connection end of `ConnectionLimiter`, first in each connection's pipeline.
final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias InboundOut = NIOAny

    let limiter: ConnectionLimiter
    let logger: Logger

    init(limiter: ConnectionLimiter, logger: Logger) {
        self.limiter = limiter
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let address = context.channel.remoteAddress?.ipAddress
        if limiter.admit(address) {
            // Released when the connection closes, however it closes (the handler itself may
            // be removed from the pipeline earlier, or never).
            let limiter = self.limiter
            context.channel.closeFuture.whenComplete { _ in limiter.release(address) }
        } else {
            logger.debug("connection refused: too many open", metadata: ["total_cap": "\(limiter.total)"])
            context.close(promise: nil)
        }
    }
}

/// Requests whose client went away before the body arrived: counted and logged at debug only,
/// with a notice line at most once a minute giving the count (finding 10: each one was an
/// error line, 22,000 of them under a slow-body attack).
final class AbortedRequests: Sendable {
    private let state = Mutex<(count: Int, reported: Int, lastReport: ContinuousClock.Instant?)>((0, 0, nil))
    let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func record(_ error: any Error, logger requestLogger: Logger) {
        requestLogger.debug("request body not received: the client went away", metadata: ["cause": "\(error)"])
        let now = ContinuousClock.now
        let report: Int? = state.withLock { state in
            state.count += 1
            guard state.lastReport.map({ now - $0 >= .seconds(60) }) ?? true else { return nil }
            let since = state.count - state.reported
            state.reported = state.count
            state.lastReport = now
            return since
        }
        if let report {
            logger.notice("requests abandoned before their body arrived", metadata: ["count": "\(report)", "total": "\(count)"])
        }
    }

    var count: Int { state.withLock { $0.count } }
}
