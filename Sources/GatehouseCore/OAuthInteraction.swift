import Foundation

/// When `/oauth/authorize` must show the person a page before a code goes back (issue 60): the
/// interaction rules of OpenID Connect Core §3.1.2.1 (`prompt`, `max_age`) and RFC 8252 §8.6
/// (a native client's request is not processed automatically), in one place. The provider's
/// use case asks it at each step; nothing else decides whether a code may go without a page.
public enum OAuthInteraction {
    /// What the request needs before a code goes back.
    public enum Need: Sendable, Equatable {
        /// A sign-in on the page: nobody is signed in, `prompt=login`, or `max_age` has passed.
        case signIn
        /// The consent page: a third-party client without a consent covering the scopes, or
        /// `prompt=consent`.
        case consent
        /// A one-tap "Continue as …" page: a public client that cannot prove who it is.
        case confirm
        /// Nothing: the code goes back.
        case none

        /// The error `prompt=none` answers instead of the page (OIDC Core §3.1.2.6).
        public var promptNoneError: String? {
            switch self {
            case .signIn: "login_required"
            case .consent: "consent_required"
            case .confirm: "interaction_required"
            case .none: nil
            }
        }
    }

    /// How long after a sign-in on the pages a posted consent or confirmation still counts as
    /// that sign-in's (`prompt=login`, `max_age`): the pages between them take a person seconds.
    public static let pageSeconds: TimeInterval = 300

    /// Where the browser stands in this request's flow.
    public enum Moment: Sendable, Equatable {
        /// The request arrived (a redirect from the client, or a form without a decision).
        case arrived
        /// The person signed in on the page within this request.
        case signedInHere
        /// The person answered the consent or confirmation page (allow).
        case answered
    }

    /// What `request` needs now. `authTime` is when the browser's sign-in was made (nil: nobody
    /// is signed in); `consentCovers` whether the person's consent covers the scopes.
    public static func need(
        _ request: AuthorizationRequest, client: OAuthClient, authTime: Date?, consentCovers: Bool, moment: Moment, now: Date
    ) -> Need {
        guard let authTime else { return .signIn }
        // A sign-in counts as fresh when it was made in this request, or (for a page's answer)
        // moments before: the page was shown after it.
        let fresh =
            switch moment {
            case .signedInHere: true
            case .answered: authTime >= now.addingTimeInterval(-pageSeconds)
            case .arrived: false
            }
        if request.prompt.contains("login"), !fresh { return .signIn }
        if let maxAge = request.maxAge, authTime.addingTimeInterval(TimeInterval(maxAge)) < now, !fresh { return .signIn }
        if moment == .answered { return .none }
        if !client.firstParty, !consentCovers || request.prompt.contains("consent") { return .consent }
        if client.isPublic, moment == .arrived, !provesItself(client, redirectURI: request.redirectURI) { return .confirm }
        return .none
    }

    /// Whether a code sent to `redirectURI` can only reach the client: an `https` address
    /// (a claimed universal or app link). A loopback port or a private-use scheme can be taken
    /// by any process on the device (RFC 8252 §8.6, §8.10).
    public static func provesItself(_ client: OAuthClient, redirectURI: String) -> Bool {
        !client.isPublic || redirectURI.lowercased().hasPrefix("https://")
    }
}
