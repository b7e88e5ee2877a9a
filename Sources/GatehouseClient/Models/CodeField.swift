import GatehouseCore

/// The code field of a second factor, shared by the sign-in's code step (`SecondFactorModel`)
/// and the step-up prompt (`StepUpPrompt`): its labels in the preset's words, and when what was
/// typed can be sent.
enum CodeField {
    /// The field's label: the app's 6-digit code, or a recovery code.
    static func label(_ copy: [String: String], recovery: Bool) -> String {
        recovery ? copy["mfa.recovery_code_label"] ?? "Recovery code" : copy["mfa.code_label"] ?? "6-digit code"
    }

    /// The switch between the app's code and a recovery code.
    static func switchLabel(_ copy: [String: String], recovery: Bool) -> String {
        recovery ? copy["mfa.use_app"] ?? "Use your authenticator app" : copy["mfa.use_recovery_code"] ?? "Use a recovery code instead"
    }

    static func verifyLabel(_ copy: [String: String]) -> String { copy["mfa.verify"] ?? "Verify" }
    static func cancelLabel(_ copy: [String: String]) -> String { copy["mfa.cancel"] ?? "Cancel" }

    /// What Verify says of a code that is not whole yet (issue 64), in the preset's words: the
    /// app's six digits, or a recovery code's form (16 letters and digits, hyphens and spaces
    /// ignored).
    static func incompleteMessage(_ copy: [String: String], recovery: Bool) -> String {
        recovery
            ? copy["mfa.recovery_code_incomplete"] ?? "Enter a recovery code as you saved it: 16 letters and digits, like abcd-efgh-2345-ijkl."
            : copy["mfa.code_incomplete"] ?? "Enter the 6-digit code from your authenticator app."
    }

    /// Whether `typed` is a whole code: six digits for an app, or a recovery code's form.
    static func isComplete(_ typed: String, recovery: Bool) -> Bool {
        recovery ? RecoveryCodes.normalize(typed) != nil : digits(typed).count == 6
    }

    /// The digits of a code as typed (authenticator apps show `123 456`); empty when it holds
    /// anything else.
    static func digits(_ typed: String) -> String {
        let kept = typed.filter { $0 != " " }
        return kept.allSatisfy { $0.isASCII && $0.isNumber } ? kept : ""
    }
}
