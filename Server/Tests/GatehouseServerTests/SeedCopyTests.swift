import Foundation
import GatehouseCore
import GatehouseTestSupport
import GatehouseWire
import Hummingbird
import HummingbirdTesting
import Testing

/// The seeds' words, served exactly by `GET /v1/config` for the app's screens (decision 28's
/// catalogue): the strings the traceability table lists for Handz, Hannah, OKLah and SyncWell.
@Suite struct SeedCopyTests {
    static let expected: [(preset: String, key: String, text: String)] = [
        // Handz CH07 §8
        ("handz", "email_choice.create", "Create account with email"),
        ("handz", "email_choice.log_in", "Log in with email"),
        ("handz", "signup.have_account", "Already have an account? Log in"),
        ("handz", "login.forgot", "Forgot password?"),
        ("handz", "forgot.button", "Send reset link"),
        ("handz", "goals.build", "Build a gameplan"),
        ("handz", "goals.practice", "Practice a gameplan"),
        ("handz", "goals.browse", "Browse examples"),
        ("handz", "demo.create_account", "Create an account to build yours"),
        // Handz CH08 §5.1
        ("handz", "practice.cta_credit", "Practice (1 credit)"),
        ("handz", "practice.cta_pro", "Practice (Pro)"),
        // Hannah Health: welcome screen and value propositions
        ("hannah", "welcome.start_trial", "Start Free 7-Day Trial"),
        ("hannah", "welcome.start_trial_no_card", "Start Free Trial (No Card Required)"),
        ("hannah", "welcome.no_payment", "No payment details required"),
        ("hannah", "welcome.sign_in", "Already have account? Sign in"),
        ("hannah", "welcome.value_1", "Track What You Actually Eat"),
        ("hannah", "welcome.value_2", "Text Your Meals Like a Friend"),
        ("hannah", "welcome.value_3", "We Let You Do You"),
        ("handz", "verification.banner", "Verify your email to protect your account."),
        ("handz", "verification.resend", "Resend"),
        ("handz", "verification.verified", "I've verified"),
        ("handz", "credits.label", "Credits: {remaining}/{granted} this month"),
        ("handz", "banner.pro_grace", "Can't verify subscription right now. Some Pro features may pause if this continues."),
        ("handz", "error.invalid_credentials", "Incorrect email or password."),
        ("handz", "error.email_not_found", "No account found for that email."),
        // OKLah §6.1–6.3
        ("oklah", "privacy.title", "Welcome to OKLah"),
        ("oklah", "privacy.bullet_1", "Your privacy comes first"),
        ("oklah", "privacy.bullet_2", "No name, email, or phone needed"),
        ("oklah", "privacy.bullet_3", "Your data stays on your device"),
        ("oklah", "privacy.start", "Start"),
        ("oklah", "onboarding.loading", "Setting things up..."),
        ("oklah", "onboarding.try_again", "Try Again"),
        // SyncWell §5's error table
        ("syncwell", "error.invalid_credentials", "Invalid email or password. Please try again."),
        ("syncwell", "error.email_in_use", "An account with this email already exists. Please sign in."),
        ("syncwell", "error.invalid_id_token", "Authentication with Google/Apple failed. Please try again."),
        ("syncwell", "error.internal", "Something went wrong on our end. Please try again in a few minutes."),
        ("syncwell", "error.reset_token_expired", "This password reset link has expired. Please request a new one."),
    ]

    @Test(arguments: ["handz", "hannah", "oklah", "syncwell"])
    func theConfigServesTheSeedsWords(_ preset: String) async throws {
        try await TestApp.run(.sqlite, preset: preset) { client, _ in
            let response = try await client.execute(uri: "/v1/config", method: .get)
            #expect(response.status == .ok)
            let config = try response.json(PublicConfiguration.self)
            for row in Self.expected where row.preset == preset {
                #expect(config.copy[row.key] == row.text, "\(preset) \(row.key)")
            }
        }
    }
}
