import Foundation
import GatehouseCore

// The mail section of the configuration (SMTP; without it, the dev outbox).
extension GatehouseConfig {
    /// The SMTP server, the CA it is trusted by and the sender.
    static func readMail(_ settings: inout Settings, into config: inout GatehouseConfig) {
        if let smtp = settings.string("smtp_url") {
            if let components = URLComponents(string: smtp), ["smtp", "smtps"].contains(components.scheme ?? ""),
                components.host?.isEmpty == false
            {
                config.smtpURL = smtp
            } else {
                settings.problem("smtp_url", "must look like smtp://user:pass@host:port")
            }
        }
        if let path = settings.string("smtp_ca_file") {
            if FileManager.default.isReadableFile(atPath: path) { config.smtpCAFile = path } else {
                settings.problem("smtp_ca_file", "cannot read \(path)")
            }
        }
        if let from = settings.string("mail_from") {
            if EmailAddress.isValid(MailComposer.address(in: from)) { config.mailFrom = from } else {
                settings.problem("mail_from", "'\(from)' is not an address like 'App <no-reply@example.com>'")
            }
        }
    }
}
