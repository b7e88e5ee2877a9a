import Foundation
import GatehouseWire

/// A relying party of the OpenID provider (issue 45), as stored.
public struct OAuthClient: Sendable, Equatable {
    public static let defaultRateLimitPerMinute = 600

    public var id: String
    public var name: String
    /// SHA-256 of the secret (256 random bits, so a fast hash is enough); nil for a public client.
    public var secretHash: [UInt8]?
    public var isPublic: Bool
    public var firstParty: Bool
    public var redirectURIs: [String]
    public var postLogoutRedirectURIs: [String]
    public var scopes: [String]
    public var audience: String?
    public var initiateLoginURI: String?
    public var rateLimitPerMinute: Int
    public var createdAt: Date

    public init(
        id: String, name: String, secretHash: [UInt8]?, isPublic: Bool, firstParty: Bool, redirectURIs: [String],
        postLogoutRedirectURIs: [String], scopes: [String], audience: String?, initiateLoginURI: String?, rateLimitPerMinute: Int,
        createdAt: Date
    ) {
        self.id = id
        self.name = name
        self.secretHash = secretHash
        self.isPublic = isPublic
        self.firstParty = firstParty
        self.redirectURIs = redirectURIs
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.scopes = scopes
        self.audience = audience
        self.initiateLoginURI = initiateLoginURI
        self.rateLimitPerMinute = rateLimitPerMinute
        self.createdAt = createdAt
    }

    /// The `aud` of this client's access tokens.
    public var tokenAudience: String { audience ?? id }
}

/// The scopes a person can grant: each names what the client may read about them. Other
/// registered scopes are the app's own API scopes, which no person grants (`client_credentials`).
public enum OAuthScope: String, Sendable, CaseIterable {
    case openid
    case email
    case profile
    case offlineAccess = "offline_access"

    /// The scope words of `text` (space-separated), each once, in order.
    public static func words(_ text: String?) -> [String] {
        var seen: Set<String> = []
        return (text ?? "").split(separator: " ").map(String.init).filter { seen.insert($0).inserted }
    }

    /// A registrable API scope: lowercase letters, digits and `:._-`, up to 64 characters.
    public static func isAPIScope(_ word: String) -> Bool {
        OAuthScope(rawValue: word) == nil && (1...64).contains(word.count)
            && word.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || ":._-".unicodeScalars.contains($0) }
    }
}

/// RFC 7636 with `S256` only (`plain` is refused: OAuth 2.1).
public enum PKCE {
    /// `code_challenge` as S256 makes it: 43 base64url characters.
    public static func isChallenge(_ text: String) -> Bool {
        text.utf8.count == 43 && Data(base64URLEncoded: text)?.count == 32
    }

    /// A `code_verifier`: 43 to 128 unreserved characters.
    public static func isVerifier(_ text: String) -> Bool {
        (43...128).contains(text.utf8.count)
            && text.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "-._~".unicodeScalars.contains($0)
            }
    }

    /// Whether `verifier` hashes to `challenge`: base64url(SHA-256(verifier)), compared in
    /// constant time. `sha256` is injected (the core has no cryptography).
    public static func matches(verifier: String, challenge: String, sha256: ([UInt8]) -> [UInt8]) -> Bool {
        guard isVerifier(verifier), isChallenge(challenge) else { return false }
        let computed = Data(sha256(Array(verifier.utf8))).base64URLEncoded
        return constantTimeEquals(Array(computed.utf8), Array(challenge.utf8))
    }
}

/// What a client asked for at `/oauth/authorize`, checked. Errors before the redirect URI is
/// known to be the client's are shown on a page (`page`); after, they go back to the client
/// (`redirect`), as RFC 6749 §4.1.2.1 says.
public struct AuthorizationRequest: Sendable, Equatable {
    public var clientID: String
    public var redirectURI: String
    public var scopes: [String]
    public var state: String?
    public var nonce: String?
    public var codeChallenge: String
    /// `login`, `consent`, `none` (OpenID Connect's `prompt`), space-separated.
    public var prompt: Set<String>
    /// OpenID Connect's `max_age`: seconds since the person last signed in, at most.
    public var maxAge: Int? = nil

    public enum Refusal: Error, Equatable, Sendable {
        /// No such client, or a redirect URI it did not register: never redirected.
        case page(String)
        /// Sent back to the client's redirect URI as `error` and `error_description`.
        case redirect(error: String, description: String)
    }

    /// Checks `parameters` (the query or form) against the client. Redirect URIs compare as
    /// exact strings: a different path, port, case or trailing slash is another URI. A parameter
    /// sent more than once (`repeated`) is refused (RFC 6749 §3.1): on the page when it is the
    /// client or its redirect URI, else back to the client.
    public static func check(_ parameters: [String: String], repeated: Set<String> = [], client: OAuthClient?) -> Result<AuthorizationRequest, Refusal> {
        guard let client, !repeated.contains("client_id") else { return .failure(.page("This app is not registered with this sign-in service.")) }
        guard let redirect = parameters["redirect_uri"], !repeated.contains("redirect_uri"), client.redirectURIs.contains(redirect) else {
            return .failure(.page("The address to return to is not one this app registered."))
        }
        func refuse(_ error: String, _ description: String) -> Result<AuthorizationRequest, Refusal> {
            .failure(.redirect(error: error, description: description))
        }
        if let name = repeated.sorted().first { return refuse("invalid_request", "\(name) was sent more than once.") }
        guard parameters["response_type"] == "code" else {
            return refuse("unsupported_response_type", "Only the authorization code flow (response_type=code) is served.")
        }
        guard parameters["request"] == nil, parameters["request_uri"] == nil else {
            return refuse("request_not_supported", "Request objects are not supported.")
        }
        guard parameters["code_challenge_method"] == "S256", let challenge = parameters["code_challenge"], PKCE.isChallenge(challenge) else {
            return refuse("invalid_request", "PKCE is required: code_challenge with code_challenge_method=S256.")
        }
        let scopes = OAuthScope.words(parameters["scope"])
        guard !scopes.isEmpty, scopes.allSatisfy({ OAuthScope(rawValue: $0) != nil && client.scopes.contains($0) }) else {
            return refuse("invalid_scope", "Ask for scopes this app registered: \(client.scopes.joined(separator: " ")).")
        }
        let prompt = Set(OAuthScope.words(parameters["prompt"]))
        guard prompt.isSubset(of: ["login", "consent", "none"]), !(prompt.contains("none") && prompt.count > 1) else {
            return refuse("invalid_request", "prompt is login, consent or none.")
        }
        if let nonce = parameters["nonce"], nonce.count > 256 { return refuse("invalid_request", "The nonce is too long.") }
        if let state = parameters["state"], state.count > 1024 { return refuse("invalid_request", "The state is too long.") }
        var maxAge: Int?
        if let text = parameters["max_age"] {
            guard let seconds = Int(text), seconds >= 0, text.count <= 10 else { return refuse("invalid_request", "max_age is a number of seconds.") }
            maxAge = seconds
        }
        return .success(
            AuthorizationRequest(
                clientID: client.id, redirectURI: redirect, scopes: scopes, state: parameters["state"], nonce: parameters["nonce"],
                codeChallenge: challenge, prompt: prompt, maxAge: maxAge))
    }

    /// The request as query parameters, to carry through the sign-in and consent forms (each
    /// form's post checks it again).
    public var parameters: [(String, String)] {
        var items: [(String, String)] = [
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI), ("scope", scopes.joined(separator: " ")),
            ("code_challenge", codeChallenge), ("code_challenge_method", "S256"),
        ]
        if let state { items.append(("state", state)) }
        if let nonce { items.append(("nonce", nonce)) }
        // `prompt` and `max_age` go with the request through every page: each post is held to
        // them again (`OAuthInteraction`).
        if !prompt.isEmpty { items.append(("prompt", prompt.sorted().joined(separator: " "))) }
        if let maxAge { items.append(("max_age", String(maxAge))) }
        return items
    }
}

/// What a one-time code was made for: the code flow's redirect, or the app's hand-over.
public enum OAuthCodeKind: String, Sendable, CaseIterable {
    case authorization
    case handover
}

/// A one-time code as stored (only its hash): 60 seconds, used once. Using it twice ends the
/// session its first use opened.
public struct OAuthCode: Sendable, Equatable {
    public static let lifetime: TimeInterval = 60

    public var hash: [UInt8]
    public var kind: OAuthCodeKind
    public var clientID: String
    public var userID: UserID
    /// The browser's session at the provider (a code) or the app's session (a hand-over).
    public var sessionID: SessionID
    public var redirectURI: String?
    public var scopes: [String]
    public var nonce: String?
    public var codeChallenge: String?
    public var createdAt: Date
    public var expiresAt: Date
    public var usedAt: Date?
    /// The session the code's first use opened.
    public var issuedSessionID: SessionID?

    public init(
        hash: [UInt8], kind: OAuthCodeKind, clientID: String, userID: UserID, sessionID: SessionID, redirectURI: String?, scopes: [String],
        nonce: String?, codeChallenge: String?, createdAt: Date, usedAt: Date? = nil, issuedSessionID: SessionID? = nil
    ) {
        self.hash = hash
        self.kind = kind
        self.clientID = clientID
        self.userID = userID
        self.sessionID = sessionID
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.nonce = nonce
        self.codeChallenge = codeChallenge
        self.createdAt = createdAt
        self.expiresAt = createdAt.addingTimeInterval(Self.lifetime)
        self.usedAt = usedAt
        self.issuedSessionID = issuedSessionID
    }
}

/// A person's consent to a client: the scopes granted, until revoked.
public struct OAuthConsent: Sendable, Equatable {
    public var userID: UserID
    public var clientID: String
    public var scopes: [String]
    public var grantedAt: Date

    public init(userID: UserID, clientID: String, scopes: [String], grantedAt: Date) {
        self.userID = userID
        self.clientID = clientID
        self.scopes = scopes
        self.grantedAt = grantedAt
    }
}

/// How a session's sign-in reads in an ID token: `amr` as RFC 8176's values where one fits, and
/// `acr` as the assurance level.
public enum OpenIDAuthentication {
    public static func amr(of session: Session) -> [String] {
        var values: [String] = []
        for (method, _) in session.authenticationMethods {
            let value =
                switch method {
                case "password": "pwd"
                case "totp", "recovery_code": "otp"
                case "sms": "sms"
                case "passkey": "hwk"
                case "magic_link", "email_code": "email"
                default: method
                }
            if !values.contains(value) { values.append(value) }
        }
        if session.assurance == .aal2, !values.contains("mfa") { values.append("mfa") }
        return values
    }

    public static func acr(of session: Session) -> String { session.assurance.rawValue }
}
