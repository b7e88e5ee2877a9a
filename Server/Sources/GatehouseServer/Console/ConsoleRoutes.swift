/// Every route of the admin console, declared once: the router registers these
/// (`ConsoleController.register`) and `OpenAPITests` holds the router to them.
enum ConsoleRoutes {
    static let overview = Route(.get, "/admin")
    static let countOverview = Route(.post, "/admin/overview/count")
    static let signIn = Route(.post, "/admin/sign-in")
    static let signOut = Route(.post, "/admin/sign-out")
    static let users = Route(.get, "/admin/users")
    static let user = Route(.get, "/admin/users/{id}")
    static let revokeSession = Route(.post, "/admin/users/{id}/sessions/{session}/revoke")
    static let revokeAllSessions = Route(.post, "/admin/users/{id}/sessions/revoke-all")
    static let setPlan = Route(.post, "/admin/users/{id}/plan")
    static let setMetadata = Route(.post, "/admin/users/{id}/metadata")
    static let grantCredits = Route(.post, "/admin/users/{id}/credits")
    static let createGrant = Route(.post, "/admin/users/{id}/grants")
    static let revokeGrant = Route(.post, "/admin/users/{id}/grants/{grant}/revoke")
    static let disable = Route(.post, "/admin/users/{id}/disable")
    static let enable = Route(.post, "/admin/users/{id}/enable")
    static let sendMail = Route(.post, "/admin/users/{id}/mail")
    static let delete = Route(.post, "/admin/users/{id}/delete")
    static let audit = Route(.get, "/admin/audit")
    static let events = Route(.get, "/admin/events")
    static let keys = Route(.get, "/admin/keys")
    static let rotateKeys = Route(.post, "/admin/keys/rotate")
    static let mail = Route(.get, "/admin/mail")
    static let testMail = Route(.post, "/admin/mail/test")
    static let clients = Route(.get, "/admin/clients")
    static let createClient = Route(.post, "/admin/clients")
    static let rotateClientSecret = Route(.post, "/admin/clients/{client}/secret")
    static let deleteClient = Route(.post, "/admin/clients/{client}/delete")
    static let preset = Route(.get, "/admin/preset")

    static let all = [
        overview, countOverview, signIn, signOut, users, user, revokeSession, revokeAllSessions, setPlan, setMetadata, grantCredits,
        createGrant, revokeGrant, disable, enable, sendMail, delete, audit, events, keys, rotateKeys, mail, testMail, clients,
        createClient, rotateClientSecret, deleteClient, preset,
    ]
}
