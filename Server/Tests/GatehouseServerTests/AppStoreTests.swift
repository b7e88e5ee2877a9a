import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import X509

extension TestApp {
    /// Points the server at `appStore`'s root and bundle id.
    static func trusting(_ appStore: FakeAppStore, environments: [String] = ["Production"]) -> (inout GatehouseConfig) -> Void {
        let path = try! appStore.writeRoot(in: FileManager.default.temporaryDirectory)
        return { config in
            config.appStoreRootCerts = path
            config.appStoreBundleID = FakeAppStore.bundleID
            config.appStoreEnvironments = environments
        }
    }
}

/// App Store purchases and Server Notifications V2, verified against a root the tests made.
@Suite struct AppStoreTests {
    static let product = "com.handz.pro.monthly"

    static func purchase(_ api: AuthClient, _ jws: String, token: String?) async throws -> TestResponse {
        try await api.post("/v1/purchases/apple", #"{"signed_transaction": "\#(jws)"}"#, token: token)
    }

    static func notify(_ api: AuthClient, _ jws: String) async throws -> TestResponse {
        try await api.post("/v1/webhooks/apple/app-store", #"{"signedPayload": "\#(jws)"}"#)
    }

    static func snapshot(_ api: AuthClient, _ token: String) async throws -> EntitlementsPayload {
        try await api.get("/v1/entitlements", token: token).json(EntitlementsPayload.self)
    }

    /// The acceptance cases of JWS verification: only the good chain is taken.
    @Test(arguments: Backend.available)
    func jwsVerification(_ backend: Backend) async throws {
        let apple = try FakeAppStore()
        try await TestApp.run(backend, preset: "handz", adjust: TestApp.trusting(apple)) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("buyer@example.com")
            let token = account.session.accessToken
            let now = Date()
            func payload(_ id: String, signed: Date = now, environment: String = "Production", bundle: String = FakeAppStore.bundleID) -> [String: Any] {
                FakeAppStore.transaction(
                    id: id, original: "orig-\(id)", product: Self.product, user: account.user.id, purchased: now, expires: now + 30 * 86_400,
                    signed: signed, environment: environment, bundleID: bundle)
            }

            // Refusals first, so the account is still free when the good chain is posted.
            let impostor = try FakeAppStore()  // Same shape, a root the server does not pin.
            let noLeafMarker = try FakeAppStore(.init(leafMarker: false), sharingRootOf: apple)
            let noIntermediateMarker = try FakeAppStore(.init(intermediateMarker: false), sharingRootOf: apple)
            let expiredLeaf = try FakeAppStore(.init(leafValidity: -86_400 * 60 ... -86_400 * 30), sharingRootOf: apple)
            let good = try apple.sign(payload("1"))
            let parts = good.split(separator: ".").map(String.init)
            var tampered = payload("1")
            tampered["productId"] = "com.handz.pro.yearly.free"
            let tamperedJWS = "\(parts[0]).\(FakeAppStore.base64URL(try JSONSerialization.data(withJSONObject: tampered))).\(parts[2])"
            // Each refused for its own reason (the message says which check failed).
            let refused: [(String, String, String)] = [
                ("wrong root", try impostor.sign(payload("2")), "does not lead to a trusted root"),
                // The impostor's leaf and intermediate with the pinned root appended: the chain
                // does not build, whatever the x5c claims.
                ("own root swapped", try impostor.sign(payload("3"), chain: [impostor.leaf, impostor.intermediate, apple.root]),
                 "does not lead to a trusted root"),
                ("leaf without marker", try noLeafMarker.sign(payload("4")), "leaf lacks Apple's App Store marker"),
                ("intermediate without marker", try noIntermediateMarker.sign(payload("5")), "intermediate lacks Apple's marker"),
                ("expired at signedDate", try expiredLeaf.sign(payload("6")), "certificate chain rejected"),
                ("tampered payload", tamperedJWS, "bad signature"),
                ("alg HS256", try apple.sign(payload("7"), alg: "HS256"), "HS256 is not ES256"),
                ("alg none", "\(FakeAppStore.base64URL(Data(#"{"alg":"none"}"#.utf8))).\(parts[1]).", "none is not ES256"),
                ("two certificates", try apple.sign(payload("8"), chain: [apple.leaf, apple.intermediate]), "three certificates"),
                ("signed before the leaf was valid", try apple.sign(payload("9", signed: now - 86_400 * 400)), "certificate chain rejected"),
                ("another app", try apple.sign(payload("10", bundle: "com.example.other")), "another app"),
                ("sandbox", try apple.sign(payload("11", environment: "Sandbox")), "Sandbox environment"),
                ("not a JWS", "abc.def", "not a compact JWS"),
            ]
            for (name, jws, reason) in refused {
                let response = try await Self.purchase(api, jws, token: token)
                #expect(response.status == .badRequest && response.error?.code == .invalidSignedPayload, "\(name): \(response.text)")
                #expect(response.error?.message.contains(reason) == true, "\(name): \(response.text)")
            }
            #expect(try await Self.snapshot(api, token).planState == "free")

            let accepted = try await Self.purchase(api, good, token: token)
            #expect(accepted.status == .ok, "\(accepted.text)")
            let snapshot = try accepted.json(EntitlementsPayload.self)
            #expect(snapshot.planState == "pro" && snapshot.subscription?.productID == Self.product)
            #expect(snapshot.subscription?.status == "active" && snapshot.subscription?.willRenew == true)
        }
    }

    /// A subscription's life through notifications, on an injected clock: introductory trial,
    /// renewal, renewal turned off, billing grace, grace expiry, recovery, the pro_grace window
    /// when a renewal is late, refund; duplicates and late arrivals change nothing.
    @Test(arguments: Backend.available)
    func subscriptionLifecycle(_ backend: Backend) async throws {
        let apple = try FakeAppStore()
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "handz", clock: clock, adjust: TestApp.trusting(apple)) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("subscriber@example.com")
            let user = account.user.id
            // The clock moves by weeks: each look signs in afresh (access tokens live 15 minutes).
            func current() async throws -> EntitlementsPayload {
                let session = try await api.login("subscriber@example.com").json(AuthResponse.self)
                return try await Self.snapshot(api, session.session.accessToken)
            }
            let start = clock.now
            let day: TimeInterval = 86_400
            func tx(_ id: String, expires: Date, signed: Date, offer: Int? = nil, revoked: Date? = nil) -> [String: Any] {
                FakeAppStore.transaction(
                    id: id, original: "1000", product: Self.product, user: user, purchased: start, expires: expires, signed: signed,
                    offerType: offer, revoked: revoked)
            }
            func renewal(_ willRenew: Bool, signed: Date, graceEnds: Date? = nil) -> [String: Any] {
                FakeAppStore.renewal(original: "1000", product: Self.product, willRenew: willRenew, signed: signed, graceEnds: graceEnds)
            }
            func send(_ type: String, _ subtype: String? = nil, uuid: String = UUID().uuidString, signed: Date, _ transaction: [String: Any],
                      _ renewal: [String: Any]?) async throws {
                let response = try await Self.notify(
                    api, try apple.notification(type: type, subtype: subtype, uuid: uuid, signed: signed, transaction: transaction, renewal: renewal))
                #expect(response.status == .ok, "\(type): \(response.text)")
            }

            // SUBSCRIBED with the 7-day introductory offer: trial until it ends (decision 18).
            let trialEnd = start + 7 * day
            try await send("SUBSCRIBED", "INITIAL_BUY", signed: start, tx("t1", expires: trialEnd, signed: start, offer: 1), renewal(true, signed: start))
            var now = try await current()
            #expect(now.planState == "trial" && now.trial?.endsAt == trialEnd.rfc3339 && now.trial?.daysLeft == 6)
            #expect(now.subscription?.renewsAt == trialEnd.rfc3339)
            // The trial is used: the server trial cannot start again.
            #expect(try await api.post("/v1/trial/start", "{}", token: account.session.accessToken).error?.code == .trialAlreadyUsed)

            // DID_RENEW: pro for a month; a refreshed token says so, with when it ends unless renewed.
            clock.set(trialEnd - 60)
            let month = trialEnd + 30 * day
            try await send("DID_RENEW", signed: clock.now, tx("t2", expires: month, signed: clock.now), renewal(true, signed: clock.now))
            now = try await current()
            #expect(now.planState == "pro" && now.trial == nil && now.subscription?.expiresAt == month.rfc3339)
            let refreshed = try await api.refresh(account.session.refreshToken).json(SessionResponse.self)
            let claims = try jwtParts(refreshed.session.accessToken).claims
            #expect(claims["plan"] as? String == "pro")
            #expect(claims["plan_expires_at"] as? Int == Int(month.unixSeconds) + 72 * 3600)

            // Auto-renew turned off: still pro, will not renew.
            clock.advance(by: day)
            try await send("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", signed: clock.now, tx("t2", expires: month, signed: clock.now),
                           renewal(false, signed: clock.now))
            now = try await current()
            #expect(now.planState == "pro" && now.subscription?.willRenew == false && now.subscription?.renewsAt == nil)
            clock.advance(by: day)
            try await send("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", signed: clock.now, tx("t2", expires: month, signed: clock.now),
                           renewal(true, signed: clock.now))
            #expect(try await current().subscription?.willRenew == true)

            // Billing trouble with Apple's grace period: still pro, status billing_grace (decision 17).
            clock.set(month + 60)
            let graceEnd = month + 16 * day
            let graceUUID = UUID().uuidString
            try await send("DID_FAIL_TO_RENEW", "GRACE_PERIOD", uuid: graceUUID, signed: clock.now, tx("t2", expires: month, signed: clock.now),
                           renewal(true, signed: clock.now, graceEnds: graceEnd))
            now = try await current()
            #expect(now.planState == "pro" && now.subscription?.status == "billing_grace")

            // An EXPIRED signed before the grace notification arrives late: ignored.
            try await send("EXPIRED", "VOLUNTARY", signed: month - day, tx("t2", expires: month, signed: month - day), renewal(false, signed: month - day))
            #expect(try await current().planState == "pro")

            // GRACE_PERIOD_EXPIRED: free.
            clock.set(graceEnd + 60)
            try await send("GRACE_PERIOD_EXPIRED", signed: clock.now, tx("t2", expires: month, signed: clock.now), renewal(true, signed: clock.now))
            now = try await current()
            #expect(now.planState == "free" && now.subscription?.status == "billing_retry")

            // The same notification UUID again, even with other content: applied once only.
            try await send("DID_RENEW", "BILLING_RECOVERY", uuid: graceUUID, signed: clock.now + 1, tx("t3", expires: graceEnd + 30 * day, signed: clock.now + 1),
                           renewal(true, signed: clock.now + 1))
            #expect(try await current().planState == "free")

            // Billing recovered: pro again.
            let next = graceEnd + 30 * day
            try await send("DID_RENEW", "BILLING_RECOVERY", signed: clock.now + 2, tx("t3", expires: next, signed: clock.now + 2), renewal(true, signed: clock.now + 2))
            #expect(try await current().planState == "pro")

            // The renewal date passes with no word from Apple: pro_grace for 72 hours, then free.
            clock.set(next + 3600)
            #expect(try await current().planState == "pro_grace")
            clock.set(next + 73 * 3600)
            #expect(try await current().planState == "free")

            // The late DID_RENEW arrives; then a refund takes it away.
            let last = next + 30 * day
            try await send("DID_RENEW", signed: clock.now, tx("t4", expires: last, signed: clock.now), renewal(true, signed: clock.now))
            #expect(try await current().planState == "pro")
            clock.advance(by: day)
            try await send("REFUND", signed: clock.now, tx("t4", expires: last, signed: clock.now, revoked: clock.now), renewal(false, signed: clock.now))
            now = try await current()
            #expect(now.planState == "free" && now.subscription?.status == "refunded")

            let feed = try await AccountTests.events(api).events.filter { $0.userID == user }
            // One shape for every source's purchase (issue 59): the App Store's names its original
            // transaction as the purchase and the notification's transaction as the payment.
            let purchases = feed.filter { $0.type == "purchase.succeeded" }
            #expect(purchases.count == 4)
            #expect(purchases.allSatisfy { Set($0.data.keys) == ["source", "kind", "product_id", "purchase_id", "transaction_id"] }, "\(purchases)")
            #expect(purchases.allSatisfy { $0.data["source"] == "app_store" && $0.data["purchase_id"] == "1000" && $0.data["product_id"] == Self.product })
            #expect(purchases.first?.data["kind"] == "purchase" && purchases.first?.data["transaction_id"] == "t1")
            #expect(purchases.contains { $0.data["kind"] == "renewal" && $0.data["transaction_id"] == "t4" })
            #expect(feed.filter { $0.type == "trial.started" }.map { $0.data["source"] } == ["app_store"])
            let changes = feed.filter { $0.type == "plan.changed" }.map { "\($0.data["from"] ?? "")>\($0.data["to"] ?? "")" }
            // Changes Apple reports; a plan that ends by the clock (the grace period here) needs no
            // event to end, so GRACE_PERIOD_EXPIRED, arriving after it, finds the plan free already.
            #expect(changes == ["free>trial", "trial>pro", "pro_grace>pro", "free>pro", "free>pro", "pro>free"], "\(changes)")
        }
    }

    /// Restore without signing in (decision 21), a purchase another account owns, a
    /// notification before the app posts the purchase, and REVOKE (Family Sharing).
    @Test(arguments: Backend.available)
    func ownershipAndRestore(_ backend: Backend) async throws {
        let apple = try FakeAppStore()
        try await TestApp.run(backend, preset: "handz", adjust: TestApp.trusting(apple)) { client, _ in
            let api = AuthClient(client: client)
            let owner = try await api.account("bianca@example.com")
            let other = try await api.account("other@example.com")
            let now = Date()
            let jws = try apple.sign(
                FakeAppStore.transaction(
                    id: "9", original: "900", product: Self.product, user: owner.user.id, purchased: now, expires: now + 30 * 86_400, signed: now))

            // Nobody has claimed it yet, but its appAccountToken names Bianca's account.
            var hint = try await Self.purchase(api, jws, token: nil).json(RestoreHint.self)
            #expect(hint == RestoreHint(ownedByAccount: true, signInHint: "b\u{2022}\u{2022}\u{2022}@example.com"))
            #expect(try await Self.purchase(api, jws, token: owner.session.accessToken).status == .ok)
            hint = try await Self.purchase(api, jws, token: nil).json(RestoreHint.self)
            #expect(hint.ownedByAccount && hint.signInHint == "b\u{2022}\u{2022}\u{2022}@example.com")

            // Another account cannot take it.
            let taken = try await Self.purchase(api, jws, token: other.session.accessToken)
            #expect(taken.status == .conflict && taken.error?.code == .subscriptionInUse, "\(taken.text)")
            #expect(try await Self.snapshot(api, other.session.accessToken).planState == "free")

            // A purchase made without an account token and never seen: nobody owns it.
            let anonymous = try apple.sign(
                FakeAppStore.transaction(id: "10", original: "1000", product: Self.product, user: nil, purchased: now, expires: now + 86_400, signed: now))
            #expect(try await Self.purchase(api, anonymous, token: nil).json(RestoreHint.self) == RestoreHint(ownedByAccount: false, signInHint: nil))
            // The signed-in account that posts it owns it from then on.
            #expect(try await Self.purchase(api, anonymous, token: other.session.accessToken).json(EntitlementsPayload.self).planState == "pro")

            // A product this app does not sell is refused.
            let foreign = try apple.sign(
                FakeAppStore.transaction(id: "11", original: "1100", product: "com.other.coins", user: nil, purchased: now, expires: now + 86_400, signed: now))
            #expect(try await Self.purchase(api, foreign, token: owner.session.accessToken).error?.code == .invalidSignedPayload)

            // The notification comes first for a third purchase; the account gets it at once by
            // its appAccountToken. Then Family Sharing revokes it.
            let third = try await api.account("third@example.com")
            let transaction = FakeAppStore.transaction(
                id: "12", original: "1200", product: Self.product, user: third.user.id, purchased: now, expires: now + 30 * 86_400, signed: now)
            let renewal = FakeAppStore.renewal(original: "1200", product: Self.product, willRenew: true, signed: now)
            #expect(try await Self.notify(api, try apple.notification(type: "SUBSCRIBED", subtype: "RESUBSCRIBE", signed: now, transaction: transaction, renewal: renewal)).status == .ok)
            #expect(try await Self.snapshot(api, third.session.accessToken).planState == "pro")
            var revoked = transaction
            revoked["revocationDate"] = FakeAppStore.ms(now + 1)
            #expect(try await Self.notify(api, try apple.notification(type: "REVOKE", signed: now + 1, transaction: revoked, renewal: renewal)).status == .ok)
            let after = try await Self.snapshot(api, third.session.accessToken)
            #expect(after.planState == "free" && after.subscription?.status == "revoked")

            // A notification whose own signature fails is refused, so Apple retries it.
            let forged = try FakeAppStore().notification(type: "SUBSCRIBED", signed: now, transaction: transaction, renewal: renewal)
            #expect(try await Self.notify(api, forged).error?.code == .invalidSignedPayload)
            // TEST notifications are acknowledged.
            let test = try apple.sign(["notificationType": "TEST", "notificationUUID": UUID().uuidString, "version": "2.0",
                                       "signedDate": FakeAppStore.ms(now), "data": ["bundleId": FakeAppStore.bundleID, "environment": "Production"]])
            #expect(try await Self.notify(api, test).status == .ok)
        }
    }
}
