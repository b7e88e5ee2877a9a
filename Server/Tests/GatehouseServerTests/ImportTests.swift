import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Accounts from Firebase Auth and Supabase Auth (issue 24): `gatehouse import` run as a real
/// process on the server's database, hashes made by the libraries those systems' users export
/// (firebase-scrypt, bcrypt from PyPI), sign-ins through HTTP afterwards, Sign in with Apple
/// against a local key server finding the imported account, and a Supabase `auth` schema built
/// in PostgreSQL from GoTrue's migrations (Tests/support/supabase_auth_schema.sql).
@Suite struct ImportTests {
    /// Firebase's published test vector (github.com/firebase/scrypt, README): the project's
    /// parameters, and user1password's salt and hash.
    static let signerKey = "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA=="
    static let saltSeparator = "Bw=="
    static let vectorSalt = "42xEC+ixf3L2lw=="
    static let vectorHash = "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="
    static let hashFlags = ["--signer-key", signerKey, "--salt-separator", saltSeparator, "--rounds", "8", "--mem-cost", "14"]

    static var support: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("support")
    }

    /// A hash made by Tests/support/foreign_hashes.py.
    static func foreignHash(_ arguments: [String]) async throws -> String {
        let output = try await Command.run(try #require(SMTPSink.python), [support.appendingPathComponent("foreign_hashes.py").path] + arguments)
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The database URL as `GATEHOUSE_DATABASE_URL` takes it.
    static func environmentURL(_ database: DatabaseURL) -> String {
        switch database {
        case .sqlite(let path): return "sqlite://" + path
        case .postgres(let url): return url
        }
    }

    /// Runs `gatehouse ARGUMENTS` on the app's database; its exit status and output.
    static func gatehouse(_ arguments: [String], _ config: GatehouseConfig) async throws -> (status: Int32, output: String) {
        let process = try ServerProcess(arguments, environment: ["GATEHOUSE_DATABASE_URL": environmentURL(config.database)])
        defer { try? FileManager.default.removeItem(at: process.directory) }
        let status = try await process.exitStatus()
        return (status, process.standardOutput + process.standardError)
    }

    static func millis(_ text: String) -> String {
        String(Int64(Date(rfc3339: text)!.timeIntervalSince1970) * 1000)
    }

    static func json(_ object: Any) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// A Firebase export: the test vector's user, a second password made by firebase-scrypt, an
    /// Apple-only user, a Google user with a password, a disabled user, and two broken rows.
    static func firebaseExport() async throws -> String {
        let salt = Data("gatehouse-salt-2".utf8).base64EncodedString()
        let second = try await foreignHash(["firebase", "second password 2!", salt, signerKey, saltSeparator, "8", "14"])
        let third = try await foreignHash(["firebase", "google user pass 3", salt, signerKey, saltSeparator, "8", "14"])
        let users: [[String: Any]] = [
            ["localId": "vectorUser1", "email": "Vector@Example.com", "emailVerified": true, "passwordHash": vectorHash, "salt": vectorSalt,
             "displayName": "Vera Vector", "photoUrl": "https://cdn.example.com/v.png",
             "createdAt": millis("2021-03-04T05:06:07Z"), "lastSignedInAt": millis("2024-01-02T03:04:05Z")],
            ["localId": "secondUser2", "email": "second@example.com", "emailVerified": false, "passwordHash": second, "salt": salt,
             "createdAt": millis("2022-01-01T00:00:00Z")],
            ["localId": "appleOnly3", "email": "hidden@privaterelay.appleid.com", "emailVerified": true,
             "providerUserInfo": [["providerId": "apple.com", "rawId": "001234.apple.imported", "email": "hidden@privaterelay.appleid.com"]],
             "createdAt": millis("2022-02-02T00:00:00Z")],
            ["localId": "googleUser4", "email": "gail@example.com", "emailVerified": true, "passwordHash": third, "salt": salt,
             "providerUserInfo": [["providerId": "google.com", "rawId": "109876543210"], ["providerId": "password", "rawId": "gail@example.com"]],
             "createdAt": millis("2022-03-03T00:00:00Z")],
            ["localId": "disabled5", "email": "dis@example.com", "disabled": true, "passwordHash": second, "salt": salt,
             "createdAt": millis("2022-04-04T00:00:00Z")],
            ["localId": "corrupt6", "email": "corrupt@example.com", "passwordHash": "%%% not base64 %%%", "salt": salt,
             "createdAt": millis("2022-05-05T00:00:00Z")],
            ["email": "noid@example.com"],
        ]
        return json(["users": users])
    }

    @Test(
        .requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"),
        arguments: Backend.available)
    func firebaseUsersSignInWithTheirOldPasswordsAndAppleFindsTheAccount(_ backend: Backend) async throws {
        let export = try await Self.firebaseExport()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("firebase-export-\(UUID().uuidString).json")
        try Data(export.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await ProviderSignInTests.run(backend) { api, apple, _, config in
            let first = try await Self.gatehouse(["import", "firebase", file.path] + Self.hashFlags, config)
            #expect(first.status == 2, "\(first.output)")
            #expect(first.output.contains("imported 5, unchanged 0, refused 2"), "\(first.output)")
            #expect(first.output.contains("row 6 (corrupt6): the passwordHash is not base64"), "\(first.output)")
            #expect(first.output.contains("row 7: not a Firebase user record"), "\(first.output)")

            // The published vector's password, then the one firebase-scrypt made.
            let vector = try await api.login("vector@example.com", "user1password")
            #expect(vector.status == .ok, "\(vector.text)")
            let vectorUser = try vector.json(AuthResponse.self).user
            #expect(vectorUser.id == ImportService.firebaseID("vectorUser1").description)
            #expect(vectorUser.displayName == "Vera Vector" && vectorUser.emailVerified)
            #expect(vectorUser.createdAt == "2021-03-04T05:06:07Z")
            #expect(try await api.login("second@example.com", "second password 2!").status == .ok)
            #expect(try await api.login("gail@example.com", "google user pass 3").status == .ok)
            // A wrong password is refused as for any account.
            let wrong = try await api.login("vector@example.com", "user1passwore")
            #expect(wrong.status == .unauthorized && wrong.error?.code == "invalid_credentials")
            // A Firebase-disabled account stays disabled.
            let disabled = try await api.login("dis@example.com", "second password 2!")
            #expect(disabled.status == .forbidden && disabled.error?.code == "account_disabled", "\(disabled.text)")

            // The first sign-in replaced each Firebase hash with Argon2id; the disabled one's stays.
            let (vectorHash, disabledHash, corrupt, apple6, lastSignIn) = try await TestApp.withStore(config) { store in
                (try await store.user(id: ImportService.firebaseID("vectorUser1"))?.passwordHash,
                 try await store.user(id: ImportService.firebaseID("disabled5"))?.passwordHash,
                 try await store.user(id: ImportService.firebaseID("corrupt6")),
                 try await store.identity(provider: .apple, subject: "001234.apple.imported"),
                 try await store.user(id: ImportService.firebaseID("vectorUser1"))?.lastSignInAt)
            }
            #expect(vectorHash?.hasPrefix("$argon2id$") == true, "\(vectorHash ?? "nil")")
            #expect(disabledHash?.hasPrefix("$firebase-scrypt$") == true)
            #expect(!(disabledHash ?? "").contains(Self.signerKey.prefix(12)), "the project's signer key is not in the users table")
            #expect(corrupt == nil, "a refused row writes nothing")
            #expect(apple6?.userID == ImportService.firebaseID("appleOnly3"))
            #expect(lastSignIn == Date(rfc3339: "2024-01-02T03:04:05Z"))
            // The new hash works, and the old password is the same password.
            #expect(try await api.login("vector@example.com", "user1password").status == .ok)

            // Sign in with Apple with the same `sub` finds the imported account, not a new one.
            let token = try apple.token(
                sub: "001234.apple.imported", email: "hidden@privaterelay.appleid.com",
                extra: ["email_verified": "true", "is_private_email": "true"])
            let signedIn = try await api.post("/v1/auth/apple", ProviderSignInTests.body(token))
            #expect(signedIn.status == .ok, "\(signedIn.text)")
            #expect(try signedIn.json(AuthResponse.self).user.id == ImportService.firebaseID("appleOnly3").description)

            // A second run changes nothing: the rehashed password stays Argon2id.
            let second = try await Self.gatehouse(["import", "firebase", file.path] + Self.hashFlags, config)
            #expect(second.output.contains("imported 0, unchanged 5, refused 2"), "\(second.output)")
            let after = try await TestApp.withStore(config) { try await $0.user(id: ImportService.firebaseID("vectorUser1"))?.passwordHash }
            #expect(after == vectorHash)

            // Each account was announced once, with where it came from.
            let events = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: nil, limit: 100) }
            let created = events.filter { $0.type == .userCreated && $0.data["imported_from"] == "firebase" }
            #expect(created.count == 5)
            #expect(created.contains { $0.data["source_id"] == "appleOnly3" && $0.data["provider"] == "email" })
        }
    }

    @Test func theFirebaseCommandNeedsAllFourHashParametersAndAValidFile() async throws {
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite://" + directory.appendingPathComponent("g.sqlite").path
        func run(_ arguments: [String]) async throws -> (Int32, String) {
            let process = try ServerProcess(arguments, environment: ["GATEHOUSE_DATABASE_URL": database], directory: directory)
            return (try await process.exitStatus(), process.standardOutput + process.standardError)
        }
        let file = directory.appendingPathComponent("users.json")
        try Data(#"{"users": [{"localId": "a1", "email": "a@example.com", "passwordHash": "AAAA", "salt": "AAAA"}]}"#.utf8).write(to: file)
        let (partial, partialOutput) = try await run(["import", "firebase", file.path, "--signer-key", Self.signerKey])
        #expect(partial != 0 && partialOutput.contains("go together"), "\(partialOutput)")
        let (missing, missingOutput) = try await run(["import", "firebase", file.path])
        #expect(missing == 1 && missingOutput.contains("need the project's hash configuration"), "\(missingOutput)")
        let (badKey, badKeyOutput) = try await run(
            ["import", "firebase", file.path, "--signer-key", "***", "--salt-separator", "Bw==", "--rounds", "8", "--mem-cost", "14"])
        #expect(badKey == 1 && badKeyOutput.contains("the signer key is not base64"), "\(badKeyOutput)")
        try Data("[1, 2]".utf8).write(to: file)
        let (notExport, notExportOutput) = try await run(["import", "firebase", file.path])
        #expect(notExport == 1 && notExportOutput.contains("is not a Firebase export"), "\(notExportOutput)")
    }

    // MARK: Supabase

    /// Builds GoTrue's `auth` schema in a new PostgreSQL database and fills it.
    static func supabaseSource(_ fill: @escaping @Sendable (any SQLDatabase) async throws -> Void, _ body: @escaping @Sendable (String) async throws -> Void)
        async throws
    {
        try await TestDatabase.with(.postgres) { database, url in
            guard case .postgres(let text) = url else { throw ProcessError("not a PostgreSQL database") }
            let psql = try #require(PrivatePostgres.binaries) + "/psql"
            try await Command.run(
                psql, [text, "-q", "-v", "ON_ERROR_STOP=1", "-f", support.appendingPathComponent("supabase_auth_schema.sql").path])
            try await fill(database)
            try await body(text)
        }
    }

    static let alice = "0b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f60"
    static let bob = "1b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f61"
    static let carol = "2b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f62"
    static let frank = "3b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f63"

    @Test(
        .requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"),
        .requires(TestDatabase.postgresAdminURL != nil && PrivatePostgres.binaries != nil, "GATEHOUSE_TEST_POSTGRES_URL and GATEHOUSE_TEST_PG_BINDIR"),
        arguments: Backend.available)
    func supabaseUsersComeFromItsOwnSchemaAndKeepTheirIDs(_ backend: Backend) async throws {
        let aliceHash = try await Self.foreignHash(["bcrypt", "alice in wonderland", "2b"])
        let bobHash = try await Self.foreignHash(["bcrypt", "bob builds things", "2a"])
        try await Self.supabaseSource({ source in
            func user(_ id: String, _ email: String?, _ hash: String?, created: String, extra: String = "", values: String = "") async throws {
                try await source.query(
                    "INSERT INTO auth.users (instance_id, id, aud, role, email, encrypted_password, created_at, raw_user_meta_data, "
                        + "raw_app_meta_data\(extra)) "
                        + "VALUES ('00000000-0000-0000-0000-000000000000', '\(id)', 'authenticated', 'authenticated', ?, ?, '\(created)', "
                        + "'{\"full_name\": \"Alice Liddell\", \"avatar_url\": \"https://cdn.example.com/a.png\", \"team\": \"red\"}', "
                        + "'{\"provider\": \"email\", \"providers\": [\"email\"], \"roles\": [\"editor\"]}'\(values))",
                    [SQLValue(email), SQLValue(hash)])
            }
            try await user(Self.alice, "Alice@Example.com", aliceHash, created: "2023-01-01 10:00:00.123456+00",
                           extra: ", email_confirmed_at, last_sign_in_at", values: ", '2023-01-01 10:05:00+00', '2024-06-01 08:00:00+00'")
            try await user(Self.bob, "bob@example.com", bobHash, created: "2023-01-02 10:00:00+00")
            try await user(Self.carol, nil, nil, created: "2023-01-03 10:00:00+00", extra: ", is_anonymous", values: ", true")
            try await user("4b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f64", "gone@example.com", aliceHash, created: "2023-01-04 10:00:00+00",
                           extra: ", deleted_at", values: ", now()")
            try await user("5b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f65", nil, nil, created: "2023-01-05 10:00:00+00",
                           extra: ", phone", values: ", '6591234567'")
            try await user(Self.frank, "frank@example.com", bobHash, created: "2023-01-06 10:00:00+00",
                           extra: ", banned_until", values: ", now() + interval '10 years'")
            try await user("6b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f66", "plain@example.com", "not-a-hash", created: "2023-01-07 10:00:00+00")
            for (owner, provider, subject, email) in [
                (Self.alice, "email", Self.alice, "alice@example.com"), (Self.bob, "email", Self.bob, "bob@example.com"),
                (Self.bob, "google", "google-sub-bob", "bob@example.com"),
            ] {
                try await source.query(
                    "INSERT INTO auth.identities (provider_id, user_id, identity_data, provider, created_at) VALUES (?, '\(owner)', CAST(? AS jsonb), ?, now())",
                    [.text(subject), .text(#"{"sub": "\#(subject)", "email": "\#(email)"}"#), .text(provider)])
            }
        }) { sourceURL in
            try await TestApp.run(backend, preset: "default") { client, config in
                let api = AuthClient(client: client)
                let first = try await Self.gatehouse(["import", "supabase", "--from", sourceURL], config)
                #expect(first.status == 2, "\(first.output)")
                #expect(first.output.contains("imported 4, unchanged 0, refused 3"), "\(first.output)")
                #expect(first.output.contains("row 4 (4b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f64): soft-deleted in Supabase"), "\(first.output)")
                #expect(first.output.contains("row 5 (5b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f65): phone sign-in is not supported"), "\(first.output)")
                #expect(first.output.contains("row 7 (6b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f66): encrypted_password is not a bcrypt hash"), "\(first.output)")

                let alice = try await api.login("alice@example.com", "alice in wonderland")
                #expect(alice.status == .ok, "\(alice.text)")
                let aliceUser = try alice.json(AuthResponse.self).user
                #expect(aliceUser.id == Self.alice, "Supabase's id is kept: the app's rows keyed by auth.uid() still match")
                #expect(aliceUser.displayName == "Alice Liddell" && aliceUser.avatarURL == "https://cdn.example.com/a.png")
                // GoTrue's metadata comes along as Supabase kept it (its answers stay the same), the
                // ways in (`provider`, `providers`) made here again.
                #expect(
                    aliceUser.userMetadata == [
                        "full_name": .string("Alice Liddell"), "avatar_url": .string("https://cdn.example.com/a.png"), "team": .string("red"),
                    ] && aliceUser.appMetadata == ["roles": .array([.string("editor")])])
                #expect(aliceUser.emailVerified && aliceUser.createdAt == "2023-01-01T10:00:00Z")
                let bob = try await api.login("bob@example.com", "bob builds things")
                #expect(bob.status == .ok, "\(bob.text)")
                #expect(try bob.json(AuthResponse.self).user.emailVerified == false)
                #expect(try await api.login("bob@example.com", "bob builds thing").status == .unauthorized)
                #expect(try await api.login("frank@example.com", "bob builds things").error?.code == "account_disabled")

                let (aliceHash, google, carol, lastSignIn) = try await TestApp.withStore(config) { store in
                    (try await store.user(id: UserID(Self.alice)!)?.passwordHash,
                     try await store.identity(provider: .google, subject: "google-sub-bob"),
                     try await store.user(id: UserID(Self.carol)!),
                     try await store.user(id: UserID(Self.alice)!)?.lastSignInAt)
                }
                #expect(aliceHash?.hasPrefix("$argon2id$") == true, "rehashed at the first sign-in")
                #expect(google?.userID.description == Self.bob)
                #expect(carol?.isAnonymous == true && carol?.email == nil)
                #expect(lastSignIn == Date(rfc3339: "2024-06-01T08:00:00Z"))

                let again = try await Self.gatehouse(["import", "supabase", "--from", sourceURL], config)
                #expect(again.output.contains("imported 0, unchanged 4, refused 3"), "\(again.output)")
            }
        }
    }

    // MARK: The admin route

    static func adminBatch(count: Int) -> String {
        let users = (1...count).map { index -> [String: Any] in
            ["localId": "batch\(index)", "email": "batch\(index)@example.com", "emailVerified": true, "createdAt": "1600000000000"]
        }
        return json(["users": users])
    }

    @Test(arguments: Backend.available)
    func importsRacedThroughTheAdminRouteWriteEachAccountOnce(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "default", setup: .live) { client, config in
            let request = LastByteRace.request(
                "POST", Endpoints.adminImportFirebase.path.template, json: Self.adminBatch(count: 6),
                headers: ["Authorization": "Bearer \(TestApp.adminKey)"])
            let answers = try await BurstGate.exclusive {
                try await LastByteRace.send(port: try #require(client.port), request, copies: 8)
            }
            #expect(answers.allSatisfy { $0.status == 200 }, "\(answers.map(\.status))")
            let imported = answers.compactMap { $0.json?["imported"] as? Int }.reduce(0, +)
            let unchanged = answers.compactMap { $0.json?["unchanged"] as? Int }.reduce(0, +)
            #expect(imported == 6 && unchanged == 42, "imported \(imported), unchanged \(unchanged)")
            let (users, events) = try await TestApp.withStore(config) { store in
                (try await store.users(search: "batch", before: nil, limit: 50),
                 try await store.events(after: nil, userID: nil, limit: 200).filter { $0.type == .userCreated })
            }
            #expect(users.count == 6 && events.count == 6)
        }
    }

    @Test func theAdminRoutesNeedTheKeyAndRefuseWhatTheyCannotImport() async throws {
        try await TestApp.run(.sqlite, preset: "default") { client, _ in
            let api = AuthClient(client: client)
            let batch = Self.adminBatch(count: 1)
            #expect(try await api.post(Endpoints.adminImportFirebase.path.template, batch).status == .unauthorized)
            #expect(try await api.post(Endpoints.adminImportFirebase.path.template, batch, token: "wrong-key-0123456789abcdef").status == .unauthorized)
            // An entry that is not an object is a malformed request, not a row.
            let notObjects = try await api.post(Endpoints.adminImportSupabase.path.template, #"{"users": [[null, null]]}"#, token: TestApp.adminKey)
            #expect(notObjects.status == .badRequest && notObjects.error?.code == "invalid_request", "\(notObjects.text)")
            // A password without the project's parameters cannot be verified later: refused whole.
            let withPassword = #"{"users": [{"localId": "p1", "email": "p1@example.com", "passwordHash": "AAAA", "salt": "AAAA"}]}"#
            let refused = try await api.post(Endpoints.adminImportFirebase.path.template, withPassword, token: TestApp.adminKey)
            #expect(refused.status == .badRequest && refused.error?.code == "invalid_request", "\(refused.text)")
            let badRounds = try await api.post(
                Endpoints.adminImportFirebase.path.template,
                #"{"hash_config": {"base64_signer_key": "AAAA", "base64_salt_separator": "Bw==", "rounds": 99, "mem_cost": 14}, "users": []}"#,
                token: TestApp.adminKey)
            #expect(badRounds.status == .badRequest && badRounds.error?.message.contains("rounds must be 1–8") == true, "\(badRounds.text)")

            // Supabase rows as PostgreSQL writes them in JSON (json_agg over auth.users).
            let rows = """
                {"users": [{"id": "7b0c4b9e-1d1f-4a52-9f3a-1b2c3d4e5f67", "email": "json@example.com",
                            "encrypted_password": "$2a$04$3THsdJmT/ZC1desV8NpqueGXbSLyQlvN9iKV5wH68bY004l/eTKPS",
                            "email_confirmed_at": "2023-05-06T07:08:09.123456+00:00", "created_at": "2023-05-06T07:08:09.123456+02:00",
                            "is_anonymous": false, "raw_user_meta_data": {"name": "Jay Son", "plan_note": "vip"},
                            "raw_app_meta_data": {"tenant": "acme"}},
                           {"id": "not-a-uuid", "email": "x@example.com"}],
                 "identities": [], "first_row": 11}
                """
            let imported = try await api.post(Endpoints.adminImportSupabase.path.template, rows, token: TestApp.adminKey)
            #expect(imported.status == .ok, "\(imported.text)")
            let report = try imported.json(ImportReport.self)
            #expect(report.imported == 1 && report.refused == [ImportRefusal(row: 12, sourceID: "not-a-uuid", reason: "the id is not a UUID")])
            let signedIn = try await api.login("json@example.com", "pw one")
            #expect(signedIn.status == .ok, "\(signedIn.text)")
            let user = try signedIn.json(AuthResponse.self).user
            #expect(user.displayName == "Jay Son" && user.createdAt == "2023-05-06T05:08:09Z")
            #expect(user.userMetadata == ["name": .string("Jay Son"), "plan_note": .string("vip")] && user.appMetadata == ["tenant": .string("acme")])
        }
    }
}

/// The first sign-in replaces an imported hash only while it is still the one that was checked:
/// a reset or change that lands between the check and the write wins (never the old password back).
@Suite struct RehashTests {
    @Test(arguments: Backend.available)
    func aRehashNeverOverwritesAPasswordChangedMeanwhile(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let now = Date()
            let user = User(id: .random(), email: "r@example.com", normalizedEmail: "r@example.com", passwordHash: "$2b$old", createdAt: now)
            try await store.insertUser(user)
            try await store.updatePassword(user.id, hash: "$argon2id$reset", changedAt: now, now: now)
            #expect(try await store.rehashPassword(user.id, from: "$2b$old", to: "$argon2id$rehashed", now: now) == false)
            #expect(try await store.user(id: user.id)?.passwordHash == "$argon2id$reset")
            #expect(try await store.rehashPassword(user.id, from: "$argon2id$reset", to: "$argon2id$new", now: now) == true)
            #expect(try await store.user(id: user.id)?.passwordHash == "$argon2id$new")
        }
    }
}
