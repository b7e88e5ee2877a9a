/// Runs `body`, throwing `error` (and cancelling `body`) if it has not finished within `duration`.
public func withDeadline<T: Sendable>(
    _ duration: Duration, orThrow error: @escaping @autoclosure @Sendable () -> any Error,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: duration)
            throw error()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw error() }
        return first
    }
}
