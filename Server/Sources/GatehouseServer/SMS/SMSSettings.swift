import Foundation

// The SMS section of the configuration.
extension GatehouseConfig {
    /// The SMS sender the settings name: the send hook or Twilio (not both), every part it needs.
    static func smsSender(_ settings: inout Settings) -> SMSSenderSettings? {
        let hookURL = settings.url("sms_hook_url", schemes: ["http", "https"])
        let twilio = settings.string("twilio_account_sid")
        if hookURL != nil, twilio != nil {
            settings.problem("sms_hook_url", "and GATEHOUSE_TWILIO_ACCOUNT_SID are both set; choose one SMS sender")
            return nil
        }
        if let hookURL {
            guard let secret = settings.string("sms_hook_secret") else {
                settings.problem("sms_hook_secret", "is required when GATEHOUSE_SMS_HOOK_URL is set")
                return nil
            }
            guard let bytes = HookCaller.secretBytes(secret) else {
                settings.problem("sms_hook_secret", "must be a Standard Webhooks secret: whsec_ and at least 16 bytes in base64")
                return nil
            }
            var format = HookFormat.gatehouse
            if let text = settings.string("sms_hook_format") {
                guard let named = HookFormat(rawValue: text.lowercased()) else {
                    settings.problem("sms_hook_format", "'\(text)' is not gatehouse or supabase")
                    return nil
                }
                format = named
            }
            return .hook(url: hookURL, secret: bytes, format: format)
        }
        guard let sid = twilio else { return nil }
        guard let token = settings.string("twilio_auth_token") else {
            settings.problem("twilio_auth_token", "is required when GATEHOUSE_TWILIO_ACCOUNT_SID is set")
            return nil
        }
        let sender: TwilioSettings.Sender
        switch (settings.string("twilio_from"), settings.string("twilio_messaging_service_sid")) {
        case (let from?, nil): sender = .from(from)
        case (nil, let service?): sender = .messagingService(service)
        default:
            settings.problem("twilio_from", "or GATEHOUSE_TWILIO_MESSAGING_SERVICE_SID must be set, one of them")
            return nil
        }
        let apiURL = settings.url("twilio_api_url", schemes: ["http", "https"]) ?? TwilioSettings.defaultAPIURL
        return .twilio(TwilioSettings(accountSID: sid, authToken: token, sender: sender, apiURL: apiURL))
    }
}
