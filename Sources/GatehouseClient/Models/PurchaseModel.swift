import Foundation
import GatehouseWire
import Observation

/// A subscription purchase as the paywall shows it (Handz CH08 §8, Hannah): the app runs
/// StoreKit and reports what it answered; the model uploads a verified transaction, keeps the
/// states StoreKit can end in (pending for Ask to Buy, cancelled, failed), sends the CH08 §9
/// analytics events, and offers the link-out to Apple's subscription management.
@MainActor @Observable
public final class PurchaseModel {
    public enum State: Sendable, Equatable {
        case idle
        case purchasing
        /// Waiting for approval (Ask to Buy) or a payment method: nothing is granted yet.
        case pending
        /// The person closed the sheet: no error to show.
        case cancelled
        case failed(message: String)
        case purchased(plan: String)
    }

    /// What StoreKit's `Product.purchase()` answered, as the app maps it.
    public enum StoreOutcome: Sendable, Equatable {
        /// `.success(.verified(transaction))`: `transaction.jwsRepresentation`.
        case purchased(signedTransaction: String)
        case pending
        case userCancelled
        case failed(reason: String)
    }

    public let productID: String
    public private(set) var state: State = .idle
    /// Where "Manage subscription" leads (Apple's subscription settings).
    public let manageSubscriptionsURL = URL(string: "https://apps.apple.com/account/subscriptions")!

    private let client: Gatehouse

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
