import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Operators write an account's `user_metadata` and `app_metadata` natively (issue 46): the
/// admin API's `PATCH /admin/v1/users/{id}/metadata` and the console's user page, each through
/// `OperatorService.setMetadata` (a top-level merge, `null` removes a key, 4096 bytes each),
/// audited `metadata_changed` with the tool as `by`.
@Suite struct OperatorMetadataTests {
    /// The app's token's view of the account's two objects.
    static func metadata(_ api: AuthClient, _ token: String) async throws -> (user: [String: JSONValue], app: [String: JSONValue]) {
        let me = try await api.get("/v1/me", token: token)
        #expect(me.status == .ok, "\(me.text)")
        let user = try me.json(MeResponse.self).user
        return (user.userMetadata, user.appMetadata)
    }

    /// The account's `metadata_changed` rows, by kind (then by actor), as their details.
    static func metadataRows(_ client: any TestClientProtocol, _ user: String) async throws -> [[String: String]] {
        let audit = try await client.execute(uri: "/admin/v1/audit?user_id=\(user)&limit=100", method: .get, headers: TestApp.adminHeaders)
        #expect(audit.status == .ok, "\(audit.text)")
        let rows = try audit.json(AuditList.self).events.filter { $0.event == "metadata_changed" }
        #expect(rows.map(\.outcome) == Array(repeating: "success", count: rows.count))
        return rows.map(\.details).sorted { ($0["kind"] ?? "", $0["by"] ?? "") < ($1["kind"] ?? "", $1["by"] ?? "") }
    }

    /// The admin key merges both objects and answers the account as `GET /admin/v1/users/{id}`
    /// does; the holder's token reads them; `null` removes a key; an object over 4096 bytes is
    /// refused and nothing is written; an unknown account is 404 and no admin key 401; each
    /// object changed is audited once with `by: operator`.
    @Test(arguments: Backend.available)
    func theAdminAPIMergesBothObjects(_ backend: Backend) async throws {
        try await TestApp.run(backend) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("operator.metadata@example.com")
            let id = account.user.id
            let token = account.session.accessToken
            func patch(_ reference: String, _ json: String, headers: HTTPFields = TestApp.adminHeaders) async throws -> TestResponse {
                try await client.execute(
                    uri: Endpoints.adminSetMetadata.path.expand(reference), method: .patch, headers: headers, body: ByteBuffer(string: json))
            }
            func shown() async throws -> AdminUser {
                try await client.execute(uri: Endpoints.adminUser.path.expand(id), method: .get, headers: TestApp.adminHeaders).json(AdminUser.self)
            }
            #expect(Endpoints.adminSetMetadata.path.expand(id) == "/admin/v1/users/\(id)/metadata")
            #expect(account.user.appMetadata == [:] && account.user.userMetadata == [:])

            let first = try await patch(id, #"{"app_metadata": {"roles": ["editor"]}, "user_metadata": {"color": "teal"}}"#)
            #expect(first.status == .ok, "\(first.text)")
            let answered = try first.json(AdminUser.self)
            #expect(answered.user.id == id)
            #expect(answered.user.appMetadata == ["roles": .array([.string("editor")])])
            #expect(answered.user.userMetadata == ["color": .string("teal")])
            #expect(try await shown() == answered)
            var seen = try await Self.metadata(api, token)
            #expect(seen.app == ["roles": .array([.string("editor")])])
            #expect(seen.user == ["color": .string("teal")])

            // A top-level merge: `null` removes `roles`, `tier` is added, user_metadata stays.
            let second = try await patch(id, #"{"app_metadata": {"roles": null, "tier": 2}}"#)
            #expect(second.status == .ok, "\(second.text)")
            let merged = try second.json(AdminUser.self).user
            #expect(merged.appMetadata == ["tier": .number(2)])
            #expect(merged.userMetadata == ["color": .string("teal")])
            seen = try await Self.metadata(api, token)
            #expect(seen.app == ["tier": .number(2)])
            #expect(seen.user == ["color": .string("teal")])

            // Over the limit: 400, and neither object changes (the user_metadata in the same body neither).
            let big = String(repeating: "x", count: 5_000)
            let over = try await patch(id, #"{"user_metadata": {"color": "red"}, "app_metadata": {"note": "\#(big)"}}"#)
            #expect(over.status == .badRequest, "\(over.text)")
            #expect(over.error?.code == .invalidRequest)
            #expect(over.error?.message == "app_metadata may hold at most 4096 bytes of JSON.")

            let unknown = try await patch(UUID().uuidString.lowercased(), #"{"app_metadata": {"tier": 3}}"#)
            #expect(unknown.status == .notFound, "\(unknown.text)")
            #expect(unknown.error?.code == .notFound)
            let keyless = try await patch(id, #"{"app_metadata": {"tier": 3}}"#, headers: [.contentType: "application/json"])
            #expect(keyless.status == .unauthorized)
            #expect(keyless.error?.code == .unauthorized)
            // The holder's own token is not the admin key.
            let bearer: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(token)"]
            let holder = try await patch(id, #"{"app_metadata": {"tier": 3}}"#, headers: bearer)
            #expect(holder.status == .unauthorized)
            #expect(holder.error?.code == .unauthorized)

            let after = try await shown()
            #expect(after.user.appMetadata == ["tier": .number(2)])
            #expect(after.user.userMetadata == ["color": .string("teal")])
            seen = try await Self.metadata(api, token)
            #expect(seen.app == ["tier": .number(2)])
            #expect(seen.user == ["color": .string("teal")])

            // One row per object changed: two writes of app_metadata, one of user_metadata.
            #expect(
                try await Self.metadataRows(client, id) == [
                    ["kind": "app_metadata", "by": "operator"], ["kind": "app_metadata", "by": "operator"],
                    ["kind": "user_metadata", "by": "operator"],
                ])
        }
    }

    /// The console's user page shows both objects as escaped, indented JSON and prefills its
    /// form with them; posted (with the session's CSRF token), each object is merged, the app's
    /// token sees it and the trail says `by: admin_console`. JSON that is not one object, an
    /// object over the limit and a form without its token are refused and change nothing; a
    /// blank field leaves its object.
    @Test(arguments: Backend.available)
    func theConsoleShowsAndEditsBothObjects(_ backend: Backend) async throws {
        try await TestApp.run(backend, clock: ManualClock(Date())) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("console.metadata@example.com")
            let id = account.user.id
            let token = account.session.accessToken
            let held = try await AccountTests.patch(api, token, #"{"user_metadata": {"color": "teal", "note": "<b>hi</b>"}}"#)
            #expect(held.status == .ok, "\(held.text)")
            let seeded = try await client.execute(
                uri: "/admin/v1/users/\(id)/metadata", method: .patch, headers: TestApp.adminHeaders,
                body: ByteBuffer(string: #"{"app_metadata": {"roles": ["editor"]}}"#))
            #expect(seeded.status == .ok, "\(seeded.text)")

            let (_, signedIn) = try await ConsoleTests.Console.signIn(client)
            let console = try #require(signedIn)
            let path = "/admin/users/\(id)/metadata"
            let page = try await console.get("/admin/users/\(id)")
            #expect(page.status == .ok && page.text.contains(#"data-page="user""#))
            // Escaped as every value of the page is: quotes and the holder's markup are text.
            let app = "{\n  &quot;roles&quot; : [\n    &quot;editor&quot;\n  ]\n}"
            let user = "{\n  &quot;color&quot; : &quot;teal&quot;,\n  &quot;note&quot; : &quot;&lt;b&gt;hi&lt;/b&gt;&quot;\n}"
            #expect(page.text.contains(#"<pre data-metadata="app_metadata">"# + app + "</pre>"))
            #expect(page.text.contains(#"<pre data-metadata="user_metadata">"# + user + "</pre>"))
            #expect(page.text.contains(#"<textarea class="mono" name="app_metadata" rows="6" spellcheck="false">"# + app + "</textarea>"))
            #expect(page.text.contains(#"<textarea class="mono" name="user_metadata" rows="6" spellcheck="false">"# + user + "</textarea>"))
            #expect(page.text.contains(#"<form id="metadata-form" method="post" action="/admin/users/\#(id)/metadata">"#))
            #expect(!page.text.contains("<b>hi</b>"))

            // Without the session's token: 403, nothing written.
            let forged = try await console.post(path, ["app_metadata": #"{"roles": ["admin"]}"#], csrf: .some(nil))
            #expect(forged.status == .forbidden && forged.text.contains(#"data-page="forbidden""#))

            let saved = try await console.post(path, ["app_metadata": #"{"roles": null, "plan": "gold"}"#, "user_metadata": #"{"color": "navy"}"#])
            #expect(saved.status == .seeOther, "\(saved.text)")
            #expect(saved.headers[.location] == "/admin/users/\(id)?notice=metadata_set")
            var seen = try await Self.metadata(api, token)
            #expect(seen.app == ["plan": .string("gold")])
            #expect(seen.user == ["color": .string("navy"), "note": .string("<b>hi</b>")])
            let reloaded = try await console.get("/admin/users/\(id)?notice=metadata_set").text
            #expect(reloaded.contains(#"data-notice="metadata_set""#))
            #expect(reloaded.contains(#"<pre data-metadata="app_metadata">{\#n  &quot;plan&quot; : &quot;gold&quot;\#n}</pre>"#))

            // Not one JSON object: the page again with the reason, 400; the valid other field is not written either.
            let unterminated = try await console.post(path, ["app_metadata": #"{"roles": ["admin"]"#, "user_metadata": #"{"color": "red"}"#])
            #expect(unterminated.status == .badRequest)
            #expect(unterminated.text.contains(#"data-error="invalid_request">app_metadata must be one JSON object.</p>"#))
            #expect(unterminated.text.contains(#"data-page="user""#))
            #expect(unterminated.text.contains(#"<pre data-metadata="app_metadata">{\#n  &quot;plan&quot; : &quot;gold&quot;\#n}</pre>"#))
            let array = try await console.post(path, ["app_metadata": "{}", "user_metadata": #"["color", "red"]"#])
            #expect(array.status == .badRequest)
            #expect(array.text.contains(#"data-error="invalid_request">user_metadata must be one JSON object.</p>"#))
            let twice = try await console.post(path, ["app_metadata": #"{"plan": "a", "plan": "b"}"#])
            #expect(twice.status == .badRequest)
            #expect(twice.text.contains(#"data-error="invalid_request">app_metadata must be one JSON object.</p>"#))
            let big = String(repeating: "x", count: 5_000)
            let over = try await console.post(path, ["user_metadata": #"{"essay": "\#(big)"}"#])
            #expect(over.status == .badRequest)
            #expect(over.text.contains(#"data-error="invalid_request">user_metadata may hold at most 4096 bytes of JSON.</p>"#))
            seen = try await Self.metadata(api, token)
            #expect(seen.app == ["plan": .string("gold")])
            #expect(seen.user == ["color": .string("navy"), "note": .string("<b>hi</b>")])

            // A blank field leaves its object; the other is merged.
            let partial = try await console.post(path, ["app_metadata": " \r\n", "user_metadata": #"{"note": null}"#])
            #expect(partial.status == .seeOther && partial.headers[.location] == "/admin/users/\(id)?notice=metadata_set")
            seen = try await Self.metadata(api, token)
            #expect(seen.app == ["plan": .string("gold")])
            #expect(seen.user == ["color": .string("navy")])

            // The API's seed, then the console's three changes (the holder's own write says `by: user`).
            #expect(
                try await Self.metadataRows(client, id) == [
                    ["kind": "app_metadata", "by": "admin_console"], ["kind": "app_metadata", "by": "operator"],
                    ["kind": "user_metadata", "by": "admin_console"], ["kind": "user_metadata", "by": "admin_console"],
                    ["kind": "user_metadata", "by": "user"],
                ])
        }
    }
}
