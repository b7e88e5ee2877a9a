import GatehouseTestSupport
import Testing

extension Trait where Self == ConditionTrait {
    /// Runs the test when `available` holds; otherwise skips it on a developer's machine and runs
    /// it in CI (`TestEnvironment.isCI`), where it fails on the missing `what` instead of
    /// skipping silently (issue 19).
    static func requires(_ available: Bool, _ what: String) -> Self {
        .enabled(if: available || TestEnvironment.isCI, "needs \(what)")
    }
}
