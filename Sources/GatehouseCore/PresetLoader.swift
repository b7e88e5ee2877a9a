import Foundation

/// Why a preset could not be used; the message names the preset and the key.
public struct PresetError: Error, Sendable, CustomStringConvertible {
    public var source: String
    public var problems: [String]
    public init(source: String, problems: [String]) {
        self.source = source
        self.problems = problems
    }
    public var description: String {
        "preset \(source): " + problems.joined(separator: "; ")
    }
}

extension Preset {
    /// The names of the presets that ship with Gatehouse.
    public static let builtInNames = ["default", "handz", "oklah", "syncwell", "hannah"]

    /// Decodes and checks a preset document. `source` names it in error messages.
    public static func decode(_ data: Data, source: String) throws(PresetError) -> Preset {
        let preset: Preset
        do {
            let decoder = JSONDecoder()
            decoder.userInfo[.strictKeys] = true
            preset = try decoder.decode(Preset.self, from: data)
        } catch {
            throw PresetError(source: source, problems: [describeDecodingError(error)])
        }
        let problems = preset.problems()
        if !problems.isEmpty {
            throw PresetError(source: source, problems: problems)
        }
        return preset
    }
}
