import Foundation
import GatehouseCore
@testable import GatehouseServer
import Testing

/// Every mail the server makes from a template has its words (issue 42: `MailKind` is closed,
/// so a new kind is named here by the loop). The operator's test mail is written out in full.
@Suite struct MailKindTests {
    @Test func everyTemplatedMailKindHasItsWords() throws {
        let templates = try Templates(preset: try PresetLibrary.load("default").get())
        for kind in MailKind.allCases {
            switch kind {
            case .test:
                #expect(Templates.mailDefaults[kind.rawValue] == nil)
            case .verification, .passwordReset, .magicLink, .passwordChanged, .newSignIn, .mfaFactorAdded, .mfaFactorRemoved,
                .recoveryCodeUsed, .phoneChanged:
                #expect(Templates.mailDefaults[kind.rawValue]?["subject"] != nil, "\(kind)")
                let mail = templates.mail(kind, link: URL(string: "https://example.com/x"), code: "123456", values: ["minutes": "15", "hours": "24"])
                #expect(!mail.subject.isEmpty && !mail.subject.contains("{") && !mail.text.isEmpty, "\(kind): \(mail.subject)")
            }
        }
    }
}
