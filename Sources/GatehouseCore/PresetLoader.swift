import Foundation
import GatehouseWire

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

    /// Decodes and checks a preset document laid over `base` (another preset's document): a key
    /// the document leaves out has `base`'s value, an object in both is laid over key by key
    /// (so `copy` keeps `base`'s words for the keys it does not name), anything else replaces.
    public static func decode(_ data: Data, over base: Data, source: String) throws(PresetError) -> Preset {
        let merged: Data
        do {
            guard let top = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw PresetError(source: source, problems: ["the document is not a JSON object"])
            }
            let under = try JSONSerialization.jsonObject(with: base) as? [String: Any] ?? [:]
            merged = try JSONSerialization.data(withJSONObject: laid(top, over: under))
        } catch let error as PresetError {
            throw error
        } catch {
            throw PresetError(source: source, problems: [describeDecodingError(error)])
        }
        return try decode(merged, source: source)
    }

    private static func laid(_ top: [String: Any], over base: [String: Any]) -> [String: Any] {
        base.merging(top) { under, over in
            if let under = under as? [String: Any], let over = over as? [String: Any] { return laid(over, over: under) }
            return over
        }
    }

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
