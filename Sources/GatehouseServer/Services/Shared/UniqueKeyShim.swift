import GatehouseStore

// TEMPORARY until the store's typed unique keys land.
enum UniqueKey { case handle, idempotencyKey, other }
extension StoreError {
    var uniqueKey: UniqueKey? {
        guard case .uniqueViolation(let what) = self else { return nil }
        if what.contains("handle") { return .handle }
        if what.contains("idempotency") || what.contains("key_hash") { return .idempotencyKey }
        return .other
    }
}
