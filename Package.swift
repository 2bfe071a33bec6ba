// swift-tools-version: 6.2
import PackageDescription

// Strict settings shared by every Swift target: Swift 6 mode already implies complete
// concurrency checking; the upcoming features keep the code honest about isolation.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "AppMigration",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "XZ", targets: ["XZ"]),
        .library(name: "Tar", targets: ["Tar"]),
        .library(name: "IndexedArchive", targets: ["IndexedArchive"]),
        .library(name: "AppMigration", targets: ["AppMigration"]),
        // `import AppMigrationKit` for code written against Apple's framework: it re-exports
        // AppMigration where the system has no AppMigrationKit of its own.
        .library(name: "AppMigrationKit", targets: ["AppMigrationKit"]),
        // The Swift Testing trait that registers an extension for AppMigrationTester in one line.
        .library(name: "AppMigrationTesting", targets: ["AppMigrationTesting"]),
        // The seeded synthetic app data that `amk demo` migrates and the benchmark packs.
        .library(name: "SampleData", targets: ["SampleData"]),
        .executable(name: "amk", targets: ["amk"]),
        // amk's built-in extensions, run as extension processes; installed beside amk.
        .executable(name: "amk-sample-extensions", targets: ["amk-sample-extensions"]),
    ],
    dependencies: [
        // `from:` rather than `exact:`, so that a package using ours resolves beside its own
        // requirements (these are the lowest versions this machine's mirror holds).
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The paired transfer's X25519, HKDF, HMAC and ChaCha20-Poly1305 (CryptoKit's API).
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // Documentation only (`swift package generate-documentation`): a plugin, linked into nothing.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZMA",
            pkgConfig: "liblzma",
            providers: [.apt(["liblzma-dev"]), .brew(["xz"])]
        ),
        .target(name: "CPlatform"),
        .target(name: "XZ", dependencies: ["CLZMA"], swiftSettings: strict),
        .target(name: "Tar", swiftSettings: strict),
        .target(
            name: "IndexedArchive",
            dependencies: ["XZ", "Tar", "CPlatform", .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                           .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(name: "AppMigration", dependencies: ["IndexedArchive", "CPlatform", .product(name: "Crypto", package: "swift-crypto"),
                                                     .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        .target(name: "AppMigrationKit", dependencies: ["AppMigration"], swiftSettings: strict),
        .target(name: "AppMigrationTesting", dependencies: ["AppMigrationKit"], swiftSettings: strict),
        // One generator for the demo and the benchmark; Foundation only, so either can depend on it.
        .target(name: "SampleData", swiftSettings: strict),
        .executableTarget(
            name: "amk",
            dependencies: [
                // The built-in extensions' executable, built with amk (`swift run amk` builds it too).
                "IndexedArchive", "AppMigration", "Tar", "amk-sample-extensions",
                // The demo's container is the benchmark's appdata corpus.
                "SampleData",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict + [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))],
            // The release amk carries the Swift runtime and Foundation inside it: `amk --help`
            // then takes about 6 ms instead of 11 (the dynamic loader's relocations and symbol
            // lookups across a dozen libraries), a third of what listing a real tree's archive
            // takes (issue #12). The price is a 100 MB binary. The module is compiled with the
            // flag too, so that it names the static libraries Foundation needs; lld links it,
            // because gold warns about the mktemp call inside the static Foundation. Debug
            // builds, which the tests link, stay dynamic.
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld"], .when(configuration: .release))]
        ),
        .executableTarget(name: "amk-sample-extensions", dependencies: ["AppMigration"], swiftSettings: strict),
        // What every test target shares (the seeded generator, child processes, temporary
        // directories, the built executables' place); the generator is SampleData's.
        .target(name: "TestSupport", dependencies: ["SampleData"], path: "Tests/TestSupport", swiftSettings: strict),
        // Helpers that build hostile archives by hand, for the test targets that need them.
        .target(name: "ArchiveTestSupport", dependencies: ["IndexedArchive", "XZ", "Tar", .product(name: "Logging", package: "swift-log")],
                path: "Tests/ArchiveTestSupport",
                swiftSettings: strict),
        // The transfer protocol spoken by hand on blocking sockets, for the peers that pair and
        // then misbehave in the library's and the CLI's tests.
        .target(name: "TransferTestSupport", dependencies: ["AppMigration", "TestSupport", .product(name: "Crypto", package: "swift-crypto")],
                path: "Tests/TransferTestSupport",
                swiftSettings: strict),
        .testTarget(name: "XZTests", dependencies: ["XZ", "CLZMA", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "TarTests", dependencies: ["Tar", "TestSupport"], swiftSettings: strict),
        // XZ tells what compresses and checksums the pinned corpora.
        .testTarget(name: "SampleDataTests", dependencies: ["SampleData", "XZ", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "IndexedArchiveTests", dependencies: ["IndexedArchive", "XZ", "Tar", "ArchiveTestSupport", "TestSupport",
                                                          .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // An extension executable that misbehaves on request, for the host's process tests.
        .executableTarget(name: "amk-test-extension", dependencies: ["AppMigration"], path: "Tests/TestExtension",
                          swiftSettings: strict),
        .testTarget(name: "AppMigrationTests", dependencies: ["AppMigration", "amk-test-extension", "TestSupport", "IndexedArchive", "Tar", "XZ", "ArchiveTestSupport", "TransferTestSupport",
                                                         .product(name: "Crypto", package: "swift-crypto"),
                                                         .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // Written from Apple's AppMigrationKit reference alone, as for iOS, plus the registration.
        .testTarget(name: "AppMigrationKitConformanceTests", dependencies: ["AppMigrationKit", "AppMigrationTesting"],
                    swiftSettings: strict),
        .testTarget(name: "StressTests", dependencies: ["IndexedArchive", "AppMigration", "amk-test-extension", "TestSupport"], swiftSettings: strict),
        // XZ, Tar and IndexedArchive craft the hostile archives the binary is run on.
        .testTarget(name: "amkTests", dependencies: ["amk", "XZ", "Tar", "IndexedArchive", "ArchiveTestSupport", "AppMigration", "TestSupport", "TransferTestSupport",
                                                 .product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
    ]
)
