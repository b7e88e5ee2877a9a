import Foundation

// The passkeys section of the configuration: the relying party.
extension GatehouseConfig {
    /// The relying party: derived from the public URL unless set, checked when set.
    static func readPasskeys(_ settings: inout Settings, into config: inout GatehouseConfig) {
        var relyingParty = RelyingParty.derived(from: config.publicURL)
        if let id = settings.string("passkey_rp_id") {
            relyingParty.id = id.lowercased()
            relyingParty.webOrigins = []
        }
        if let origins = settings.list("passkey_origins") { relyingParty.webOrigins = origins.map { $0.lowercased() } }
        relyingParty.appleAppIDs = settings.list("apple_app_ids") ?? []
        // What the operator set is checked; the default follows the public URL, whatever it is.
        if ["passkey_rp_id", "passkey_origins", "apple_app_ids"].contains(where: settings.has) {
            for problem in relyingParty.problems() { settings.problem(problem.variable, problem.message) }
        }
        config.relyingParty = relyingParty
    }
}
