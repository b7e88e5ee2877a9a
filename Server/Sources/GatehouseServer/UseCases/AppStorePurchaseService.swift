import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Logging

/// App Store subscriptions: StoreKit 2 transactions the app posts and App Store Server
/// Notifications V2, each verified (`AppStoreJWSVerifier`), checked against the app's bundle id
/// and environments, and applied to the account's subscription in `signedDate` order.
struct AppStorePurchaseService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & EntitlementStore & PlanLedgerStore

    let store: Stores
    let verifier: AppStoreJWSVerifier
    /// `nil` when the server has no bundle id: every App Store payload is refused.
    let bundleID: String?
    let environments: [String]
    let entitlements: Entitlements
    let engine: EntitlementEngine
    let unitOfWork: UnitOfWork<Stores>
    let clock: any WallClock
    let logger: Logger

    enum Outcome: Sendable {
        case snapshot(EntitlementsPayload)
        case hint(RestoreHint)
    }

    private var settings: EntitlementSettings { engine.settings }

    /// `POST /v1/purchases/apple`. Signed in: the purchase becomes the account's (unless another
    /// account owns it) and the answer is the new snapshot. Not signed in: who owns it, masked.
    func purchase(_ request: ApplePurchaseRequest, user: User?) async throws -> Outcome {
        let transaction = try await verifiedTransaction(request.signedTransaction)
        guard settings.products[transaction.productId] != nil else {
            throw invalid("'\(transaction.productId)' is not a product this app sells.")
        }
        guard let user else { return .hint(try await restoreHint(for: transaction)) }

        let now = clock.now
        let signedAt = Date(unixMilliseconds: transaction.signedDate)
        try await unitOfWork.run { work in
            let tx = work.tx
            let current = try await tx.subscription(originalTransactionID: transaction.originalTransactionId, forUpdate: true)
            if let owner = try await owner(of: transaction, stored: current, in: tx), owner.id != user.id {
                throw try await PurchaseOwners.inUse(by: owner, in: tx)
            }
            let before = try await entitlements.input(for: user, in: tx)
            var record =
                if let current, current.signedAt > signedAt {
                    // Newer facts are stored already: keep them, only claim the subscription.
                    current
                } else {
                    SubscriptionRecord.applying(
                        type: nil, subtype: nil, transaction: transaction, renewal: nil, signedAt: signedAt, to: current, now: now)
                }
            record.userID = user.id
            // The key decides between accounts claiming a new purchase together (finding 4 of
            // issue 40: the row read above did not exist yet, so nothing was locked).
            if let owner = try await tx.saveSubscription(record), owner != user.id {
                guard let stored = try await tx.user(id: owner) else { throw StoreError.conflict("the purchase's owner went away") }
                throw try await PurchaseOwners.inUse(by: stored, in: tx)
            }
            try await noteIntroductoryTrial(work, record: record, transaction: transaction, user: user)
            let isNew = current?.userID == nil || (record.expiresAt ?? .distantPast) > (current?.expiresAt ?? .distantPast)
            if isNew {
                try await work.record(Self.purchaseEvent(.purchase, transaction), user: user.id)
            }
            try await entitlements.recordPlanChange(work.narrowed { $0 }, user: user.id, before: before, source: .appStore)
        }
        return .snapshot(try await entitlements.snapshot(try await store.user(id: user.id) ?? user))
    }

    /// `POST /v1/webhooks/apple/app-store`: each notification applied once (by
    /// `notificationUUID`); a notification signed before the stored facts changes nothing.
    func notification(_ request: AppStoreNotificationRequest) async throws {
        let (payload, signedAt) = try await verified(request.signedPayload)
        guard let notification = try? JSONDecoder().decode(AppStoreNotification.self, from: payload) else {
            throw invalid("The notification payload is not App Store Server Notifications V2.")
        }
        try check(bundleID: notification.data?.bundleId, environment: notification.data?.environment)
        var transaction: AppStoreTransaction?
        var renewal: AppStoreRenewal?
        if let signed = notification.data?.signedTransactionInfo {
            transaction = try await verifiedTransaction(signed)
        }
        if let signed = notification.data?.signedRenewalInfo {
            let (body, _) = try await verified(signed)
            guard let decoded = try? JSONDecoder().decode(AppStoreRenewal.self, from: body) else {
                throw invalid("The renewal information is not readable.")
            }
            try check(bundleID: nil, environment: decoded.environment)
            guard decoded.originalTransactionId == transaction?.originalTransactionId else {
                throw invalid("The renewal information is for another subscription.")
            }
            renewal = decoded
        }

        let now = clock.now
        try await unitOfWork.run { [transaction, renewal] work in
            let tx = work.tx
            guard
                try await tx.recordLedgerEvent(
                    source: .appStore, id: notification.notificationUUID, type: notification.notificationType, outcome: "applied", at: now)
            else {
                return  // Apple retried one we have applied.
            }
            guard let transaction else { return }  // TEST, or nothing about a subscription.
            let current = try await tx.subscription(originalTransactionID: transaction.originalTransactionId, forUpdate: true)
            if let current, current.signedAt > signedAt { return }  // Late: newer facts are stored.
            let owner = try await owner(of: transaction, stored: current, in: tx)
            var before: EntitlementInput?
            if let owner { before = try await entitlements.input(for: owner, in: tx) }
            var record = SubscriptionRecord.applying(
                type: notification.notificationType, subtype: notification.subtype, statusHint: notification.data?.status,
                transaction: transaction, renewal: renewal, signedAt: signedAt, to: current, now: now)
            record.userID = owner?.id
            try await tx.saveSubscription(record)
            guard let owner, let before else { return }
            try await noteIntroductoryTrial(work, record: record, transaction: transaction, user: owner)
            if let kind = Self.purchaseKind[notification.notificationType] {
                try await work.record(Self.purchaseEvent(kind, transaction), user: owner.id)
            }
            try await entitlements.recordPlanChange(work.narrowed { $0 }, user: owner.id, before: before, source: .appStore)
        }
        logger.info(
            "app store notification", metadata: ["type": "\(notification.notificationType)", "subtype": "\(notification.subtype ?? "")"])
    }

    // MARK: Helpers

    /// The notifications that record `purchase.succeeded`: a subscription bought (first or
    /// again: `SUBSCRIBED`'s `INITIAL_BUY` and `RESUBSCRIBE`) and a period renewed.
    static let purchaseKind: [String: PurchaseEvent.Kind] = ["SUBSCRIBED": .purchase, "DID_RENEW": .renewal]

    static func purchaseEvent(_ kind: PurchaseEvent.Kind, _ transaction: AppStoreTransaction) -> PurchaseEvent {
        PurchaseEvent(
            source: .appStore, kind: kind, productID: transaction.productId, purchaseID: transaction.originalTransactionId,
            transactionID: transaction.transactionId)
    }

    /// An introductory offer is the account's one trial (decision 18): `/v1/trial/start` answers
    /// 409 afterwards, and `trial.started` is recorded once.
    private func noteIntroductoryTrial(
        _ work: Work<Stores>, record: SubscriptionRecord, transaction: AppStoreTransaction, user: User
    ) async throws {
        guard record.introductory, user.trialStartedAt == nil else { return }
        let start = transaction.purchaseDate.map(Date.init(unixMilliseconds:)) ?? work.now
        if try await work.tx.startTrial(user.id, at: start) {
            try await work.record(.trialStarted, user: user.id, data: ["source": "app_store", "product_id": transaction.productId])
        }
    }

    /// The account a purchase belongs to: the stored owner, else the `appAccountToken` the app
    /// set to its user id when that account exists.
    private func owner(of transaction: AppStoreTransaction, stored: SubscriptionRecord?, in tx: any UserStore) async throws -> User? {
        if let id = stored?.userID, let user = try await tx.user(id: id) { return user }
        guard let token = transaction.appAccountToken, let id = UserID(token) else { return nil }
        return try await tx.user(id: id)
    }

    private func restoreHint(for transaction: AppStoreTransaction) async throws -> RestoreHint {
        let stored = try await store.subscription(originalTransactionID: transaction.originalTransactionId, forUpdate: false)
        guard let owner = try await owner(of: transaction, stored: stored, in: store) else {
            return RestoreHint(ownedByAccount: false, signInHint: nil)
        }
        return RestoreHint(ownedByAccount: true, signInHint: try await PurchaseOwners.hint(for: owner, in: store))
    }

    private func verified(_ jws: String) async throws -> (Data, Date) {
        do {
            return try await verifier.verify(jws)
        } catch let failure as AppStoreJWSVerifier.Failure {
            logger.notice("app store payload refused", metadata: ["reason": "\(failure.description)"])
            throw invalid("The signed payload could not be verified: \(failure.description).")
        }
    }

    private func verifiedTransaction(_ jws: String) async throws -> AppStoreTransaction {
        let (payload, _) = try await verified(jws)
        guard let transaction = try? JSONDecoder().decode(AppStoreTransaction.self, from: payload) else {
            throw invalid("The signed transaction is not a StoreKit 2 transaction.")
        }
        try check(bundleID: transaction.bundleId, environment: transaction.environment)
        return transaction
    }

    private func check(bundleID found: String?, environment: String?) throws {
        guard let bundleID else { throw invalid("This server takes no App Store purchases: GATEHOUSE_APPSTORE_BUNDLE_ID is not set.") }
        if let found, found != bundleID { throw invalid("The payload is for another app (\(found)).") }
        if let environment, !environments.contains(environment) {
            throw invalid("Purchases from the \(environment) environment are not accepted here.")
        }
    }

    private func invalid(_ message: String) -> GatehouseError {
        GatehouseError(status: 400, code: .invalidSignedPayload, message: message)
    }
}
