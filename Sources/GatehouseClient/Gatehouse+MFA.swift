import Foundation
import GatehouseCore
import GatehouseWire

/// The code of a sign-in that waits for its second factor.
extension ErrorCode {
    /// SDK-local: the sign-in proved its first factor and waits for the second; the state is
    /// `.secondFactorRequired` with the challenge (also under `details["challenge_id"]`).
    public static let secondFactorRequired: ErrorCode = "second_factor_required"
}

extension Gatehouse {
    // MARK: Completing a sign-in

    /// The session of a sign-in's answer; a challenge is kept (the state shows it) and thrown
    /// as `second_factor_required`.
    func session<Signed>(of answer: SignInAnswer<Signed>, provider: SignInProvider) throws(GatehouseClientError) -> Signed {
        switch answer {
        case .signedIn(let signed):
            return signed
        case .mfaRequired(let challenge):
            markSecondFactorRequired(challenge, provider: provider)
            throw GatehouseClientError(
                code: .secondFactorRequired, message: text("mfa.challenge_prompt", "Enter the code from your authenticator app."),
                details: ["challenge_id": .string(challenge.challengeID)])
        }
    }

    /// The sign-in waiting for its second factor, if any.
    public var pendingSecondFactor: MFAChallengePayload? { pendingChallenge?.challenge }

    /// Completes the waiting sign-in with a 6-digit code from the authenticator app of
    /// `factorID` (one of the challenge's factors; the first when nil).
    @discardableResult
    public func completeSignIn(factorID: String? = nil, code: String) async throws(GatehouseClientError) -> SignInResult {
        guard let pending = pendingChallenge else { throw noChallenge }
        let factor = factorID ?? pending.challenge.factors.first?.id
        return try await complete(pending, MFAVerifyRequest(challengeID: pending.challenge.challengeID, factorID: factor, code: code))
    }

    /// Completes the waiting sign-in with one of the account's recovery codes (each works once).
    @discardableResult
    public func completeSignIn(recoveryCode: String) async throws(GatehouseClientError) -> SignInResult {
        guard let pending = pendingChallenge else { throw noChallenge }
        return try await complete(pending, MFAVerifyRequest(challengeID: pending.challenge.challengeID, recoveryCode: recoveryCode))
    }

    /// Gives up the waiting sign-in: back to signed out.
    public func cancelSecondFactor() {
        guard pendingChallenge != nil else { return }
        pendingChallenge = nil
        if case .secondFactorRequired = state { markSignedOut(nil) }
    }

    private func complete(
        _ pending: (challenge: MFAChallengePayload, provider: SignInProvider), _ request: MFAVerifyRequest
    ) async throws(GatehouseClientError) -> SignInResult {
        let response: MFAVerifyResponse
        do {
            response = try await call(Endpoints.verifyMFA, body: request, auth: .none)
        } catch {
            // A challenge that died (expired, used, out of tries) cannot be completed: the person
            // starts the sign-in again. The server says so with `challenge_invalid`, or with
            // `details.challenge_ended` on the last wrong code and on a challenge out of tries.
            if error.code == .challengeInvalid || error.details?["challenge_ended"] == .bool(true) { cancelSecondFactor() }
            throw error
        }
        guard let user = response.user else { throw GatehouseClientError(code: .invalidResponse, message: "The sign-in answer had no user.") }
        try begin(response.session, user: user, provider: pending.provider)
        return SignInResult(user: user, created: false)
    }

    private var noChallenge: GatehouseClientError {
        GatehouseClientError(code: .challengeInvalid, message: "No sign-in is waiting for a code. Please sign in again.")
    }

    // MARK: Step-up

    /// How the current session proved who it is, as its access token says (`aal` and the latest
    /// time in `amr`): what `decide` gives gates with `mfa` and `recent_sign_in` rules. Read
    /// from the token without checking its signature, for the screens only; the server and
    /// `GatehouseVerifier` check the token. Nil before the session has an access token.
    public var assurance: Assurance? {
        guard let accessToken, case let parts = accessToken.split(separator: ".", omittingEmptySubsequences: false), parts.count == 3,
            let payload = Data(base64URLEncoded: String(parts[1])),
            let claims = try? JSONDecoder().decode(AccessTokenClaims.self, from: payload)
        else { return nil }
        return Assurance(aal: claims.aal, amr: claims.amr ?? [])
    }

    /// Raises the signed-in session to `aal2` with a code from an authenticator app: the same
    /// session, new tokens. Answers what a gate refused with `mfa_required`.
    public func stepUp(factorID: String, code: String) async throws(GatehouseClientError) {
        try await stepUp(MFAVerifyRequest(factorID: factorID, code: code))
    }

    /// Raises the signed-in session to `aal2` with a recovery code.
    public func stepUp(recoveryCode: String) async throws(GatehouseClientError) {
        try await stepUp(MFAVerifyRequest(recoveryCode: recoveryCode))
    }

    /// The authenticator apps a step-up can use: the account's confirmed factors. A session
    /// at `aal1` may not list factors, but the server's `mfa_required` refusal names them
    /// (`details.factors`); this reads them from either.
    public func stepUpFactors() async throws(GatehouseClientError) -> [MFAFactorSummary] {
        do {
            return try await mfaFactors().filter { $0.status == "verified" }.map { MFAFactorSummary(id: $0.id, type: $0.type, name: $0.name) }
        } catch where error.code == .mfaRequired {
            guard let factors = error.details?["factors"]?.decoded(as: [MFAFactorSummary].self) else {
                throw GatehouseClientError(code: .invalidResponse, message: "The server did not say which factors to use.")
            }
            return factors
        }
    }

    private func stepUp(_ request: MFAVerifyRequest) async throws(GatehouseClientError) {
        let response = try await call(Endpoints.verifyMFA, body: request, auth: .required)
        guard let user = state.user ?? stored?.user, let provider = stored?.provider else { throw notSignedInError }
        try begin(response.session, user: user, provider: SignInProvider(rawValue: provider))
    }

    private var notSignedInError: GatehouseClientError {
        GatehouseClientError(code: .notSignedIn, message: "Please sign in first.")
    }

    // MARK: Managing factors

    /// `POST /v1/mfa/factors`: a new authenticator app, unverified until `confirmFactor` takes
    /// its first code. Show `totp.qrSVG` (or `totp.uri` as a link, `totp.secret` to type in).
    public func enrollTOTP(name: String? = nil) async throws(GatehouseClientError) -> MFAEnrollment {
        try await call(Endpoints.enrollMFAFactor, body: MFAEnrollRequest(type: "totp", name: name), auth: .required)
    }

    /// `POST /v1/mfa/factors/{id}/confirm`: the first code. The account's first factor answers
    /// its ten recovery codes (show them once). The code proved the factor, so the server raises
    /// this session to `aal2`; the tokens are refreshed at once to say so (`assurance`).
    public func confirmFactor(id: String, code: String) async throws(GatehouseClientError) -> MFAConfirmResponse {
        let response = try await call(Endpoints.confirmMFAFactor, id, body: MFACodeRequest(code: code), auth: .required)
        // Failing (offline), the next refresh brings `aal2` instead.
        _ = await refresh(replacing: accessToken)
        return response
    }

    /// `GET /v1/mfa/factors`.
    public func mfaFactors() async throws(GatehouseClientError) -> [MFAFactorPayload] {
        try await call(Endpoints.mfaFactors, auth: .required).factors
    }

    /// `PATCH /v1/mfa/factors/{id}`.
    @discardableResult
    public func renameFactor(id: String, name: String) async throws(GatehouseClientError) -> MFAFactorPayload {
        try await call(Endpoints.renameMFAFactor, id, body: MFARenameRequest(name: name), auth: .required).factor
    }

    /// `DELETE /v1/mfa/factors/{id}` (needs `aal2`).
    public func deleteFactor(id: String) async throws(GatehouseClientError) {
        try await call(Endpoints.deleteMFAFactor, id, auth: .required)
    }

    /// `POST /v1/mfa/recovery-codes`: ten new codes; the old ones stop working.
    public func regenerateRecoveryCodes() async throws(GatehouseClientError) -> [String] {
        try await call(Endpoints.regenerateRecoveryCodes, auth: .required).recoveryCodes
    }
}
