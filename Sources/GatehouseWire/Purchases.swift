/// `POST /v1/purchases/apple`.
public struct ApplePurchaseRequest: Codable, Sendable, Hashable {
    /// A StoreKit 2 signed transaction (JWS).
    public var signedTransaction: String
    public init(signedTransaction: String) { self.signedTransaction = signedTransaction }
    enum CodingKeys: String, CodingKey {
        case signedTransaction = "signed_transaction"
    }
}

/// `POST /v1/purchases/google-play`: what Play Billing gave the Android app for a subscription.
public struct GooglePlayPurchaseRequest: Codable, Sendable, Hashable {
    /// The purchase's token (`Purchase.getPurchaseToken()`).
    public var purchaseToken: String
    /// The subscription's product id (`Purchase.getProducts()`).
    public var productID: String
    public init(purchaseToken: String, productID: String) {
        self.purchaseToken = purchaseToken
        self.productID = productID
    }
    enum CodingKeys: String, CodingKey {
        case purchaseToken = "purchase_token"
        case productID = "product_id"
    }
}

/// `POST /v1/purchases/apple` without a Bearer (decision 21): whether an account owns the
/// purchase and a masked hint of how to sign in to it; never a session.
public struct RestoreHint: Codable, Sendable, Hashable {
    public var ownedByAccount: Bool
    /// `a•••@x.io`, or the provider (`Apple`, `Google`); null when no account owns it.
    public var signInHint: String?
    public init(ownedByAccount: Bool, signInHint: String?) {
        self.ownedByAccount = ownedByAccount
        self.signInHint = signInHint
    }
    enum CodingKeys: String, CodingKey {
        case ownedByAccount = "owned_by_account"
        case signInHint = "sign_in_hint"
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ownedByAccount, forKey: .ownedByAccount)
        try container.encode(signInHint, forKey: .signInHint)
    }
}

/// `POST /v1/webhooks/apple/app-store` (App Store Server Notifications V2).
public struct AppStoreNotificationRequest: Codable, Sendable, Hashable {
    public var signedPayload: String
    public init(signedPayload: String) { self.signedPayload = signedPayload }
    /// Apple's own spelling, camelCase.
    enum CodingKeys: String, CodingKey {
        case signedPayload
    }
}
