import Foundation

// The keys section of the configuration: who may call what, and the key that seals secrets.
extension GatehouseConfig {
    /// The admin and service keys, Supabase's anon and service-role keys, the sealing key and the
    /// token audience.
    static func readKeys(_ settings: inout Settings, into config: inout GatehouseConfig) {
        if let key = settings.string("admin_key") {
            if key.count >= 24 { config.adminKey = key } else {
                settings.problem("admin_key", "must be at least 24 characters long")
            }
        }
        if let file = settings.string("admin_key_file") { config.adminKeyFile = file }
        if let key = settings.string("service_key") {
            if key.count >= 24 { config.serviceKey = key } else {
                settings.problem("service_key", "must be at least 24 characters long")
            }
        }
        if let key = settings.string("supabase_anon_key") {
            if key.count >= 16 { config.supabaseAnonKey = key } else {
                settings.problem("supabase_anon_key", "must be at least 16 characters long")
            }
        }
        if let key = settings.string("supabase_service_role_key") {
            if key.count < 24 {
                settings.problem("supabase_service_role_key", "must be at least 24 characters long")
            } else if config.supabaseAnonKey == nil {
                settings.problem("supabase_service_role_key", "needs GATEHOUSE_SUPABASE_ANON_KEY too: /auth/v1 is served only with both")
            } else if key == config.supabaseAnonKey {
                settings.problem("supabase_service_role_key", "must differ from the anon key, which apps ship in the clear")
            } else {
                config.supabaseServiceRoleKey = key
            }
        }
        if let key = settings.string("secret_key") {
            if key.utf8.count >= 32 { config.secretKey = key } else {
                settings.problem("secret_key", "must be at least 32 characters long")
            }
        } else if config.environment == .production {
            // Without it, signing keys, the refresh-chain key and provider tokens sit in the
            // database in clear.
            settings.problem("secret_key", "is required in production: it seals signing keys and provider tokens at rest")
        }
        config.tokenAudience = settings.string("token_audience")
    }
}
