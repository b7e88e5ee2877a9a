import Foundation
import Testing

/// Issue 61: `gatehouse` runs Swift concurrency on SwiftNIO's event loops unless
/// `GATEHOUSE_EVENT_LOOP_EXECUTOR=off`. Every other server test runs with it on; this one also
/// takes a server through sign-up, a write, a read and a refresh with it off, and refuses a value
/// that is neither, as a bad setting stops the server.
@Suite struct EventLoopExecutorTests {
    @Test(arguments: ["on", "off"])
    func aServerSignsUpWritesReadsAndRefreshesEitherWay(_ setting: String) async throws {
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServerProcess(
            environment: ServerProcess.environment(
                database: "sqlite://" + directory.appendingPathComponent("gatehouse.sqlite").path,
                ["GATEHOUSE_EVENT_LOOP_EXECUTOR": setting, "GATEHOUSE_IP_LIMITS": "off"]),
            directory: directory)
        let base = try await server.baseURL()
        let json = ["Content-Type": "application/json"]
        let signUp = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: json,
            body: Data(#"{"email":"loops-\#(setting)@example.com","password":"Correct-Horse-9-Battery"}"#.utf8))
        #expect(signUp.status == 201, "\(signUp.text)")
        let session = try #require(try JSONSerialization.jsonObject(with: signUp.body) as? [String: Any])["session"] as? [String: Any]
        let access = try #require(session?["access_token"] as? String)
        let refresh = try #require(session?["refresh_token"] as? String)
        let patched = try await HTTP.request(
            base.appendingPathComponent("v1/me"), method: "PATCH", headers: json.merging(["Authorization": "Bearer \(access)"]) { $1 },
            body: Data(#"{"display_name":"Loops \#(setting)"}"#.utf8))
        #expect(patched.status == 200, "\(patched.text)")
        let me = try await HTTP.request(base.appendingPathComponent("v1/me"), headers: ["Authorization": "Bearer \(access)"])
        #expect(me.status == 200 && me.text.contains(#""display_name":"Loops \#(setting)""#), "\(me.text)")
        let rotated = try await HTTP.request(
            base.appendingPathComponent("v1/auth/refresh"), method: "POST", headers: json, body: Data(#"{"refresh_token":"\#(refresh)"}"#.utf8))
        #expect(rotated.status == 200, "\(rotated.text)")
        server.signal(SIGTERM)
        #expect(try await server.exitStatus() == 0)
    }

    @Test func aValueThatIsNeitherOnNorOffStopsTheServer() async throws {
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServerProcess(
            environment: ServerProcess.environment(
                database: "sqlite://" + directory.appendingPathComponent("gatehouse.sqlite").path, ["GATEHOUSE_EVENT_LOOP_EXECUTOR": "sometimes"]),
            directory: directory)
        #expect(try await server.exitStatus() == 78)
        #expect(server.standardError.contains("GATEHOUSE_EVENT_LOOP_EXECUTOR must be on or off, not sometimes"), "\(server.standardError)")
    }
}
