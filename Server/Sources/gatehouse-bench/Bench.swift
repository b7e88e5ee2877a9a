import AsyncHTTPClient
import Crypto
import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseWire
import JWTKit
import NIOCore
import NIOHTTP1

/// Gatehouse's benchmark driver (not a test): `gatehouse-bench hash` times password hashing
/// in-process, `gatehouse-bench micro` token signing and verification, the entitlement
/// engine and the writing of a `/v1/me` answer; `gatehouse-bench load DATABASE_URL ACCOUNTS`
/// fills a database with accounts (`Load.swift`);
/// `gatehouse-bench http BASE_URL SCENARIO CONNECTIONS SECONDS` loads a running server;
/// `gatehouse-bench statements DATABASE_URL [COUNT]` times a statement (`Statements.swift`).
/// Each prints one JSON line of results.
@main
struct Bench {
    /// The action the `check` scenario asks about (`BENCH_CHECK_ACTION`; `use_app` exists in
    /// every preset).
    static let checkAction = ProcessInfo.processInfo.environment["BENCH_CHECK_ACTION"] ?? "use_app"

    /// `statements` runs its tasks where the server runs its own (`Statements.swift`): chosen
    /// before the first task, as the `gatehouse` command does. The others keep Swift's pool.
    static func main() {
        let onEventLoops =
            CommandLine.arguments.dropFirst().first == "statements"
            && ProcessInfo.processInfo.environment["GATEHOUSE_EVENT_LOOP_EXECUTOR"] != "off" && runConcurrencyOnEventLoops()
        Task {
            do {
                try await run(onEventLoops: onEventLoops)
                exit(EXIT_SUCCESS)
            } catch {
                FileHandle.standardError.write(Data("gatehouse-bench: \(error)\n".utf8))
                exit(1)
            }
        }
        dispatchMain()
    }

    /// Runs the command; `onEventLoops` says where its tasks run.
    static func run(onEventLoops: Bool) async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "hash":
            try await hash()
        case "micro":
            try await micro()
        case "load" where arguments.count == 3:
            do {
                try await load(url: arguments[1], accounts: Int(arguments[2]) ?? 10_000)
            } catch let error as LoadError {
                FileHandle.standardError.write(Data("gatehouse-bench load: \(error)\n".utf8))
                exit(1)
            }
        case "churn" where (4...5).contains(arguments.count):
            let accounts = Int(arguments[3]) ?? 10_000
            try await churn(
                path: arguments[1], days: Int(arguments[2]) ?? 30, accounts: accounts,
                perDay: arguments.count == 5 ? Int(arguments[4]) ?? accounts / 10 : accounts / 10)
        case "statements" where (2...3).contains(arguments.count):
            try await statements(
                url: arguments[1], count: arguments.count == 3 ? Int(arguments[2]) ?? 2_000 : 2_000, onEventLoops: onEventLoops)
        case "http" where arguments.count == 5:
            try await http(
                base: arguments[1], scenario: arguments[2], connections: Int(arguments[3]) ?? 16,
                seconds: Double(arguments[4]) ?? 10)
        default:
            FileHandle.standardError.write(Data("usage: gatehouse-bench hash | micro | load DATABASE_URL ACCOUNTS | churn SQLITE_PATH DAYS ACCOUNTS [PER_DAY] | statements DATABASE_URL [COUNT] | http BASE_URL me|login|refresh|signup|handles|entitlements|check CONNECTIONS SECONDS\n".utf8))
            exit(2)
        }
    }

    /// The claims of an access token, as Gatehouse signs them.
    struct Claims: JWTPayload {
        var iss: String, aud: String, sub: String, sid: String
        var iat: Int64, nbf: Int64, exp: Int64
        var plan: String
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// Microseconds per operation (median of batches) for ES256 signing and verification with
    /// jwt-kit, a SHA-256 of a token (the verified-token cache's key) and the entitlement
    /// engine's decision and snapshot for a Handz Free account, and a `/v1/me` answer written as the
    /// server writes it (`DirectJSON`), through `Encoder` and `CompactJSON`'s tree, and by
    /// Foundation's `JSONEncoder`.
    static func micro() async throws {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: ES256PrivateKey(), kid: "bench")
        let now = Int64(Date().timeIntervalSince1970)
        let claims = Claims(iss: "https://auth.example.com", aud: "handz", sub: UUID().uuidString, sid: UUID().uuidString,
                            iat: now, nbf: now, exp: now + 900, plan: "free")
        var header = JWTHeader()
        header.typ = "at+jwt"
        let token = try await keys.sign(claims, kid: "bench", header: header)

        func perOperation(_ count: Int, _ body: () async throws -> Void) async rethrows -> Double {
            var batches: [Double] = []
            for _ in 0..<7 {
                let start = ContinuousClock.now
                for _ in 0..<count { try await body() }
                batches.append(milliseconds(ContinuousClock.now - start) * 1000 / Double(count))
            }
            return percentile(batches, 50)
        }
        let sign = try await perOperation(500) { _ = try await keys.sign(claims, kid: "bench", header: header) }
        let verify = try await perOperation(500) { _ = try await keys.verify(token, as: Claims.self) }
        let digest = await perOperation(20_000) { _ = SHA256.hash(data: Data(token.utf8)) }

        let preset = try PresetLibrary.load("handz").get()
        let engine = EntitlementEngine(settings: preset.entitlements, copy: preset.copy)
        let input = EntitlementInput(userID: .random(), emailVerified: true, accountCreatedAt: Date().addingTimeInterval(-86_400), creditsSpent: ["practice": 1])
        let at = Date()
        let decide = await perOperation(20_000) { _ = engine.decide("practice_saved_flow", context: [:], input: input, at: at) }
        let snapshot = await perOperation(5_000) { _ = engine.snapshot(input, at: at) }
        // A Handz Free account's `GET /v1/me` answer, as a server sent it, written again the way
        // every answer is (`CompactJSON`) and by Foundation's encoder with the same settings.
        let me = try JSONDecoder().decode(MeResponse.self, from: Data(Self.meAnswer.utf8))
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard try CompactJSON.encode(me) == Array(try foundation.encode(me)) else {
            throw BenchError("CompactJSON and JSONEncoder differ")
        }
        // As the server writes it now (`DirectJSON`), and through `Encoder` and `CompactJSON`'s tree.
        guard try CompactJSON.encode(me) == (try Self.throughEncoder(me)) else {
            throw BenchError("DirectJSON and CompactJSON's tree differ")
        }
        let encode = try await perOperation(20_000) { _ = try CompactJSON.encode(me) }
        let encodeTree = try await perOperation(20_000) { _ = try Self.throughEncoder(me) }
        let encodeFoundation = try await perOperation(5_000) { _ = try foundation.encode(me) }
        print(json([
            "benchmark": "micro", "es256_sign_us": sign, "es256_verify_us": verify, "sha256_token_us": digest,
            "engine_decide_us": decide, "engine_snapshot_us": snapshot, "encode_me_us": encode, "encode_me_tree_us": encodeTree,
            "encode_me_foundation_us": encodeFoundation,
        ]))
    }

    /// `CompactJSON`'s bytes through `Encoder`: all `T` is known to be here is `Encodable`.
    static func throughEncoder<T: Encodable>(_ value: T) throws -> [UInt8] { try CompactJSON.encode(value) }

    /// A `GET /v1/me` answer of the Handz preset (a Free account with a handle), as served.
    static let meAnswer = #"{"entitlements":{"capabilities":{"can_create_share_links":true,"can_persist":true,"can_practice":false,"can_practice_inbox_items":false,"can_upload_media":false},"credits":{"practice":{"granted":3,"remaining":3,"resets_at":"2027-01-01T00:00:00Z"}},"evaluated_at":"2026-12-01T12:50:55Z","limits":{"branch_cap_per_move":10,"inbox_cap":10,"media_cap_bytes":0,"saved_flow_cap":2,"share_links_per_day":3},"plan_state":"free","read_only":false,"sources":[],"subscription":null,"tier":null,"trial":null},"user":{"app_metadata":{},"avatar_url":null,"created_at":"2026-12-01T12:50:55Z","display_name":null,"email":"bench-me@example.com","email_verified":false,"handle":"bench_me","id":"83daa37b-6af4-43f4-82a0-6834e4a68c62","identities":[{"created_at":"2026-12-01T12:50:55Z","email":"bench-me@example.com","is_private_relay":false,"provider":"email"}],"is_anonymous":false,"onboarding_complete":false,"phone":null,"phone_verified":false,"user_metadata":{}}}"#

    /// Each Argon2id implementation side by side (issue 61): the median CPU time of one hash and
    /// one verification on this thread, at the production parameters or at the server's
    /// `GATEHOUSE_ARGON2_MEMORY_KIB`, `_ITERATIONS` and `_PARALLELISM` where set (the capacity
    /// runs use Keycloak's cost: 7168, 5, 1), which one the server uses, and whether their raw
    /// outputs are the same bytes; then the server's own hasher (its thread pool) for comparison
    /// with earlier runs.
    /// The production parameters, or the server's `GATEHOUSE_ARGON2_*` settings where set.
    static func argon2Parameters() -> Argon2Parameters {
        var parameters = Argon2Parameters()
        let environment = ProcessInfo.processInfo.environment
        if let memory = environment["GATEHOUSE_ARGON2_MEMORY_KIB"].flatMap(UInt32.init) { parameters.memoryKiB = memory }
        if let iterations = environment["GATEHOUSE_ARGON2_ITERATIONS"].flatMap(UInt32.init) { parameters.iterations = iterations }
        if let lanes = environment["GATEHOUSE_ARGON2_PARALLELISM"].flatMap(UInt32.init) { parameters.parallelism = lanes }
        return parameters
    }

    static func hash() async throws {
        let parameters = argon2Parameters()
        let environment = ProcessInfo.processInfo.environment
        let samples = Int(environment["BENCH_HASH_SAMPLES"] ?? "") ?? 30
        let password = Array("benchmark password".utf8)

        // The implementations take turns, one hash and its verification each, so that the host's
        // drift and warm-up fall on all of them alike: measured one after another, 30 samples
        // each, the first measured read up to 1.50x the second on an AVX-512 host, and 1.02-1.05x
        // over 200 (BENCHMARKS.md, issue 61 step 24). Each one's page faults are counted around
        // its own calls.
        let measured = Argon2Implementation.allCases.filter { $0 != .libsodium || parameters.parallelism == 1 }
        var hashCPU = [[Double]](repeating: [], count: measured.count)
        var verifyCPU = [[Double]](repeating: [], count: measured.count)
        var faults = [Int](repeating: 0, count: measured.count)
        for implementation in measured { _ = try implementation.hash(password, parameters: parameters) }
        for _ in 0..<samples {
            for (index, implementation) in measured.enumerated() {
                let faultsBefore = minorFaults()
                let start = threadCPUMilliseconds()
                let phc = try implementation.hash(password, parameters: parameters)
                let middle = threadCPUMilliseconds()
                guard implementation.verify(password, against: phc) else { throw BenchError("\(implementation) did not verify its own hash") }
                hashCPU[index].append(middle - start)
                verifyCPU[index].append(threadCPUMilliseconds() - middle)
                faults[index] += minorFaults() - faultsBefore
            }
        }
        var implementations: [String: Any] = [:]
        for (index, implementation) in measured.enumerated() {
            implementations[implementation.rawValue] = [
                "hash_cpu_ms_p50": percentile(hashCPU[index], 50), "verify_cpu_ms_p50": percentile(verifyCPU[index], 50),
                "page_faults_per_hash": Double(faults[index]) / Double(2 * samples),
            ]
        }
        // Every implementation that computes these parameters, against the reference build.
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let expected = try Argon2Implementation.reference.raw(password, salt: salt, parameters: parameters)
        var identical: [String: Bool] = [:]
        for implementation in Argon2Implementation.allCases where implementation != .reference {
            guard implementation != .libsodium || parameters.parallelism == 1 else { continue }
            identical[implementation.rawValue] = try implementation.raw(password, salt: salt, parameters: parameters) == expected
        }

        let hasher = try PasswordHasher(parameters: parameters, threads: 1)
        var hashTimes: [Double] = []
        var verifyTimes: [Double] = []
        var hash = try await hasher.hash("benchmark password")
        for _ in 0..<samples {
            let start = ContinuousClock.now
            hash = try await hasher.hash("benchmark password")
            hashTimes.append(milliseconds(ContinuousClock.now - start))
            let verifyStart = ContinuousClock.now
            _ = try await hasher.verify("benchmark password", against: hash)
            verifyTimes.append(milliseconds(ContinuousClock.now - verifyStart))
        }
        await hasher.shutdown()
        let result: [String: Any] = [
            "benchmark": "argon2id", "memory_kib": parameters.memoryKiB, "iterations": parameters.iterations,
            "parallelism": parameters.parallelism, "implementations": implementations,
            "server_uses": Argon2Implementation.serving.rawValue, "kernel": "\(Argon2Kernel.best)",
            "raw_output_identical_to_reference": identical,
            "hash_ms_p50": percentile(hashTimes, 50), "verify_ms_p50": percentile(verifyTimes, 50), "samples": samples,
        ]
        print(json(result))
    }

    /// Minor page faults of this process so far (a page of fresh memory touched for the first time).
    static func minorFaults() -> Int {
        ownUsage().ru_minflt
    }

    /// This process's resource usage so far.
    static func ownUsage() -> rusage {
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return usage
    }

    /// CPU time this thread has used, in milliseconds.
    static func threadCPUMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000
    }

    static func http(base: String, scenario: String, connections: Int, seconds: Double) async throws {
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: .init(connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)))
        defer { _ = client.shutdown() }
        // Each connection gets its own account and token chain (none for `anonymous`, which
        // creates one per request and runs under presets without email sign-up, like OKLah's).
        var states: [Worker] = []
        if scenario == "anonymous" {
            states = (0..<connections).map { _ in Worker(email: "", password: "", session: [:]) }
        }
        for index in 0..<(scenario == "anonymous" ? 0 : connections) {
            let email = "bench-\(UUID().uuidString.prefix(8))-\(index)@example.com"
            let session = try await call(client, base + "/v1/auth/signup", body: ["email": email, "password": "benchmark password \(index)"])
            states.append(Worker(email: email, password: "benchmark password \(index)", session: session.1))
        }
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let started = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
            for worker in states {
                group.addTask {
                    var worker = worker
                    var latencies: [Double] = []
                    var errors = 0
                    while ContinuousClock.now < deadline {
                        let start = ContinuousClock.now
                        let ok = try await worker.run(scenario, client: client, base: base)
                        latencies.append(milliseconds(ContinuousClock.now - start))
                        if !ok { errors += 1 }
                    }
                    return (latencies, errors)
                }
            }
            return try await group.reduce(into: [([Double], Int)]()) { $0.append($1) }
        }
        let elapsed = milliseconds(ContinuousClock.now - started) / 1000
        let latencies = results.flatMap(\.0)
        let errors = results.map(\.1).reduce(0, +)
        let result: [String: Any] = [
            "benchmark": scenario, "connections": connections, "seconds": (elapsed * 100).rounded() / 100,
            "requests": latencies.count, "errors": errors, "requests_per_second": (Double(latencies.count) / elapsed).rounded(),
            "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99), "p999_ms": percentile(latencies, 99.9),
        ]
        print(json(result))
    }

    struct Worker: Sendable {
        var email: String
        var password: String
        var session: [String: String]

        var accessToken: String { session["access_token"] ?? "" }
        var refreshToken: String { session["refresh_token"] ?? "" }

        mutating func run(_ scenario: String, client: HTTPClient, base: String) async throws -> Bool {
            switch scenario {
            case "me":
                return try await Bench.call(client, base + "/v1/me", token: accessToken).0 == 200
            case "login":
                return try await Bench.call(client, base + "/v1/auth/login", body: ["email": email, "password": password]).0 == 200
            case "refresh":
                let (status, next) = try await Bench.call(client, base + "/v1/auth/refresh", body: ["refresh_token": refreshToken])
                if status == 200 { session = next }
                return status == 200
            case "entitlements":
                return try await Bench.call(client, base + "/v1/entitlements", token: accessToken).0 == 200
            case "check":
                return try await Bench.call(client, base + "/v1/entitlements/check", body: ["action": Bench.checkAction], token: accessToken).0 == 200
            case "handles":
                // As-you-type availability checks: a different candidate each time.
                let handle = "h" + UUID().uuidString.prefix(8).lowercased().replacingOccurrences(of: "-", with: "_")
                return try await Bench.call(client, base + "/v1/handles/" + handle).0 == 200
            case "anonymous":
                // OKLah's Start: an account with no personal data.
                return try await Bench.call(client, base + "/v1/auth/anonymous", body: [:]).0 == 201
            case "signup":
                let email = "bench-\(UUID().uuidString)@example.com"
                return try await Bench.call(client, base + "/v1/auth/signup", body: ["email": email, "password": password]).0 == 201
            default:
                throw BenchError("unknown scenario \(scenario)")
            }
        }
    }

    /// One request; returns the status and the `session` object of the answer, if any.
    static func call(_ client: HTTPClient, _ url: String, body: [String: String]? = nil, token: String? = nil) async throws -> (Int, [String: String]) {
        var request = HTTPClientRequest(url: url)
        request.method = body == nil ? .GET : .POST
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let object = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any]
        let session = object?["session"] as? [String: Any] ?? [:]
        return (Int(response.status.code), session.compactMapValues { $0 as? String })
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)
        return (sorted[max(0, index)] * 100).rounded() / 100
    }

    static func json(_ object: [String: Any]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
