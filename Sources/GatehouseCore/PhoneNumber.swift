import Foundation

/// A phone number in canonical E.164 form (`+14155550100`).
///
/// The one place that holds the rules for phone numbers: which characters people type, how an
/// international or trunk prefix is recognised, and which lengths each calling code allows. The
/// facts come from one table, `plans`, taken from Google's libphonenumber metadata.
public struct PhoneNumber: Sendable, Hashable, CustomStringConvertible {
    /// `+` and the digits: the canonical form, the key a number is stored under.
    public let e164: String
    /// The country calling code without `+` ("1", "44").
    public let callingCode: String
    /// The national significant number (digits after the calling code).
    public let nationalNumber: String

    /// The E.164 form.
    public var description: String { e164 }

    /// Why an input is not a number Gatehouse accepts.
    public enum Refusal: Error, Sendable, Equatable {
        /// Nothing but spaces and punctuation.
        case empty
        /// Letters (no vanity numbers), or characters a phone number never has, or more than 40
        /// characters.
        case notANumber
        /// The default region is not in the table, and the input has no international prefix to
        /// name its calling code.
        case unknownRegion
        /// The digits after `+` or the international prefix begin with no calling code the table
        /// knows.
        case unknownCallingCode
        /// Not one of the national-number lengths its calling code allows.
        case impossibleLength
    }

    private init(callingCode: String, nationalNumber: String) {
        self.callingCode = callingCode
        self.nationalNumber = nationalNumber
        e164 = "+" + callingCode + nationalNumber
    }

    /// Parses a number as people type it, with `defaultRegion` (ISO 3166 alpha-2, e.g. "US", "GB")
    /// used when the input has no international prefix.
    ///
    /// Accepted: `+` and the calling code (`+44 20 7946 0958`, `+44 (0)20 7946 0958`); the default
    /// region's international prefix and the calling code (`0044…` in GB, `011 44…` in the US);
    /// the national format, with the region's trunk prefix (`020 7946 0958` in GB, `1 415 555 0100`
    /// in the US) or without one. Spaces, non-breaking spaces, `-` (and the Unicode dashes), `.`,
    /// `(`, `)` and `/` are ignored. Letters, extensions and anything else are refused.
    public static func parse(_ input: String, defaultRegion: String) throws(Refusal) -> PhoneNumber {
        let (digits, international) = try digitsTyped(in: input)
        guard !digits.isEmpty else { throw .empty }
        let plan: Plan
        var rest = Substring(digits)
        if international {
            (plan, rest) = try splitCallingCode(rest)
        } else {
            guard let home = plansByRegion[defaultRegion.uppercased()] else { throw .unknownRegion }
            // Country calling codes never begin with 0, so the prefix is only taken as one when a
            // non-zero digit follows it (as libphonenumber does).
            if let length = home.internationalPrefixLength(in: rest), rest.dropFirst(length).first != "0" {
                (plan, rest) = try splitCallingCode(rest.dropFirst(length))
            } else {
                plan = home
                // Too long for a national number but beginning with the region's own calling code
                // (`44 20 7946 0958` in GB): the `+` was left out, as libphonenumber also decides.
                if rest.count > home.longest, rest.hasPrefix(home.code) {
                    rest = home.withoutTrunkPrefix(rest.dropFirst(home.code.count))
                }
            }
        }
        let national = plan.withoutTrunkPrefix(rest)
        guard plan.lengths.contains(national.count) else { throw .impossibleLength }
        return PhoneNumber(callingCode: plan.code, nationalNumber: String(national))
    }

    /// The calling code of a region ("US" -> "1"), nil when the table does not know it.
    public static func callingCode(ofRegion region: String) -> String? {
        plansByRegion[region.uppercased()]?.code
    }

    /// The main region of a calling code ("1" -> "US", "44" -> "GB"), nil for an unknown code or
    /// one of no region (+800).
    public static func mainRegion(ofCallingCode code: String) -> String? {
        plansByCode[code]?.regions.first
    }

    /// The leading digits shared by a block of numbers (the E.164 without its last 3 digits), the
    /// key of per-range sending limits.
    public var rangeKey: String { String(e164.dropLast(3)) }
}

// MARK: - Reading the input

extension PhoneNumber {
    /// The longest input looked at: E.164 has at most 15 digits, so 40 characters leaves room for
    /// every way of typing one and refuses pasted text.
    private static let maximumInputLength = 40

    /// The ASCII digits of `input`, and whether it began with `+`.
    private static func digitsTyped(in input: String) throws(Refusal) -> (digits: String, international: Bool) {
        var digits = ""
        var international = false
        var count = 0
        for scalar in input.unicodeScalars {
            count += 1
            guard count <= maximumInputLength else { throw .notANumber }
            switch scalar {
            case "0"..."9":
                digits.unicodeScalars.append(scalar)
            case "+":
                // Only in front: a `+` after a digit, or a second one, is not how numbers are written.
                guard digits.isEmpty, !international else { throw .notANumber }
                international = true
            case " ", "\t", "\n", "\r", "\u{00A0}", "\u{2007}", "\u{2009}", "\u{202F}",
                 "-", "\u{2010}"..."\u{2015}", "\u{2212}", ".", "(", ")", "/":
                continue
            default:
                throw .notANumber
            }
        }
        return (digits, international)
    }

    /// The plan of the calling code `digits` begins with, and the digits after it. Calling codes
    /// are a prefix code (no code begins another), so the first match is the only one.
    private static func splitCallingCode(_ digits: Substring) throws(Refusal) -> (Plan, Substring) {
        for length in 1...3 where digits.count >= length {
            if let plan = plansByCode[String(digits.prefix(length))] {
                return (plan, digits.dropFirst(length))
            }
        }
        throw .unknownCallingCode
    }
}

// MARK: - The table

extension PhoneNumber {
    /// What a national number may begin with before its significant digits, when dialled at home.
    enum TrunkPrefix: Sendable {
        /// None: a leading 0 is part of the number (Italy), or the region has no trunk prefix.
        case absent
        /// Stripped whenever present: no national number of the plan begins with it.
        case strip(String)
        /// Some national numbers begin with this digit too (Russia's 8 800…, India's 0…), so it is
        /// stripped only when what remains has a possible length or is too long: libphonenumber
        /// decides by its number patterns, for which the lengths stand in here.
        case stripIfFits(String)
    }

    /// One calling code's numbering plan.
    struct Plan: Sendable {
        /// The calling code, without `+`.
        let code: String
        /// The regions that use it, the main one (whose lengths these are) first; none for the
        /// non-geographic codes (+800, +882…).
        let regions: [String]
        /// The possible lengths of the national significant number.
        let lengths: [Int]
        /// The trunk prefix dialled before national numbers.
        let trunk: TrunkPrefix
        /// The international dialling prefix of its regions, as libphonenumber's pattern (digits
        /// and a few classes and alternatives); empty for non-geographic codes.
        let idd: String

        init(_ code: String, _ regions: [String], _ lengths: [Int], _ trunk: TrunkPrefix, idd: String) {
            (self.code, self.regions, self.lengths, self.trunk, self.idd) = (code, regions, lengths, trunk, idd)
        }

        /// The number of leading digits of `digits` that are this plan's international prefix.
        func internationalPrefixLength(in digits: Substring) -> Int? {
            guard !idd.isEmpty else { return nil }
            if idd.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) {
                return digits.hasPrefix(idd) ? idd.count : nil
            }
            // The few patterns with classes or alternatives (Singapore's `0[0-3]\d`): compiled per
            // call, which keeps the table plain data; an unreadable pattern is a missing prefix.
            guard let pattern = try? Regex(idd), let match = digits.prefixMatch(of: pattern) else { return nil }
            return digits.distance(from: digits.startIndex, to: match.range.upperBound)
        }

        /// `digits` without the trunk prefix, when it begins with one.
        func withoutTrunkPrefix(_ digits: Substring) -> Substring {
            switch trunk {
            case .absent:
                return digits
            case .strip(let prefix):
                return digits.hasPrefix(prefix) ? digits.dropFirst(prefix.count) : digits
            case .stripIfFits(let prefix):
                guard digits.hasPrefix(prefix) else { return digits }
                let rest = digits.dropFirst(prefix.count)
                return lengths.contains(rest.count) || rest.count > longest ? rest : digits
            }
        }

        /// The longest possible national number.
        var longest: Int { lengths.max() ?? 0 }
    }

    private static let plansByCode: [String: Plan] = Dictionary(uniqueKeysWithValues: plans.map { ($0.code, $0) })

    private static let plansByRegion: [String: Plan] = Dictionary(
        uniqueKeysWithValues: plans.flatMap { plan in plan.regions.map { ($0, plan) } })
}
