import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import Testing

@Suite struct ConfigurationTests {
    func load(_ environment: [String: String]) async throws(ConfigurationError) -> GatehouseConfig {
        try await GatehouseConfig.load(environment: environment)
    }

    @Test func noConfigurationMeansTheEmbeddedDefaults() async throws {
        let config = try await load([:])
        #expect(config.host == "127.0.0.1" && config.port == 8080)
        #expect(config.database == .sqlite(path: "gatehouse.sqlite"))
        #expect(config.preset.name == "default")
        #expect(config.smtpURL == nil && config.adminKey == nil && config.isDevelopment)
        #expect(config.publicURL.absoluteString == "http://127.0.0.1:8080")
        #expect(config.issuer == "http://127.0.0.1:8080")
        #expect(config.maxBodyBytes == 65_536 && config.ipLimits)
        #expect(config.databasePreparedStatements && config.sessionCache)
        #expect(config.databasePoolSize == 20 && config.databasePoolKept == 20)
        let (smaller, elastic) = (try await load(["GATEHOUSE_DATABASE_POOL_SIZE": "8"]), try await load(["GATEHOUSE_DATABASE_POOL_MINIMUM": "0"]))
        #expect(smaller.databasePoolKept == 8 && elastic.databasePoolKept == 0)
        do {
            _ = try await load(["GATEHOUSE_DATABASE_POOL_SIZE": "8", "GATEHOUSE_DATABASE_POOL_MINIMUM": "9"])
            Issue.record("a minimum over the pool's size was taken")
        } catch {
            #expect(error.problems == ["GATEHOUSE_DATABASE_POOL_MINIMUM: 9 is more than GATEHOUSE_DATABASE_POOL_SIZE (8)"])
        }
        let unprepared = try await load(["GATEHOUSE_DATABASE_PREPARED_STATEMENTS": "off", "GATEHOUSE_IP_LIMITS": "no", "GATEHOUSE_SESSION_CACHE": "off"])
        #expect(!unprepared.databasePreparedStatements && !unprepared.ipLimits && !unprepared.sessionCache)
    }

    @Test func everyProblemIsReportedAtOnceNamingItsVariable() async {
        await #expect {
            try await load([
                "GATEHOUSE_PORT": "abc", "GATEHOUSE_DATABASE_URL": "mysql://localhost/db",
                "GATEHOUSE_PRESET": "/nonexistent/preset.json", "GATEHOUSE_ADMIN_KEY": "short",
                "GATEHOUSE_IP_LIMITS": "maybe", "GATEHOUSE_TRUSTED_PROXIES": "10.0.0.0/8,not-an-ip",
                "GATEHOUSE_PUBLIC_URL": "ftp://x", "GATEHOUSE_DATABASE_PREPARED_STATEMENTS": "sometimes",
                "GATEHOUSE_SESSION_CACHE": "later",
            ])
        } throws: { error in
            guard let problems = (error as? ConfigurationError)?.problems else { return false }
            let names = ["GATEHOUSE_PORT", "GATEHOUSE_DATABASE_URL", "GATEHOUSE_PRESET", "GATEHOUSE_ADMIN_KEY",
                         "GATEHOUSE_IP_LIMITS", "GATEHOUSE_TRUSTED_PROXIES", "GATEHOUSE_PUBLIC_URL", "GATEHOUSE_DATABASE_PREPARED_STATEMENTS", "GATEHOUSE_SESSION_CACHE"]
            return problems.count == names.count && names.allSatisfy { name in problems.contains { $0.hasPrefix(name + ":") } }
                && problems.allSatisfy { !$0.contains("\n") }
        }
    }

    @Test(arguments: ["0x50", "-1", "70000", "80.5", "eighty"])
    func badPortsAreRefused(_ port: String) async {
        await #expect(throws: ConfigurationError.self) { try await load(["GATEHOUSE_PORT": port]) }
    }

    @Test func presetsLoadByNameOrPath() async throws {
        #expect(try await load(["GATEHOUSE_PRESET": "oklah"]).preset.name == "oklah")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("preset-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"name": "custom", "sign_in_methods": {"apple": false}}"#.utf8).write(to: file)
        let custom = try await load(["GATEHOUSE_PRESET": file.path]).preset
        #expect(custom.name == "custom" && custom.signInMethods.apple == false && custom.signInMethods.google)
    }

    /// Issue 41, finding 8: a preset file of one's own needs only `name`; everything it leaves
    /// out is the `default` preset's (passkeys on, its copy), key by key inside a section.
    @Test func aPresetFileWithOnlyANameHasTheDefaultPresetsValues() async throws {
        let defaults = try PresetLibrary.load("default").get()
        #expect(defaults.signInMethods.passkey)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("preset-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"name": "bare"}"#.utf8).write(to: file)
        let bare = try await load(["GATEHOUSE_PRESET": file.path]).preset
        #expect(bare.name == "bare" && bare.signInMethods == defaults.signInMethods && bare.copy == defaults.copy)
        #expect(bare.tokens == defaults.tokens && bare.throttling == defaults.throttling && bare.enumerationProtection == defaults.enumerationProtection)
        try Data(#"{"name": "mine", "tokens": {"leeway_seconds": 7}, "copy": {"error.internal": "Oops."}}"#.utf8).write(to: file)
        let mine = try await load(["GATEHOUSE_PRESET": file.path]).preset
        #expect(mine.tokens.leewaySeconds == 7 && mine.tokens.accessTokenTTLSeconds == defaults.tokens.accessTokenTTLSeconds)
        #expect(mine.copy["error.internal"] == "Oops." && mine.copy["error.invalid_credentials"] == defaults.copy["error.invalid_credentials"])
        #expect(mine.signInMethods.passkey)
    }

    @Test func aPresetWithAnUnknownKeyIsRefusedNamingTheKey() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("preset-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"name": "custom", "tokens": {"acess_token_ttl_seconds": 60}}"#.utf8).write(to: file)
        await #expect {
            try await load(["GATEHOUSE_PRESET": file.path])
        } throws: { error in
            "\(error)".contains("GATEHOUSE_PRESET") && "\(error)".contains("tokens.acess_token_ttl_seconds")
        }
        await #expect {
            try await load(["GATEHOUSE_PRESET": "nonsense"])
        } throws: { error in
            "\(error)".contains("not a built-in preset")
        }
    }

    @Test func aConfigFileIsReadAndTheEnvironmentWins() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"gatehouse": {"port": 9091, "host": "0.0.0.0", "preset": "handz", "apple_audiences": "com.a.app,com.b.app"}}"#.utf8)
            .write(to: file)
        let config = try await load(["GATEHOUSE_CONFIG_FILE": file.path, "GATEHOUSE_HOST": "127.0.0.2"])
        #expect(config.port == 9091)
        #expect(config.host == "127.0.0.2")
        #expect(config.preset.name == "handz")
        #expect(config.appleAudiences == ["com.a.app", "com.b.app"])
    }

    @Test func aConfigFileWithAnUnknownKeyIsRefused() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"gatehouse": {"prot": 9091}}"#.utf8).write(to: file)
        await #expect {
            try await load(["GATEHOUSE_CONFIG_FILE": file.path])
        } throws: { error in
            "\(error)".contains("gatehouse.prot")
        }
    }

    @Test func productionNeedsAnHTTPSPublicURLAndASecretKey() async throws {
        let secret = "GATEHOUSE_SECRET_KEY"
        let key = "secret-key-that-is-long-enough-0123456789"
        await #expect(throws: ConfigurationError.self) { try await load(["GATEHOUSE_ENVIRONMENT": "production", secret: key]) }
        do throws(ConfigurationError) {
            _ = try await load(["GATEHOUSE_ENVIRONMENT": "production", "GATEHOUSE_PUBLIC_URL": "https://auth.example.com/"])
            Issue.record("production started without a secret key")
        } catch {
            #expect(error.problems.contains("GATEHOUSE_SECRET_KEY: is required in production: it seals signing keys and provider tokens at rest"))
        }
        let config = try await load(["GATEHOUSE_ENVIRONMENT": "production", "GATEHOUSE_PUBLIC_URL": "https://auth.example.com/", secret: key])
        #expect(!config.isDevelopment && config.issuer == "https://auth.example.com")
    }

    @Test func secretsNeverAppearInTheSummary() async throws {
        let config = try await load([
            "GATEHOUSE_ADMIN_KEY": "admin-key-that-is-long-enough-123", "GATEHOUSE_SECRET_KEY": "secret-key-that-is-long-enough-0123456789",
            "GATEHOUSE_SMTP_URL": "smtp://mailer:hunter2hunter2@mail.example.com:587",
            "GATEHOUSE_DATABASE_URL": "postgres://gatehouse:dbpassword@db.example.com/gatehouse",
            "GATEHOUSE_STRIPE_SECRET_KEY": "sk_test_51StripeKeyNeverLogged0123",
            "GATEHOUSE_STRIPE_WEBHOOK_SECRETS": "whsec_SigningSecretNeverLogged0123,whsec_RolledSecretNeverLogged4567",
        ])
        #expect(config.stripe?.webhookSecrets.count == 2)
        let summary = config.redactedSummary.values.joined(separator: " ")
        for secret in [
            "admin-key-that-is-long-enough-123", "secret-key-that-is-long-enough", "hunter2hunter2", "dbpassword", "StripeKeyNeverLogged",
            "SigningSecretNeverLogged", "RolledSecretNeverLogged",
        ] {
            #expect(!summary.contains(secret))
        }
    }

    /// Issue 61: the resident set is checked every second for memory to give back unless the
    /// setting says otherwise (0 never); a value out of range stops the start.
    @Test func theMemoryTrimChecksEverySecondUnlessSet() async throws {
        #expect(try await load([:]).memoryTrimSeconds == 1)
        #expect(try await load(["GATEHOUSE_MEMORY_TRIM_SECONDS": "0"]).memoryTrimSeconds == 0)
        #expect(try await load(["GATEHOUSE_MEMORY_TRIM_SECONDS": "60"]).memoryTrimSeconds == 60)
        do throws(ConfigurationError) {
            _ = try await load(["GATEHOUSE_MEMORY_TRIM_SECONDS": "-1"])
            Issue.record("a negative interval was accepted")
        } catch {
            #expect(error.problems == ["GATEHOUSE_MEMORY_TRIM_SECONDS: '-1' is not a number of seconds from 0 (never) to 3600"])
        }
    }

    /// Issue 65: a filtered console page tests accounts for 20 ms unless set (0: one batch a
    /// page); a value out of range stops the start.
    @Test func theConsoleScanTakes20MillisecondsUnlessSet() async throws {
        #expect(try await load([:]).consoleScanMilliseconds == 20)
        #expect(try await load(["GATEHOUSE_CONSOLE_SCAN_MILLISECONDS": "0"]).consoleScanMilliseconds == 0)
        #expect(try await load(["GATEHOUSE_CONSOLE_SCAN_MILLISECONDS": "250"]).consoleScanMilliseconds == 250)
        do throws(ConfigurationError) {
            _ = try await load(["GATEHOUSE_CONSOLE_SCAN_MILLISECONDS": "10001"])
            Issue.record("a scan of over ten seconds was accepted")
        } catch {
            #expect(error.problems == ["GATEHOUSE_CONSOLE_SCAN_MILLISECONDS: '10001' is not a number of milliseconds from 0 to 10000"])
        }
    }

    /// Issue 44: Stripe's key comes with its webhook secrets or not at all, and a webhook secret is
    /// Stripe's `whsec_…`; either mistake stops the start naming the variable.
    @Test func stripeNeedsItsKeyAndWebhookSecretsTogether() async throws {
        let key = "sk_test_51StripeKeyNeverLogged0123"
        do throws(ConfigurationError) {
            _ = try await load(["GATEHOUSE_STRIPE_SECRET_KEY": key])
            Issue.record("a Stripe key without webhook secrets was accepted")
        } catch {
            #expect(error.problems == ["GATEHOUSE_STRIPE_WEBHOOK_SECRETS: is required when GATEHOUSE_STRIPE_SECRET_KEY is set"])
        }
        do throws(ConfigurationError) {
            _ = try await load(["GATEHOUSE_STRIPE_SECRET_KEY": key, "GATEHOUSE_STRIPE_WEBHOOK_SECRETS": "whsec_GoodSecret0123456789,not-a-signing-secret-0123"])
            Issue.record("a webhook secret that is not whsec_… was accepted")
        } catch {
            #expect(error.problems == ["GATEHOUSE_STRIPE_WEBHOOK_SECRETS: must be Stripe signing secrets (whsec_…), comma-separated"])
            #expect(!error.problems.joined().contains("not-a-signing-secret"))
        }
        #expect(try await load([:]).stripe == nil)
        let stripe = try await load(["GATEHOUSE_STRIPE_SECRET_KEY": key, "GATEHOUSE_STRIPE_WEBHOOK_SECRETS": "whsec_GoodSecret0123456789"]).stripe
        #expect(stripe?.secretKey == key && stripe?.webhookSecrets == ["whsec_GoodSecret0123456789"])
        #expect(stripe?.apiURL == StripeAPISettings.defaultAPIURL)
    }

    @Test func trustedProxyRangesMatchAddresses() throws {
        let range = try #require(IPRange("10.1.0.0/16"))
        #expect(range.contains(try #require(IPAddress("10.1.200.3"))))
        #expect(!range.contains(try #require(IPAddress("10.2.0.1"))))
        #expect(try #require(IPRange("::1")).contains(try #require(IPAddress("::1"))))
        #expect(try #require(IPRange("127.0.0.1")).contains(try #require(IPAddress("::ffff:127.0.0.1"))))
        #expect(IPRange("10.0.0.0/33") == nil && IPAddress("300.1.1.1") == nil)
    }
}
