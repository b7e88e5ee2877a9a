import Foundation

/// `Resources/openapi.yaml` (`docs/openapi.yaml` links to it), served at `GET /openapi.yaml`.
enum OpenAPIDocument {
    /// Read once at start-up; a build without it is broken and does not start.
    static func load() throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml", subdirectory: "Resources") else {
            throw ConfigurationError(problems: ["the OpenAPI document is missing from the build"])
        }
        return Array(try Data(contentsOf: url))
    }
}
