import GatehouseCore
import GatehouseWire

// The wire shapes of stored records, made in one place for every answer that lists them.

extension EventEntry {
    init(_ event: DomainEvent) {
        self.init(
            id: event.id.uuidString.lowercased(), cursor: String(event.sequence ?? 0), type: event.type.rawValue,
            userID: event.userID?.description, data: event.data, createdAt: event.createdAt.rfc3339)
    }
}

extension AuditEntry {
    init(_ event: AuditEvent) {
        self.init(
            id: event.id.uuidString.lowercased(), createdAt: event.createdAt.rfc3339, event: event.event.rawValue,
            outcome: event.outcome.rawValue, userID: event.userID?.description, sessionID: event.sessionID?.description,
            ipAddress: event.ipAddress, userAgent: event.userAgent, details: event.details)
    }
}

extension SessionInfo {
    init(_ session: Session, current: SessionID) {
        self.init(
            id: session.id.description, createdAt: session.createdAt.rfc3339, lastActiveAt: session.lastActiveAt.rfc3339,
            userAgent: session.userAgent, provider: session.provider, current: session.id == current)
    }
}
