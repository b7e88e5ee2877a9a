import AsyncHTTPClient
import Foundation
import GatehouseCore
@testable import GatehouseServer
@testable import GatehouseStore
import GatehouseTestSupport
import Glibc
import Logging
import Synchronization
import Testing
import _CryptoExtras

/// Every background service, cut short for real in the middle of its work: its query (the
/// database, `HangingDatabase`) or its call to Google or Apple (a listener that never answers)
/// is under way when its task is cancelled, as a shutdown cancels it. Each logs its own stop line
/// at info and nothing else: no warning, no "failed". `LeasedQueueTests` cuts short a queue's row
/// while its work runs; here the job queue and the outbox are cut short while they claim one.
@Suite struct BackgroundWorkCutShortTests {
    static let cases = BackgroundWork.allCases.flatMap { work in Backend.available.map { (work, $0) } }

    @Test(arguments: cases)
    func aServiceCutShortMidWorkLogsItsStopAlone(_ work: BackgroundWork, _ backend: Backend) async throws {
        try await TestDatabase.with(backend) { real, _ in
            try await Migrator(database: real).migrate(now: 1_800_000_000)
            let database = HangingDatabase(real)
            let store = SQLStore(database: database)
            let clock = ManualClock(Date())
            let log = KeptLog { "\($0.level) \($0.message)" }
            let logger = log.logger(label: "background")
            let listener = try SilentListener()
            defer { listener.close() }
            // The shared client needs no shutdown, so a set-up that throws leaves nothing behind.
            let http = HTTPClient.shared
            let preset = try PresetLibrary.load("default").get()
            let engine = EntitlementEngine(preset: preset)
            let jobs = JobWorker(store: store, sealer: SecretSealer(secret: nil), clock: clock, logger: logger, handlers: [:])
            let unitOfWork = UnitOfWork(
                store: store, narrow: { $0 }, events: EventRecorder(jobs: jobs, webhookConfigured: false, clock: clock), mail: nil,
                jobs: jobs, privacy: PrivacySettings(), clock: clock)
            // The service's work, begun once the database hangs; and what it waits on.
            let run: @Sendable () async -> Void
            let waitsOn: Waits
            switch work {
            case .retentionSweep:
                let sweep = RetentionSweep(store: store, days: 30, idleSeconds: 1_209_600, unconfirmedFactorTTLSeconds: 600, clock: clock, logger: logger)
                (run, waitsOn) = ({ _ = await sweep.sweep() }, .database)
            case .staleAccountRemoval:
                try await store.insertUser(User(id: .random(), isAnonymous: true, createdAt: clock.now))
                clock.advance(by: 31 * 86_400)
                let cleanup = AccountCleanup(
                    store: store, unitOfWork: unitOfWork.narrowed { $0 }, lifecycle: AccountLifecycle(handles: HandleSettings()),
                    rules: [.inactiveAnonymous(days: 30)], grace: LedgerGrace(proGraceHours: 72), clock: clock, logger: logger)
                (run, waitsOn) = ({ _ = await cleanup.sweep() }, .database)
            case .voidedPurchasesSweep:
                // Google's token endpoint and the Play Developer API are the listener.
                let keyFile = try JSONSerialization.data(withJSONObject: [
                    "type": "service_account", "client_email": "play@example.iam.gserviceaccount.com",
                    "private_key": try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation, "token_uri": "\(listener.url)/token",
                ])
                let client = GooglePlayClient(
                    account: try GooglePlayServiceAccount(keyFile: keyFile), packageName: "com.example.app", apiURL: listener.url, client: http,
                    clock: clock)
                let keys = ProviderKeySet(url: listener.url, client: http, clock: clock, logger: logger)
                let googlePlay = GooglePlayPurchaseService(
                    store: store, unitOfWork: unitOfWork.narrowed { $0 }, client: client,
                    pushVerifier: ProviderTokenVerifier(
                        provider: .google, issuers: ProviderTokenVerifier.googleIssuers, audiences: [], keys: keys, clock: clock, leeway: 0,
                        failureMessage: "The push is not signed by Google."),
                    settings: nil, products: [:], entitlements: Entitlements(store: store, engine: engine, clock: clock), clock: clock, logger: logger)
                let sweep = GooglePlayVoidedSweep(googlePlay: googlePlay, logger: logger)
                (run, waitsOn) = ({ await sweep.sweepOnce() }, .listener)
            case .passwordHashSchemes:
                let hasher = try PasswordHasher(parameters: Argon2Parameters(memoryKiB: 32, iterations: 2, parallelism: 1), threads: 1)
                let lifecycle = PasswordHasherLifecycle(hasher: hasher, store: store, logger: logger, interval: .milliseconds(1))
                (run, waitsOn) = ({ try? await lifecycle.run() }, .database)
            case .providerKeyPrefetch:
                let refresh = ProviderKeysRefresh(
                    keySets: [ProviderKeySet(url: listener.url.appendingPathComponent("keys"), client: http, clock: clock, logger: logger)],
                    clock: clock, logger: logger)
                (run, waitsOn) = ({ try? await refresh.run() }, .listener)
            case .signingKeyReload:
                let keys = KeyRing(store: store, transactions: Transactions(store) { $0 }, clock: clock, secretKey: nil, logger: logger)
                let refresh = KeyRingRefresh(keys: keys, logger: logger, interval: .milliseconds(1))
                (run, waitsOn) = ({ try? await refresh.run() }, .database)
            case .overviewCount:
                let counts = OverviewCounts(store: store, engine: engine, clock: clock, logger: logger)
                _ = counts.seen(again: true)
                (run, waitsOn) = ({ await counts.sweepOnce() }, .database)
            case .jobQueue:
                let sealed = try SecretSealer(secret: nil).seal(Data(#"{"customer":"cus_cut_short"}"#.utf8))
                try await store.enqueueJob(Job(kind: JobKind.stripeCancel.rawValue, payload: sealed.bytes, encryption: sealed.encryption, createdAt: clock.now))
                (run, waitsOn) = ({ await jobs.runDue() }, .database)
            case .mailOutbox:
                let mail = try LeasedQueueTests.mailWorker(
                    store, DevOutboxTransport(logger: logger), clock: clock, logger: logger, metrics: ServerMetrics(enabled: true))
                let message = OutboxMessage(
                    createdAt: clock.now, kind: MailKind.verification.rawValue, recipient: "cut@example.com", subject: "Verify",
                    textBody: "Verify", htmlBody: nil)
                try await store.enqueueMail(message)
                (run, waitsOn) = ({ await mail.deliverDue(on: OutboxLane(kind: message.kind)) }, .database)
            }
            database.arm()
            let working = Task { await run() }
            switch waitsOn {
            case .database: for await _ in database.hung { break }
            case .listener: for await _ in listener.connected { break }
            }
            working.cancel()
            await working.value

            #expect(log.lines == ["info \(work.stopped)"], "\(log.lines)")
        }
    }

    /// Where a service's work is held when it is cut short.
    enum Waits { case database, listener }
}

/// A TCP listener on the loopback that takes connections and never answers them: Google's or
/// Apple's endpoints while a call to them is under way. `connected` hears each connection.
final class SilentListener: Sendable {
    struct ListenerError: Error {}
    let port: Int
    let connected: AsyncStream<Void>
    private let socketFD: Int32
    private let accepted = Mutex<[Int32]>([])

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else {
            _ = Glibc.close(fd)
            throw ListenerError()
        }
        socketFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        connected = stream
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(socketFD, nil, nil)
                if connection < 0 { break }
                accepted.withLock { $0.append(connection) }
                continuation.yield()
            }
            continuation.finish()
        }
    }

    func close() {
        shutdown(socketFD, Int32(SHUT_RDWR))
        _ = Glibc.close(socketFD)
        for connection in accepted.withLock({ $0 }) { _ = Glibc.close(connection) }
    }
}
