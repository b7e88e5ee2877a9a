import Foundation

/// `Resources/openapi.yaml`, read once (`docs/openapi.yaml` links to it).
enum OpenAPIDocument {
    static let bytes: [UInt8] = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml", subdirectory: "Resources"),
            let data = try? Data(contentsOf: url)
        else { return Array("openapi: 3.1.0\ninfo: {title: Gatehouse, version: '1'}\npaths: {}\n".utf8) }
        return Array(data)
    }()
}
