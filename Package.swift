// swift-tools-version: 6.2
// What an app adds: the client SDK and the types it shares with the server, on Foundation alone.
// Depending on this repository for `GatehouseClient` resolves no other package. The server is
// the package in `Server/`, which depends on this one.
//
// `GatehouseVerifier` (for an app's own Swift backend) needs Hummingbird and an HTTP client: it
// is built only with the `Verifier` trait, so that an app that does not ask for it resolves
// none of them:
//     .package(url: "https://github.com/your-org/gatehouse.git", from: "0.1.0", traits: ["Verifier"])
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

/// A dependency of `GatehouseVerifier`, resolved only when the `Verifier` trait is on.
func verifier(_ product: String, _ package: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: ["Verifier"]))
}

let package = Package(
    name: "Gatehouse",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "GatehouseClient", targets: ["GatehouseClient"]),
        .library(name: "GatehouseWire", targets: ["GatehouseWire"]),
        .library(name: "GatehouseCore", targets: ["GatehouseCore"]),
        .library(name: "GatehouseVerifier", targets: ["GatehouseVerifier"]),
    ],
    traits: [
        .trait(name: "Verifier", description: "Builds GatehouseVerifier (Hummingbird, AsyncHTTPClient) for an app's own backend."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        // Used by no target: `swift package generate-documentation` (scripts/docs), never resolved
        // by a package that depends on this one.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // GatehouseVerifier's, under the `Verifier` trait only.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        // Wire types shared by the server and the SDK: no dependencies at all.
        .target(name: "GatehouseWire", swiftSettings: strict),
        // The pure domain: policies, presets, the clock. No I/O, no NIO, no SQL.
        .target(name: "GatehouseCore", dependencies: ["GatehouseWire"], swiftSettings: strict),
        // The client SDK: Foundation, the wire types and the pure core (the same entitlement
        // engine as the server) only.
        .target(name: "GatehouseClient", dependencies: ["GatehouseWire", "GatehouseCore"], swiftSettings: strict),
        // For an app's own Swift backend: offline verification of Gatehouse access tokens and a
        // Hummingbird middleware enforcing the app's plans. Empty without the `Verifier` trait.
        .target(
            name: "GatehouseVerifier",
            dependencies: [
                "GatehouseCore", "GatehouseWire",
                verifier("Hummingbird", "hummingbird"),
                verifier("AsyncHTTPClient", "async-http-client"),
                verifier("Crypto", "swift-crypto"),
                verifier("NIOCore", "swift-nio"),
                verifier("HTTPTypes", "swift-http-types"),
            ],
            swiftSettings: strict
        ),
    ]
)
