import Foundation
import GatehouseCore
import GatehouseWire

/// Finds presets: the five shipped with Gatehouse by name, or any file by path.
public enum PresetLibrary {
    /// The shipped preset files (`Resources/presets/<name>.json`).
    public static func builtInURL(_ name: String) -> URL? {
        Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Resources/presets")
    }

    /// Loads `source`: a built-in name (`default`, `handz`, …) or a path to a JSON file.
    public static func load(_ source: String) -> Result<Preset, PresetError> {
        let url: URL
        if Preset.builtInNames.contains(source) {
            guard let builtIn = builtInURL(source) else {
                return .failure(PresetError(source: source, problems: ["the built-in preset file is missing from this build"]))
            }
            url = builtIn
        } else if source.contains("/") || source.hasSuffix(".json") {
            url = URL(fileURLWithPath: source)
        } else {
            return .failure(
                PresetError(
                    source: "'\(source)'",
                    problems: ["not a built-in preset (\(Preset.builtInNames.joined(separator: ", "))) or a path to a JSON file"]))
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            return .failure(PresetError(source: source, problems: ["cannot read \(url.path): \(GatehouseConfig.reason(error))"]))
        }
        do {
            // A file of the operator's own needs only `name`: what it leaves out is the `default`
            // preset's (issue 41: such a file had passkeys off where `default` has them on).
            if !Preset.builtInNames.contains(source), let defaults = builtInURL("default"), let base = try? Data(contentsOf: defaults) {
                return .success(try Preset.decode(data, over: base, source: source))
            }
            return .success(try Preset.decode(data, source: source))
        } catch {
            return .failure(error)
        }
    }
}
