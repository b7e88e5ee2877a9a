import Foundation

/// The shipped blocklist (`Resources/common-passwords.txt`, see its `.md` for provenance).
enum CommonPasswords {
    static func load() throws -> Set<String> {
        guard let url = Bundle.module.url(forResource: "common-passwords", withExtension: "txt", subdirectory: "Resources") else {
            throw KeyRingError("the common-password list is missing from this build")
        }
        let text = try String(contentsOf: url, encoding: .utf8)
        return Set(text.split(whereSeparator: \.isNewline).map { $0.lowercased() })
    }
}
