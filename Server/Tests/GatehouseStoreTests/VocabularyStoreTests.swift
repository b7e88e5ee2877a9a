import Foundation
import GatehouseCore
@testable import GatehouseStore
import GatehouseTestSupport
import Testing

/// The server's closed sets (issue 42) as the database keeps them: every member written is read
/// back as itself, on both databases, so a member added to a set is stored like the others.
@Suite struct VocabularyStoreTests {
    @Test(arguments: Backend.available)
    func everyMemberOfTheServersSetsIsStoredAsItself(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let owner = User(id: .random(), createdAt: Date(unixSeconds: 1_800_000_000))
            try await store.insertUser(owner)
            let now = Date(unixSeconds: 1_800_000_100)

            for reason in SessionRevokeReason.allCases {
                let session = Session(userID: owner.id, provider: .email, createdAt: now)
                try await store.insertSession(session)
                #expect(try await store.revokeSession(session.id, reason: reason, at: now))
                #expect(try await store.session(id: session.id)?.revokedReason == reason.rawValue, "\(reason)")
            }

            for name in AuditEvent.Name.allCases {
                try await store.insertAudit(AuditEvent(createdAt: now, event: name, outcome: .success, userID: owner.id))
            }
            let audit = try await store.auditEvents(userID: owner.id, before: nil, limit: 500)
            #expect(Set(audit.map(\.event)) == Set(AuditEvent.Name.allCases))

            for kind in DomainEvent.Kind.allCases {
                try await store.insertEvent(DomainEvent(type: kind, userID: owner.id, data: [:], createdAt: now))
            }
            let feed = try await store.events(after: nil, userID: owner.id, limit: 500)
            #expect(feed.map(\.type) == DomainEvent.Kind.allCases)
        }
    }
}
