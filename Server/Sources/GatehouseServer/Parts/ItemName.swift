import Foundation
import GatehouseCore
import GatehouseWire

/// The name a person gives something of theirs (a passkey, an authenticator app): trimmed, 1–64
/// characters without control characters; `fallback` when none is given, 400 otherwise.
func itemName(_ name: String?, fallback: String, what: String) throws -> String {
    guard let name else { return fallback }
    let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
    guard (1...64).contains(trimmed.count), !trimmed.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) else {
        throw GatehouseError.invalidRequest("\(what) name is 1 to 64 characters long.")
    }
    return trimmed
}
