// swift-tools-version: 6.2
// The server, its CLI, the benchmark driver, the example app backend and every test. The SDK and
// the types it shares with the server are the package at the repository's root, which this one
// depends on (with the `Verifier` trait, for GatehouseVerifier).
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

// The server's modules, its commands and their tests: an `async` function without an isolation
// of its own runs where its caller runs (SE-0461), instead of hopping to the global executor at
// every call and back after it. On the event loops that hop was a trip through the loop's job
// queue for every call on a request's path (issue 61 step 22, BENCHMARKS.md). Work that must
// leave its caller's executor says so: `@concurrent`, a task, or a task executor preference.
let serverStrict: [SwiftSetting] = strict + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]

// The root package's products: the types shared with the SDK, the SDK, and the verifier.
let wire = Target.Dependency.product(name: "GatehouseWire", package: "Gatehouse")
let core = Target.Dependency.product(name: "GatehouseCore", package: "Gatehouse")
let client = Target.Dependency.product(name: "GatehouseClient", package: "Gatehouse")
let verifier = Target.Dependency.product(name: "GatehouseVerifier", package: "Gatehouse")

let package = Package(
    name: "GatehouseServer",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "GatehouseServer", targets: ["GatehouseServer"]),
        .executable(name: "gatehouse", targets: ["gatehouse"]),
    ],
    dependencies: [
        .package(name: "Gatehouse", path: "..", traits: ["Verifier"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", exact: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Traces: the tracing API, and swift-otel's OTLP/HTTP exporter only (its gRPC trait stays off).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // The reference Argon2 implementation (Debian libargon2-dev, Homebrew argon2).
        .systemLibrary(
            name: "CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"]), .brew(["argon2"])]),
        // libsodium: Argon2id with SIMD kernels chosen at run time (Debian libsodium-dev, Homebrew libsodium).
        .systemLibrary(
            name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]),
        // Gatehouse's own Argon2id (C, written from RFC 9106), with kernels chosen at run time. Built
        // optimised in every configuration: the test command's debug build hashes with it too.
        .target(name: "GatehouseArgon2", cSettings: [.unsafeFlags(["-O2"])]),
        .target(
            name: "GatehouseStore",
            dependencies: [
                core, wire,
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("Migrations")],
            swiftSettings: serverStrict
        ),
        .target(
            name: "GatehouseServer",
            dependencies: [
                core, "GatehouseStore", wire, "GatehouseArgon2", "CArgon2", "CSodium",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            resources: [.copy("Resources")],
            swiftSettings: serverStrict
        ),
        .executableTarget(
            name: "gatehouse",
            dependencies: [
                "GatehouseServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: serverStrict
        ),
        // The benchmark driver (benchmarks/run); built in release by the benchmark script only.
        .executableTarget(
            name: "gatehouse-bench",
            dependencies: [
                "GatehouseServer",
                "GatehouseStore",
                core,
                wire,
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/gatehouse-bench",
            swiftSettings: serverStrict
        ),
        // The example app backend (Examples/AppBackend): Handz's flows and Hannah's costly routes
        // behind GatehouseVerifier, with its own SQLite table. Built and tested with the rest.
        .target(
            name: "AppBackendExample",
            dependencies: [
                verifier, core, wire,
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Examples/AppBackend/Sources/AppBackendExample",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "app-backend",
            dependencies: ["AppBackendExample", .product(name: "Hummingbird", package: "hummingbird")],
            path: "Examples/AppBackend/Sources/app-backend",
            swiftSettings: strict
        ),

        // Run by SharedSessionTests as several OS processes sharing one session through the SDK
        // (issue 64): the app and its extensions.
        .executableTarget(name: "session-sharer", dependencies: [client], path: "Tests/SessionSharer", swiftSettings: strict),

        // Helpers for the test targets only: a fresh SQLite file or PostgreSQL database per test.
        .target(
            name: "GatehouseTestSupport",
            dependencies: ["GatehouseStore", wire, client, .product(name: "Logging", package: "swift-log")],
            path: "Tests/GatehouseTestSupport",
            swiftSettings: serverStrict
        ),
        .testTarget(name: "GatehouseClientTests", dependencies: [client, "GatehouseTestSupport"], swiftSettings: strict),
        // Crypto: the HMAC-SHA-1 the TOTP vectors are computed with (the core takes it from outside).
        .testTarget(
            name: "GatehouseCoreTests",
            dependencies: [core, "GatehouseTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "GatehouseStoreTests",
            dependencies: [
                "GatehouseStore", "GatehouseTestSupport", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: serverStrict
        ),
        .testTarget(
            name: "GatehouseServerTests",
            dependencies: [
                "GatehouseServer", "GatehouseStore", "GatehouseArgon2", wire, "GatehouseTestSupport", verifier, client,
                "AppBackendExample",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: serverStrict
        ),
    ]
)
