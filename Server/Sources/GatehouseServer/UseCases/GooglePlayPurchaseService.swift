import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Logging

/// Google Play subscriptions (issue 59), the ledger's fourth source: purchase tokens the Android
/// app posts and Google's real-time developer notifications pushed by Cloud Pub/Sub. Nothing a
/// client or a push says is stored as such: each is a reason to read the purchase from
/// `purchases.subscriptionsv2.get`, and Google's answer is what the ledger keeps.
struct GooglePlayPurchaseService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & EntitlementStore & PlanLedgerStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    /// `nil` when `GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT` or the preset's package name is not set.
    let client: GooglePlayClient?
    /// Checks a push's Google-signed OIDC token (Google's keys, as for Google id tokens).
    let pushVerifier: ProviderTokenVerifier
    let settings: GooglePlayAPISettings?
    let products: [String: ProductSettings]
    let entitlements: Entitlements
    let clock: any WallClock
    let logger: Logger

    /// The acknowledgement job's payload.
    struct Acknowledgement: Codable, Sendable {
        var token: String
        var productID: String
    }

    // MARK: Purchase

    /// `POST /v1/purchases/google-play`: the purchase as Google has it, bound to the signed-in
    /// account (the account its obfuscated account id names, when it names one), and the snapshot.
    func purchase(_ request: GooglePlayPurchaseRequest, user: User) async throws -> EntitlementsPayload {
        // A product the preset does not sell is refused whether or not Google Play is set up.
        guard products[request.productID] != nil else {
            throw invalid("'\(request.productID)' is not a product this app sells on Google Play.")
        }
        let client = try configured()
        guard !request.purchaseToken.isEmpty, request.purchaseToken.utf8.count <= 4_096 else { throw invalid("The purchase token is not one.") }
        guard let record = try await read(request.purchaseToken, with: client) else {
            throw invalid("Google Play does not know this purchase.")
        }
        guard record.productID == request.productID else { throw invalid("The purchase is for another product (\(record.productID)).") }
        // The app passes the account's id as the obfuscated account id: a purchase naming another
        // account is that account's (as the App Store's appAccountToken binds one).
        if let named = record.obfuscatedAccountID, named != user.id.description {
            throw try await PurchaseOwners.inUse(by: try await UserID(named).asyncUser(in: store), in: store)
        }
        try await unitOfWork.run { work in
            let tx = work.tx
            let before = try await entitlements.input(for: user, in: tx)
            let stored = try await tx.googlePlayPurchase(token: record.purchaseToken)
            var claimed = record
            claimed.userID = user.id
            // The token is the key: between accounts claiming one purchase together, the first
            // stored keeps it.
            if let owner = try await tx.saveGooglePlayPurchase(claimed), owner != user.id {
                throw try await PurchaseOwners.inUse(by: try await tx.user(id: owner), in: tx)
            }
            try await apply(work, record: claimed, owner: user.id, firstClaim: stored?.userID == nil, kind: .purchase)
            try await entitlements.recordPlanChange(work.narrowed { $0 }, user: user.id, before: before, source: .googlePlay)
        }
        return try await entitlements.snapshot(try await store.user(id: user.id) ?? user)
    }

    // MARK: Real-time developer notifications

    /// `POST /webhooks/google-play`: the push's OIDC token is checked before the body is read;
    /// each Pub/Sub `messageId` is applied once; the purchase it names is read again from Google.
    /// A failure to reach Google answers 503, so Pub/Sub delivers again.
    func push(body: [UInt8], authorization: String?) async throws {
        try await verifyPushToken(authorization)
        guard let push = try? JSONDecoder().decode(PubSubPush.self, from: Data(body)), !push.message.messageId.isEmpty,
            let data = push.message.data.flatMap({ Data(base64Encoded: $0) })
        else { throw GatehouseError.invalidRequest("The body is not a Pub/Sub push.") }
        let messageID = push.message.messageId
        if try await store.ledgerEventRecorded(source: .googlePlay, id: messageID) { return }
        let notification = try? JSONDecoder().decode(DeveloperNotification.self, from: data)
        var outcome = "ignored"
        var type = "unknown"
        var record: GooglePlaySubscriptionRecord?
        var voided: String?
        if let notification {
            if notification.packageName != settingsPackage {
                outcome = "other_package"
            } else if let subscription = notification.subscriptionNotification {
                type = "subscription.\(subscription.notificationType)"
                record = try await read(subscription.purchaseToken, with: try configured())
                outcome = record == nil ? "unknown_purchase" : "applied"
            } else if let void = notification.voidedPurchaseNotification {
                type = "voided"
                voided = void.purchaseToken
                outcome = "applied"
            } else if notification.testNotification != nil {
                type = "test"
            }
        }
        let kind = notification?.subscriptionNotification.flatMap { Self.purchaseKind[$0.notificationType] }
        let applied = try await unitOfWork.run { [record, voided, type, outcome] work -> Bool in
            guard try await work.tx.recordLedgerEvent(source: .googlePlay, id: messageID, type: type, outcome: outcome, at: work.now) else {
                return false  // A copy of this message was applied already.
            }
            if let voided { try await void(work, token: voided, at: work.now) }
            guard let record else { return true }
            let stored = try await work.tx.googlePlayPurchase(token: record.purchaseToken)
            // The stored owner, else the account the obfuscated id names, when it exists.
            var ownerID = stored?.userID
            if ownerID == nil, let named = record.obfuscatedAccountID.flatMap(UserID.init), try await work.tx.user(id: named) != nil {
                ownerID = named
            }
            var owned = record
            owned.userID = ownerID
            let before = try await ownerID.asyncUser(in: work.tx).asyncInput(entitlements, in: work.tx)
            // An account that claimed the token meanwhile keeps it (the key); its own claim recorded its change.
            guard let owner = try await work.tx.saveGooglePlayPurchase(owned), owner == ownerID, let before else { return true }
            owned.userID = owner
            try await apply(work, record: owned, owner: owner, firstClaim: stored?.userID == nil, kind: kind)
            try await entitlements.recordPlanChange(work.narrowed { $0 }, user: owner, before: before, source: .googlePlay)
            return true
        }
        logger.info("google play notification", metadata: ["type": "\(type)", "outcome": "\(applied ? outcome : "duplicate")"])
    }

    /// `purchase.succeeded`'s `kind` by `subscriptionNotification.notificationType`: bought
    /// (4, SUBSCRIPTION_PURCHASED; 7, SUBSCRIPTION_RESTARTED) and renewed (2, SUBSCRIPTION_RENEWED;
    /// 1, SUBSCRIPTION_RECOVERED from on hold).
    static let purchaseKind: [Int: PurchaseEvent.Kind] = [4: .purchase, 7: .purchase, 2: .renewal, 1: .renewal]

    // MARK: Shared steps

    /// What every read of a purchase does once it is stored for `owner`: the token it replaced
    /// stops giving the right, an unacknowledged purchase that gives the right is acknowledged by
    /// a job, and `purchase.succeeded` is recorded (for the first claim of a purchase, or what
    /// a notification names).
    private func apply(
        _ work: Work<Stores>, record: GooglePlaySubscriptionRecord, owner: UserID, firstClaim: Bool, kind: PurchaseEvent.Kind?
    ) async throws {
        if let linked = record.linkedPurchaseToken, linked != record.purchaseToken {
            try await work.tx.supersedeGooglePlayPurchase(linked, by: record.purchaseToken)
        }
        if !record.acknowledged, record.state.givesRight, record.stands {
            try await work.enqueueJob(kind: .googlePlayAcknowledge, payload: Acknowledgement(token: record.purchaseToken, productID: record.productID))
        }
        let event = PurchaseEvent(source: .googlePlay, kind: kind ?? .purchase, productID: record.productID, purchaseID: record.purchaseToken)
        if kind == .renewal || (firstClaim && record.state.givesRight) {
            try await work.record(event, user: owner)
        }
    }

    /// Ends a voided purchase's right (a refund or a chargeback), and records the plan change.
    private func void(_ work: Work<Stores>, token: String, at date: Date) async throws {
        guard let stored = try await work.tx.googlePlayPurchase(token: token), stored.voidedAt == nil else { return }
        let owner = try await stored.userID.asyncUser(in: work.tx)
        let before = try await owner.asyncInput(entitlements, in: work.tx)
        guard try await work.tx.voidGooglePlayPurchase(token, at: date), let owner, let before else { return }
        try await entitlements.recordPlanChange(work.narrowed { $0 }, user: owner.id, before: before, source: .googlePlay)
    }

    /// The daily sweep of `purchases.voidedpurchases.list`: every subscription voided in the last
    /// 29 days that Gatehouse holds ends. Google looks back 30 days at most and refuses a start
    /// older than that by its own clock: a day short of it keeps a clock a little behind Google's
    /// from being refused, and a daily sweep still reads each day many times. Answers how many ended now.
    @discardableResult
    func sweepVoided() async throws -> Int {
        let client = try configured()
        let voided = try await client.voidedSubscriptions(since: clock.now.addingTimeInterval(-29 * 86_400))
        var ended = 0
        for purchase in voided {
            guard let stored = try await store.googlePlayPurchase(token: purchase.purchaseToken), stored.voidedAt == nil else { continue }
            let at = purchase.voidedTimeMillis.flatMap(Int64.init).map(Date.init(unixMilliseconds:)) ?? clock.now
            try await unitOfWork.run { work in try await void(work, token: purchase.purchaseToken, at: at) }
            ended += 1
        }
        return ended
    }

    /// The acknowledgement job: Google refunds a purchase not acknowledged within three days.
    /// A purchase Google no longer knows (410) needs none.
    func acknowledge(_ job: Acknowledgement) async throws {
        let client = try configured()
        do {
            try await client.acknowledge(productID: job.productID, purchaseToken: job.token)
        } catch let error as GooglePlayAPIError where error.isGone {
            logger.notice("google play purchase gone before its acknowledgement", metadata: ["product": "\(job.productID)"])
            return
        }
        try await unitOfWork.run { work in try await work.tx.markGooglePlayPurchaseAcknowledged(job.token) }
    }

    /// The cancellation job of a deleted account's purchase: the developer's cancellation, so
    /// Google bills it no more (it is not restored). One that has ended already (400
    /// `invalidPurchaseState`) or that Google no longer knows (410) needs none.
    func cancel(token: String) async throws {
        let client = try configured()
        do {
            try await client.cancel(purchaseToken: token)
            logger.info("google play purchase cancelled for a deleted account")
        } catch let error as GooglePlayAPIError where error.isGone || (error.status == 400 && error.reason == "invalidPurchaseState") {
            return
        }
    }

    // MARK: Helpers

    private var settingsPackage: String { client?.packageName ?? "" }

    /// Google's state of `token`: `nil` when Google does not know it (400, 404); a token it no
    /// longer knows (410) is finished, kept as `EXPIRED` for one Gatehouse holds. Failing to reach
    /// Google is 503 `provider_unavailable`.
    private func read(_ token: String, with client: GooglePlayClient) async throws -> GooglePlaySubscriptionRecord? {
        let readAt = clock.now
        do {
            let resource = try await client.subscription(token)
            return GooglePlaySubscriptionRecord(purchaseToken: token, resource: resource, readAt: readAt)
        } catch let error as GooglePlayAPIError where error.isGone {
            guard var stored = try await store.googlePlayPurchase(token: token) else { return nil }
            stored.state = .expired
            stored.readAt = readAt
            return stored
        } catch let error as GooglePlayAPIError where [400, 404].contains(error.status) {
            logger.notice("google play refused a purchase token", metadata: ["status": "\(error.status)", "reason": "\(error.reason ?? "")"])
            return nil
        } catch {
            logger.warning("google play call failed", metadata: ["cause": "\(error)"])
            throw GatehouseError(status: 503, code: .providerUnavailable, message: "Google Play cannot be reached right now. Please try again.")
        }
    }

    /// The push's `Authorization: Bearer` token: signed by Google (its keys at
    /// `GATEHOUSE_GOOGLE_JWKS_URL`), issued by Google, for the configured audience and service
    /// account with a verified e-mail, not expired. Anything else is 401 `invalid_signature`,
    /// before the body is read.
    private func verifyPushToken(_ authorization: String?) async throws {
        let refused = GatehouseError(status: 401, code: .invalidSignature, message: "The push is not signed by the configured Pub/Sub subscription.")
        guard let settings, let authorization, authorization.lowercased().hasPrefix("bearer ") else { throw refused }
        let token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        let claims: ProviderClaims
        do {
            claims = try await pushVerifier.verifiedClaims(token)
        } catch let error as GatehouseError where error.status == 503 {
            throw error
        } catch {
            logger.notice("google play push refused", metadata: ["reason": "signature"])
            throw refused
        }
        let now = clock.now.timeIntervalSince1970
        guard pushVerifier.issuers.contains(claims.iss), claims.aud.contains(settings.pushAudience), claims.email == settings.pushServiceAccount,
            claims.emailVerified == true, claims.exp + pushVerifier.leeway > now, claims.iat <= now + pushVerifier.leeway
        else {
            logger.notice("google play push refused", metadata: ["reason": "claims"])
            throw refused
        }
    }

    private func configured() throws -> GooglePlayClient {
        guard let client else {
            throw GatehouseError(status: 503, code: .providerUnavailable, message: "Google Play purchases are not set up on this server.")
        }
        return client
    }

    private func invalid(_ message: String) -> GatehouseError {
        GatehouseError(status: 400, code: .invalidPurchase, message: message)
    }
}

/// Cloud Pub/Sub's push body: `{"message": {"data", "messageId", "attributes", "publishTime"}, "subscription"}`.
struct PubSubPush: Decodable {
    struct Message: Decodable {
        var data: String?
        var messageId: String
    }
    var message: Message
    var subscription: String?
}

/// Google Play's real-time developer notification (the push's `data`, base64 JSON).
struct DeveloperNotification: Decodable {
    struct Subscription: Decodable {
        var notificationType: Int
        var purchaseToken: String
    }
    struct Voided: Decodable {
        var purchaseToken: String
    }
    struct Test: Decodable {}
    var packageName: String
    var subscriptionNotification: Subscription?
    var voidedPurchaseNotification: Voided?
    var testNotification: Test?
}

extension Optional where Wrapped == UserID {
    /// The account this id names, if it still exists.
    fileprivate func asyncUser(in reader: any UserStore) async throws -> User? {
        guard let self else { return nil }
        return try await reader.user(id: self)
    }
}

extension Optional where Wrapped == User {
    /// The account's entitlement input before a change, read in the same transaction.
    fileprivate func asyncInput(_ entitlements: Entitlements, in tx: any EntitlementStore & PlanLedgerStore) async throws -> EntitlementInput? {
        guard let self else { return nil }
        return try await entitlements.input(for: self, in: tx)
    }
}

/// Reads Google's voided purchases daily (`GooglePlayPurchaseService.sweepVoided`): a refund or
/// chargeback whose notification was lost still ends the right within a day.
final class GooglePlayVoidedSweep: PeriodicSweep {
    let googlePlay: GooglePlayPurchaseService
    let logger: Logger
    let loop = WakeLoop(pollInterval: .seconds(86_400))

    init(googlePlay: GooglePlayPurchaseService, logger: Logger) {
        self.googlePlay = googlePlay
        self.logger = logger
    }

    func sweepOnce() async {
        do {
            let ended = try await googlePlay.sweepVoided()
            if ended > 0 { logger.info("google play voided purchases", metadata: ["ended": "\(ended)"]) }
        } catch {
            logger.backgroundWork(.voidedPurchasesSweep, endedBy: error)
        }
    }
}
