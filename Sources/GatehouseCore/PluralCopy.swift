import GatehouseWire
/// Copy with a count in it, in the forms English needs. A preset writes the `other` form under
/// the key itself (`"trial.days_left": "{days} days left in trial"`) and may add `key.one`
/// (`"1 day left in trial"`) and `key.zero` (`"Last day of your trial"`); a missing form falls
/// back to the next (zero → other, one → other). The server checks presets with it and the SDK
/// shows banners with it, so both read a preset's copy the same way.
public enum PluralCopy {
    /// The built-in words when a preset has none.
    public struct Forms: Sendable, Equatable {
        public var zero: String?
        public var one: String?
        public var other: String

        public init(zero: String? = nil, one: String? = nil, other: String) {
            self.zero = zero
            self.one = one
            self.other = other
        }
    }

    /// The form for `count` from `copy` (else `fallback`), with `{placeholder}` replaced by it.
    public static func text(_ copy: [String: String], _ key: String, count: Int, placeholder: String, fallback: Forms) -> String {
        let other = copy[key] ?? fallback.other
        let form: String
        switch count {
        case 0: form = copy["\(key).zero"] ?? (copy[key] == nil ? fallback.zero : nil) ?? other
        case 1: form = copy["\(key).one"] ?? (copy[key] == nil ? fallback.one : nil) ?? other
        default: form = other
        }
        return form.replacingOccurrences(of: "{\(placeholder)}", with: String(count))
    }

    /// The plural keys (`….one`, `….zero`) of `copy` whose `other` form is missing.
    public static func orphans(in copy: [String: String]) -> [String] {
        copy.keys.filter { key in
            for suffix in [".one", ".zero"] where key.hasSuffix(suffix) {
                return copy[String(key.dropLast(suffix.count))] == nil
            }
            return false
        }.sorted()
    }
}
