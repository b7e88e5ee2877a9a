import Foundation
import GatehouseWire
import Observation

/// A subscription purchase as the paywall shows it (Handz CH08 §8, Hannah): the app runs
/// StoreKit and reports what it answered; the model uploads a verified transaction, keeps the
/// states StoreKit can end in (pending for Ask to Buy, cancelled, failed), sends the CH08 §9
/// analytics events, and offers the link-out to Apple's subscription management.
@MainActor @Observable
public final class PurchaseModel {
    /// Where the purchase stands, for the paywall's button and message.
    public enum State: Sendable, Equatable {
        /// Nothing started: Subscribe shows.
        case idle
        /// After Subscribe: StoreKit's sheet is up, then the purchase is uploaded and verified.
        case purchasing
        /// Waiting for approval (Ask to Buy) or a payment method: nothing is granted yet.
        case pending
        /// The person closed the sheet: no error to show.
        case cancelled
        /// The purchase did not go through; `message` says why, ready to show.
        case failed(message: String)
        /// The server verified the purchase; `plan` is the account's plan state now (`pro`, or
        /// `trial` when an introductory offer started one).
        case purchased(plan: PlanState)
    }

    /// What StoreKit's `Product.purchase()` answered, as the app maps it.
    public enum StoreOutcome: Sendable, Equatable {
        /// `.success(.verified(transaction))`: `transaction.jwsRepresentation`.
        case purchased(signedTransaction: String)
        /// `.pending`: Ask to Buy or a payment method still has to approve it.
        case pending
        /// `.userCancelled`: the person closed StoreKit's sheet.
        case userCancelled
        /// StoreKit failed; `reason` is the app's code for it (e.g. `payment_declined`), sent as
        /// `purchase_failed`'s `errorCode`.
        case failed(reason: String)
    }

    /// The App Store product the paywall sells (e.g. `com.handz.pro.monthly`), sent with the
    /// purchase events.
    public let productID: String
    /// Where the purchase stands; changes with ``start()`` and ``finish(_:)``.
    public private(set) var state: State = .idle
    /// Where "Manage subscription" leads (Apple's subscription settings).
    public let manageSubscriptionsURL = URL(string: "https://apps.apple.com/account/subscriptions")!

    private let client: Gatehouse

    /// A purchase of `productID`, uploaded to the server through `client`; starts
    /// ``PurchaseModel/State/idle``.
    public init(client: Gatehouse, productID: String) {
        self.client = client
        self.productID = productID
    }

    /// The person tapped Subscribe: StoreKit's sheet is about to show.
    public func start() async {
        state = .purchasing
        message = nil
        await client.track("purchase_started", ["productId": .string(productID)])
    }

    /// StoreKit's answer. A purchase is uploaded and verified by the server before anything is
    /// granted; the snapshot then carries the plan.
    public func finish(_ outcome: StoreOutcome) async {
        switch outcome {
        case .purchased(let signedTransaction):
            do throws(GatehouseClientError) {
                let snapshot = try await client.uploadPurchase(signedTransaction: signedTransaction)
                state = .purchased(plan: snapshot.planState)
                await client.track("purchase_success", ["productId": .string(productID)])
                // An introductory offer starts a trial (decision 18).
                if snapshot.planState == .trial { await client.track("trial_started") }
            } catch {
                state = .failed(message: error.message)
                await client.track("purchase_failed", ["productId": .string(productID), "errorCode": .string(error.code.rawValue)])
            }
        case .pending:
            state = .pending
        case .userCancelled:
            state = .cancelled
        case .failed(let reason):
            state = .failed(message: await client.text("purchase.failed", "The purchase did not go through. You have not been charged."))
            await client.track("purchase_failed", ["productId": .string(productID), "errorCode": .string(reason)])
        }
        await describeState()
    }

    // MARK: Restore purchases

    /// Restore Purchases (CH07 §10: never blocked by auth), as the settings screen shows it.
    public enum RestoreState: Sendable, Equatable {
        /// Nothing started: Restore Purchases shows.
        case idle
        /// After Restore Purchases, until ``PurchaseModel/finishRestore(signedTransactions:)``
        /// has an answer.
        case restoring
        /// The server verified what StoreKit found; `plan` is the account's plan state now.
        case restored(plan: PlanState)
        /// Nothing to restore, or the server refused what was found.
        case failed(message: String)
    }

    /// Where Restore Purchases stands; changes with ``startRestore()`` and
    /// ``finishRestore(signedTransactions:)``.
    public private(set) var restoreState: RestoreState = .idle

    /// The person tapped Restore Purchases: the app now asks StoreKit (`AppStore.sync()`, then
    /// `Transaction.currentEntitlements`). Reported as CH08 §9 `restore_clicked`.
    public func startRestore() async {
        restoreState = .restoring
        await client.track("restore_clicked")
    }

    /// What StoreKit found (each transaction's `jwsRepresentation`): each is uploaded and verified
    /// by the server; the plan of the last one is the account's. Nothing found, or a refusal, is
    /// `restore_failed` (with `errorCode`), else `restore_success`.
    public func finishRestore(signedTransactions: [String]) async {
        guard !signedTransactions.isEmpty else {
            restoreState = .failed(message: await client.text("restore.nothing", "No purchases to restore were found for this Apple ID."))
            await client.track("restore_failed", ["errorCode": .string("nothing_to_restore")])
            return
        }
        do throws(GatehouseClientError) {
            var plan = PlanState.free
            for transaction in signedTransactions { plan = try await client.uploadPurchase(signedTransaction: transaction).planState }
            restoreState = .restored(plan: plan)
            await client.track("restore_success")
        } catch {
            restoreState = .failed(message: error.message)
            await client.track("restore_failed", ["errorCode": .string(error.code.rawValue)])
        }
    }

    /// Words for the state, from the preset's copy where it has them; a plain property a view
    /// binds to, set with the state.
    public private(set) var message: String?

    private func describeState() async {
        switch state {
        case .pending: message = await client.text("purchase.pending", "Your purchase is waiting for approval. We'll unlock it as soon as it's approved.")
        case .failed(let text): message = text
        case .purchased: message = await client.text("purchase.success", "You're all set.")
        case .idle, .purchasing, .cancelled: message = nil
        }
    }
}
