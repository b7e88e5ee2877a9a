import Foundation
import GatehouseCore

extension SQLStore {
    public func secret(named name: String) async throws(StoreError) -> (value: [UInt8], encryption: String)? {
        try await executor.query("SELECT value, encryption FROM server_secrets WHERE name = ?", [.text(name)]).first.map {
            row throws(StoreError) in (try row.bytes("value"), try row.string("encryption"))
        }
    }

    public func insertSecret(named name: String, value: [UInt8], encryption: String, at date: Date) async throws(StoreError) {
        try await executor.query(
            "INSERT INTO server_secrets (name, value, encryption, created_at) VALUES (?, ?, ?, ?)",
            [.text(name), .blob(value), .text(encryption), .integer(date.unixSeconds)])
    }

    public func updateSecret(named name: String, value: [UInt8], encryption: String) async throws(StoreError) {
        try await executor.query(
            "UPDATE server_secrets SET value = ?, encryption = ? WHERE name = ?", [.blob(value), .text(encryption), .text(name)])
    }
}
