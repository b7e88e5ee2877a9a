// swift-tools-version: 6.2
// An app's view of the SDK: a package that depends on `GatehouseClient` the way docs/sdk.md
// says, with the strictest import rules on. `DocSnippets` holds docs/sdk.md's Swift blocks
// (extracted by scripts/doc-snippets.py in the test command); `sdk-tour` is written from the docs
// alone and runs against live servers (scripts/test).
import PackageDescription

let settings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "SDKConsumer",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "Gatehouse", path: "../..")],
    targets: [
        .target(
            name: "DocSnippets", dependencies: [.product(name: "GatehouseClient", package: "Gatehouse")], swiftSettings: settings),
        .executableTarget(
            name: "SDKTour",
            dependencies: [
                .product(name: "GatehouseClient", package: "Gatehouse"),
                // The authenticator app's codes: the same TOTP the server checks them with.
                .product(name: "GatehouseCore", package: "Gatehouse"),
            ],
            swiftSettings: settings),
    ]
)
