import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 59: a background job that runs out of attempts is never silent. A deleted account's
/// Stripe cancel that cannot reach Stripe (here, Stripe is not configured at all) fails its last
/// attempt: it is counted on `/metrics` (`gatehouse_jobs_failed_total`, `outcome="given_up"`),
/// listed on the console's overview with its kind, attempts and last error, and kept (its sealed
/// payload emptied); an attempt with more to come counts as `retrying` and is not listed.
@Suite struct JobsGivenUpTests {
    @Test(arguments: Backend.available)
    func aJobOutOfAttemptsIsCountedAndListed(_ backend: Backend) async throws {
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: { $0.metrics = true }) { client, config in
            let sealer = SecretSealer(secret: config.secretKey)
            func job(attempts: Int) throws -> Job {
                let sealed = try sealer.seal(try JSONEncoder().encode(["customer": "cus_given_up_\(attempts)"]))
                return Job(kind: JobKind.stripeCancel.rawValue, payload: sealed.bytes, encryption: sealed.encryption, attempts: attempts, createdAt: clock.now)
            }
            let (last, first) = (try job(attempts: 29), try job(attempts: 0))
            try await TestApp.withStore(config) { store in
                try await store.enqueueJob(last)
                try await store.enqueueJob(first)
            }
            let api = AuthClient(client: client)
            func samples() async throws -> [String: Double] { MetricsTests.samples(try await api.get("/metrics", token: nil).text) }
            let givenUp = #"gatehouse_jobs_failed_total{kind="stripe_cancel",outcome="given_up"}"#
            let retrying = #"gatehouse_jobs_failed_total{kind="stripe_cancel",outcome="retrying"}"#
            var counted = try await samples()
            for _ in 0..<600 where counted[givenUp] == nil || counted[retrying] == nil {
                try await Task.sleep(for: .milliseconds(50))
                counted = try await samples()
            }
            #expect(counted[givenUp] == 1 && counted[retrying] == 1, "\(counted.filter { $0.key.hasPrefix("gatehouse_jobs") })")

            let listed = try await TestApp.withStore(config) { try await $0.failedJobs(limit: 5) }
            #expect(listed.total == 1 && listed.latest.map(\.id) == [last.id] && listed.latest.first?.attempts == 30, "\(listed)")
            #expect(listed.latest.first?.lastError.contains("GATEHOUSE_STRIPE_SECRET_KEY") == true)

            let (_, console) = try await ConsoleTests.Console.signIn(client)
            let overview = try await #require(console).get("/admin").text
            #expect(overview.contains(#"data-jobs-failed="1""#) && overview.contains("<td>stripe_cancel</td><td>30</td>"), "\(overview)")
        }
    }
}
