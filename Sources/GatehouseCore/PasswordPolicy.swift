import Foundation
import GatehouseWire

/// One password rule that failed, with a stable code and a sentence for a person.
public struct PasswordProblem: Sendable, Equatable {
    /// `too_short`, `too_long`, `too_few_character_classes`, `common`, `contains_context`, `breached`.
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

/// Decides whether a password is acceptable under a preset's rules. Pure: the blocklist is
/// given to it, and the breached check (network) is the caller's.
public struct PasswordPolicy: Sendable {
    public let settings: PasswordPolicySettings
    private let blocklist: Set<String>
    private let copy: [String: String]

    /// Longer inputs are refused before any hashing or checking.
    public static let maximumBytes = 1_024

    public init(settings: PasswordPolicySettings, blocklist: Set<String>, copy: [String: String] = [:]) {
        self.settings = settings
        self.blocklist = blocklist
        self.copy = copy
    }

    /// Every rule `password` breaks. `context` holds words that must not be the password or
    /// its core (the email's local part, the app's name).
    public func problems(_ password: String, context: [String] = []) -> [PasswordProblem] {
        var problems: [PasswordProblem] = []
        let length = password.unicodeScalars.count
        if password.utf8.count > Self.maximumBytes || length > settings.maxLength {
            problems.append(
                PasswordProblem(
                    code: "too_long", message: text("error.weak_password.max_length", "Password must be at most \(settings.maxLength) characters.")))
            return problems
        }
        if length < settings.minLength {
            problems.append(
                PasswordProblem(
                    code: "too_short",
                    message: text("error.weak_password.min_length", "Password must be at least \(settings.minLength) characters.")))
        }
        if settings.minCharacterClasses > 0 {
            let classes = Self.characterClasses(password)
            if classes < settings.minCharacterClasses {
                problems.append(
                    PasswordProblem(
                        code: "too_few_character_classes",
                        message: text(
                            "error.weak_password.classes",
                            "Password must contain at least \(settings.minCharacterClasses) of: uppercase letters, lowercase letters, numbers and special characters."
                        )))
            }
        }
        if settings.blocklist {
            let folded = password.lowercased()
            if blocklist.contains(folded) || blocklist.contains(Self.core(folded)) {
                problems.append(
                    PasswordProblem(code: "common", message: text("error.weak_password.common", "This password is too common. Choose another one.")))
            } else if context.contains(where: { word in
                let word = word.lowercased()
                return word.count >= 3 && (folded == word || Self.core(folded) == word)
            }) {
                problems.append(
                    PasswordProblem(
                        code: "contains_context",
                        message: text("error.weak_password.context", "Password must not be your email address or the app's name.")))
            }
        }
        return problems
    }

    /// The breached-password problem, for when the caller's range lookup finds the password.
    public var breached: PasswordProblem {
        PasswordProblem(code: "breached", message: text("error.weak_password.breached", "This password has appeared in a data breach. Choose another one."))
    }

    /// How many of upper, lower, digit and other characters the password uses.
    public static func characterClasses(_ password: String) -> Int {
        var upper = false
        var lower = false
        var digit = false
        var other = false
        for character in password {
            if character.isUppercase { upper = true }
            else if character.isLowercase { lower = true }
            else if character.isNumber { digit = true }
            else { other = true }
        }
        return [upper, lower, digit, other].filter { $0 }.count
    }

    /// The password without the digits and symbols people add to a word to pass rules
    /// (`password123!` → `password`).
    static func core(_ text: String) -> String {
        String(text.drop(while: { !$0.isLetter }).reversed().drop(while: { !$0.isLetter }).reversed())
    }

    private func text(_ key: String, _ fallback: String) -> String { copy[key] ?? fallback }
}
