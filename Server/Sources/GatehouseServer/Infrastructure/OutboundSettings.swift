import Foundation

// The outbound section of the configuration: CAPTCHA and event webhooks.
extension GatehouseConfig {
    /// The CAPTCHA verifier and the event webhooks' endpoint and secret.
    static func readOutbound(_ settings: inout Settings, into config: inout GatehouseConfig) {
        if let url = settings.url("captcha_verify_url", schemes: ["http", "https"]) { config.captchaVerifyURL = url }
        config.captchaSecret = settings.string("captcha_secret")
        if config.captchaVerifyURL != nil, config.captchaSecret == nil {
            settings.problem("captcha_secret", "is required when GATEHOUSE_CAPTCHA_VERIFY_URL is set")
        }
        if let url = settings.url("webhook_url", schemes: ["http", "https"]) { config.webhookURL = url }
        config.webhookSecret = settings.string("webhook_secret")
        if config.webhookURL != nil, config.webhookSecret == nil {
            settings.problem("webhook_secret", "is required when GATEHOUSE_WEBHOOK_URL is set")
        }
    }
}
