// Stand-ins for what docs/sdk.md's snippets name from Apple's frameworks, so the snippets type-check
// on Linux too. On Apple platforms the SDK's own types are used.
#if !canImport(Security)
import Foundation
import GatehouseClient

/// The Keychain store exists on Apple platforms only; a file store stands in for it here.
struct KeychainTokenStore: TokenStore {
    let file: FileTokenStore

    init(service: String) {
        file = FileTokenStore(url: URL(fileURLWithPath: "/tmp/\(service).session"))
    }

    func load() throws -> StoredSession? { try file.load() }
    func save(_ session: StoredSession) throws { try file.save(session) }
    func clear() throws { try file.clear() }
}
#endif
