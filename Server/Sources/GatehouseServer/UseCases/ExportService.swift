import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// `GET /v1/me/export`: everything Gatehouse stores about a person, from every table that
/// holds their data.
struct ExportService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & IdempotencyStore & EventStore & SessionStore & AuditStore & EmailTokenStore
        & EntitlementStore & PlanLedgerStore & UsageStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore
        & MFAChallengeStore & ConsoleStore & PhoneStore & OAuthGrantStore

    let store: Stores
    let entitlements: Entitlements
    let stepUp: StepUpGate
    let clock: any WallClock

    /// `GET /v1/me/export`: everything stored about the person.
    func export(_ signedIn: SignedIn) async throws -> AccountExport {
        try await stepUp.require(.exportData, signedIn)
        let user = signedIn.user
        let identities = try await store.identities(of: user.id)
        let sessions = try await store.sessions(of: user.id)
        var audit: [AuditEvent] = []
        var before: Int64?
        repeat {
            let page = try await store.auditEvents(userID: user.id, before: before, limit: 500)
            audit += page
            before = page.count == 500 ? page.last?.sequence : nil
        } while before != nil
        var events: [DomainEvent] = []
        var after: Int64?
        repeat {
            let page = try await store.events(after: after, userID: user.id, limit: 500)
            events += page
            after = page.count == 500 ? page.last?.sequence : nil
        } while after != nil
        // Every paid source of the ledger, whatever the preset sells today (`ledgerRows` walks them).
        let ledger = try await store.ledgerRows(of: user.id)
        let stripeCustomers = try await store.stripeCustomers(of: user.id)
        return AccountExport(
            exportedAt: clock.now.rfc3339, users: user.payload(identities: identities), planOverride: user.planOverride,
            identities: user.payload(identities: identities).identities,
            sessions: sessions.map {
                SessionInfo($0, current: signedIn.identity.sessionID)
            },
            emailTokens: try await store.emailTokens(of: user.id).map {
                ExportedLink(
                    purpose: $0.purpose.rawValue, email: $0.email, createdAt: $0.createdAt.rfc3339, expiresAt: $0.expiresAt.rfc3339,
                    usedAt: $0.usedAt?.rfc3339)
            },
            auditLog: audit.map(AuditEntry.init),
            events: events.map(EventEntry.init),
            idempotencyKeys: try await store.idempotencyKeyTimes(of: user.id).map(\.rfc3339),
            creditLedger: try await store.creditLedger(of: user.id).map {
                ExportedCreditSpend(credit: $0.credit, amount: $0.amount, action: $0.action, subject: $0.subject, createdAt: $0.createdAt.rfc3339)
            },
            subscriptions: ledger.appStore.map {
                ExportedSubscription(
                    originalTransactionID: $0.originalTransactionID, productID: $0.productID, environment: $0.environment,
                    status: $0.status.rawValue, expiresAt: $0.expiresAt?.rfc3339, willRenew: $0.willRenew, updatedAt: $0.updatedAt.rfc3339)
            },
            entitlements: try await entitlements.snapshot(user),
            usageRecords: try await store.usageRecords(of: user.id).map {
                ExportedUsage(meter: $0.meter, amount: $0.amount, periodStart: $0.periodStart.rfc3339, createdAt: $0.createdAt.rfc3339)
            },
            usageMeters: try await store.usageCounts(of: user.id).map {
                ExportedUsageCount(meter: $0.meter, periodStart: $0.periodStart.rfc3339, used: $0.used)
            },
            passkeys: try await store.passkeys(of: user.id).map(PasskeyService.payload),
            passkeyChallenges: try await store.passkeyChallenges(of: user.id).map {
                ExportedPasskeyChallenge(ceremony: $0.ceremony.rawValue, createdAt: $0.createdAt.rfc3339, expiresAt: $0.expiresAt.rfc3339)
            },
            mfaFactors: try await store.mfaFactors(of: user.id).map(MFAService.payload),
            mfaRecoveryCodes: try await store.recoveryCodeTimes(of: user.id).map {
                ExportedRecoveryCode(createdAt: $0.createdAt.rfc3339, usedAt: $0.usedAt?.rfc3339)
            },
            mfaChallenges: try await store.mfaChallenges(of: user.id).map {
                ExportedMFAChallenge(createdAt: $0.createdAt.rfc3339, expiresAt: $0.expiresAt.rfc3339, attempts: $0.attempts)
            },
            phoneCodes: try await store.phoneCodes(of: user.id).map {
                ExportedPhoneCode(
                    phone: $0.phone, purpose: $0.purpose, createdAt: $0.createdAt.rfc3339, expiresAt: $0.expiresAt.rfc3339,
                    usedAt: $0.usedAt?.rfc3339)
            },
            stripeCustomers: stripeCustomers,
            stripeSubscriptions: ledger.stripe.map {
                ExportedStripeSubscription(
                    subscriptionID: $0.subscriptionID, customerID: $0.customerID, priceID: $0.priceID, status: $0.status,
                    currentPeriodEnd: $0.currentPeriodEnd?.rfc3339, cancelAtPeriodEnd: $0.cancelAtPeriodEnd, trialEnd: $0.trialEnd?.rfc3339,
                    updatedAt: $0.updatedAt.rfc3339)
            },
            planGrants: ledger.grants.map(OperatorService.payload),
            oauthConsents: try await store.consents(of: user.id).map {
                ExportedOAuthConsent(clientID: $0.clientID, scopes: $0.scopes, grantedAt: $0.grantedAt.rfc3339)
            },
            oauthCodes: try await store.oauthCodes(of: user.id).map {
                ExportedOAuthCode(kind: $0.kind.rawValue, clientID: $0.clientID, createdAt: $0.createdAt.rfc3339, usedAt: $0.usedAt?.rfc3339)
            },
            googlePlayPurchases: ledger.googlePlay.map {
                ExportedGooglePlayPurchase(
                    purchaseToken: $0.purchaseToken, productID: $0.productID, state: $0.state.rawValue, expiresAt: $0.expiresAt?.rfc3339,
                    testPurchase: $0.testPurchase, supersededBy: $0.supersededBy, voidedAt: $0.voidedAt?.rfc3339)
            })
    }
}
