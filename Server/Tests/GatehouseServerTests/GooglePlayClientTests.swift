import AsyncHTTPClient
import Foundation
import GatehouseCore
@testable import GatehouseServer
import Testing

/// Issue 59, Google Play as the ledger's next source, its first part: the client against the
/// Play stand-in (every request checked against the pinned discovery document). The service
/// account's JWT bearer grant gives the access token; `subscriptionsv2.get` is read into the
/// ledger's record, each of Google's states giving what the issue names (ACTIVE, IN_GRACE_PERIOD,
/// CANCELED until the line item's expiry; ON_HOLD, PAUSED, EXPIRED, PENDING nothing); a test
/// purchase is marked; the acknowledgement is sent once and a second is success; a token Google
/// forgot answers 410.
@Suite struct GooglePlayClientTests {
    @Test func purchasesReadAsGoogleHasThem() async throws {
        let standIn = try await GooglePlayStandIn()
        defer { standIn.stop() }
        let now = Date(timeIntervalSince1970: TimeInterval(Int(Date().timeIntervalSince1970)))
        try await standIn.setClock(now)
        let account = try GooglePlayServiceAccount(keyFile: try await standIn.serviceAccountKeyFile())
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = http.shutdown() }
        let client = GooglePlayClient(
            account: account, packageName: GooglePlayStandIn.packageName, apiURL: try #require(URL(string: standIn.url)), client: http,
            clock: ManualClock(now))
        let expiry = now + 30 * 86_400
        let cases: [(state: String, right: Bool, shown: String)] = [
            ("ACTIVE", true, "active"), ("IN_GRACE_PERIOD", true, "billing_grace"), ("CANCELED", true, "active"),
            ("ON_HOLD", false, "billing_retry"), ("PAUSED", false, "paused"), ("EXPIRED", false, "expired"), ("PENDING", false, "incomplete"),
        ]
        for item in cases {
            let token = try await standIn.purchase([
                "product_id": "premium_monthly", "expiry": Int(expiry.timeIntervalSince1970), "state": item.state,
                "obfuscated_account_id": "user-\(item.state)", "test_purchase": item.state == "ACTIVE",
            ])
            let resource = try await client.subscription(token)
            let record = try #require(GooglePlaySubscriptionRecord(purchaseToken: token, resource: resource, readAt: now))
            #expect(record.state.rawValue == item.state && record.productID == "premium_monthly", "\(record)")
            #expect(record.expiresAt == expiry && record.obfuscatedAccountID == "user-\(item.state)")
            #expect(record.testPurchase == (item.state == "ACTIVE") && !record.acknowledged)
            #expect((record.entitlement(at: now) == .paid) == item.right, "\(item.state)")
            #expect(record.entitlement(at: expiry + 1) == .notEntitled)
            #expect(record.info(at: now).status == item.shown && record.info(at: now).source == "google_play", "\(item.state)")
        }

        // An upgrade: the new token names the one it replaced.
        let old = try await standIn.purchase(["product_id": "premium_monthly", "expiry": Int(expiry.timeIntervalSince1970)])
        let new = try await standIn.purchase(["product_id": "nutritionist_monthly", "expiry": Int(expiry.timeIntervalSince1970), "linked_token": old])
        let upgraded = try #require(GooglePlaySubscriptionRecord(purchaseToken: new, resource: try await client.subscription(new), readAt: now))
        #expect(upgraded.linkedPurchaseToken == old && upgraded.productID == "nutritionist_monthly")

        // Acknowledged once; a second acknowledgement is success, not an error.
        try await client.acknowledge(productID: "nutritionist_monthly", purchaseToken: new)
        try await client.acknowledge(productID: "nutritionist_monthly", purchaseToken: new)
        #expect(try await standIn.acknowledgements().filter { $0["token"] as? String == new }.count == 2)
        #expect(try await client.subscription(new).acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")

        // A token Google forgot: 410, the purchase is finished.
        try await standIn.forget(old)
        await #expect { try await client.subscription(old) } throws: { ($0 as? GooglePlayAPIError)?.isGone == true }
        let violations = try await standIn.violations()
        #expect(violations.isEmpty, "\(violations)")
    }

    /// Google's times carry up to nine fractional digits.
    @Test func nanosecondTimesAreRead() throws {
        let date = try #require(GooglePlaySubscriptionRecord.time("2026-11-28T10:00:00.123456789Z"))
        #expect(abs(date.timeIntervalSince1970 - 1_795_860_000.123) < 0.001)
        #expect(GooglePlaySubscriptionRecord.time("2026-11-28T10:00:00Z")?.timeIntervalSince1970 == 1_795_860_000)
    }
}
