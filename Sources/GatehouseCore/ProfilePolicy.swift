import Foundation
import GatehouseWire

/// Display name and avatar rules.
public enum ProfilePolicy {
    /// 1–50 characters after trimming, no control characters; the trimmed name, or `nil`.
    public static func displayName(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...50).contains(trimmed.count),
            !trimmed.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) || $0.properties.generalCategory == .format && $0 != "\u{200D}" })
        else { return nil }
        return trimmed
    }

    /// An `https://` URL with a host, 2,048 characters at most.
    public static func isValidAvatarURL(_ text: String) -> Bool {
        guard text.utf8.count <= 2_048, let url = URL(string: text), url.scheme?.lowercased() == "https",
            let host = url.host, !host.isEmpty, url.user == nil
        else { return false }
        return !text.unicodeScalars.contains { $0.value < 0x21 || $0.value == 0x7f }
    }
}
