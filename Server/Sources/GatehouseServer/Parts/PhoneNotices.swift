import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// What a change to an account's number tells its owner (issue 58), queued in the change's own
/// unit of work so it goes out if and only if the change committed: a mail to the account's
/// verified address (`phone_changed`), and a text to a proved number that left the account, in
/// the preset's words. Numbers are shown masked. The texts need no budget of their own: each
/// follows a change that a code (itself under every SMS defence) had to prove.
struct PhoneNotices: Sendable {
    let mail: AccountMail
    let preset: Preset

    enum Change: Sendable, Equatable {
        case added(number: String)
        case replaced(old: String, number: String)
        case removed(old: String)

        /// What proving `number` on an account that had `old` (proved or not) changes; nil when
        /// the account had this very number proved already.
        init?(old: String?, proved: Bool, number: String) {
            switch old {
            case nil: self = .added(number: number)
            case number?:
                guard !proved else { return nil }
                self = .added(number: number)
            case let old?: self = .replaced(old: old, number: number)
            }
        }

        /// The number that left the account, if one did.
        var leaving: String? {
            switch self {
            case .added: nil
            case .replaced(let old, _), .removed(let old): old
            }
        }
    }

    /// Queues the notices of `change` to `user` (as it was before the change: its address and
    /// whether its old number was proved).
    func queue(_ work: Work<some Sendable>, user: User, change: Change) async throws {
        try await mail.queueSecurityNotice(work, user: user, kind: .phoneChanged, values: ["change": sentence(change)])
        // Only a proved number is texted: an unproved one may be a stranger's.
        if let old = change.leaving, user.phoneVerifiedAt != nil {
            let text = fill(preset.text("sms.number_removed", "{app}: this number was removed from an account. If you did not ask for this, contact {app} support."))
            try await work.enqueueMail(
                OutboxMessage(
                    createdAt: work.now, kind: PhoneCodes.outboxKind, recipient: old, subject: SMSMessage.notice, textBody: text, htmlBody: nil,
                    payload: ["purpose": SMSMessage.notice]))
        }
    }

    /// The mail's `{change}`: one sentence from the preset's copy.
    func sentence(_ change: Change) -> String {
        switch change {
        case .added(let number):
            fill(preset.text("mail.phone_changed.added", "The number {number} was added to your {app} account"), number: number)
        case .replaced(let old, let number):
            fill(preset.text("mail.phone_changed.replaced", "The number of your {app} account changed from {old} to {number}"), number: number, old: old)
        case .removed(let old):
            fill(preset.text("mail.phone_changed.removed", "The number {old} was removed from your {app} account"), old: old)
        }
    }

    private func fill(_ template: String, number: String? = nil, old: String? = nil) -> String {
        var text = template.replacingOccurrences(of: "{app}", with: preset.app.name)
        if let number { text = text.replacingOccurrences(of: "{number}", with: SMSDefences.masked(e164: number)) }
        if let old { text = text.replacingOccurrences(of: "{old}", with: SMSDefences.masked(e164: old)) }
        return text
    }
}
