import Foundation
import JWTKit

// The providers section of the configuration: Apple, Google and the App Store.
extension GatehouseConfig {
    /// Apple's and Google's audiences and keys, Apple's token credentials and endpoints, and the
    /// App Store's certificates, bundle and environments.
    static func readProviders(_ settings: inout Settings, into config: inout GatehouseConfig) {
        config.appleAudiences = settings.list("apple_audiences") ?? []
        config.googleAudiences = settings.list("google_audiences") ?? []
        if let url = settings.url("apple_jwks_url", schemes: ["http", "https"]) { config.appleJWKSURL = url }
        if let url = settings.url("google_jwks_url", schemes: ["http", "https"]) { config.googleJWKSURL = url }
        config.appleTeamID = settings.string("apple_team_id")
        config.appleKeyID = settings.string("apple_key_id")
        config.appleClientID = settings.string("apple_client_id")
        if let path = settings.string("apple_private_key_file") {
            if let pem = try? String(contentsOfFile: path, encoding: .utf8), (try? ES256PrivateKey(pem: pem)) != nil {
                config.applePrivateKey = pem
            } else {
                settings.problem("apple_private_key_file", "cannot read an EC P-256 private key (PEM) from \(path)")
            }
        }
        let appleParts = [config.appleTeamID, config.appleKeyID, config.applePrivateKey].filter { $0 != nil }.count
        if appleParts != 0, appleParts != 3 {
            settings.problem("apple_team_id", "Apple token credentials need GATEHOUSE_APPLE_TEAM_ID, _KEY_ID and _PRIVATE_KEY_FILE together")
        }
        if let url = settings.url("apple_token_url", schemes: ["http", "https"]) { config.appleTokenURL = url }
        if let url = settings.url("apple_revoke_url", schemes: ["http", "https"]) { config.appleRevokeURL = url }
        if let path = settings.string("appstore_root_certs") {
            if let pem = try? String(contentsOfFile: path, encoding: .utf8), (try? AppStoreJWSVerifier.certificates(pem: pem)) != nil {
                config.appStoreRootCerts = path
            } else {
                settings.problem("appstore_root_certs", "cannot read PEM certificates from \(path)")
            }
        }
        config.appStoreBundleID = settings.string("appstore_bundle_id")
        if let list = settings.list("appstore_environments") {
            let known = ["Production", "Sandbox", "Xcode", "LocalTesting"]
            for entry in list where !known.contains(entry) {
                settings.problem("appstore_environments", "'\(entry)' is not one of \(known.joined(separator: ", "))")
            }
            config.appStoreEnvironments = list
        }
    }
}
