// swift-tools-version: 6.2
import PackageDescription

// A package of its own so that `swift test` at the root never builds the fuzz targets. `./run`
// builds them with libFuzzer (`-sanitize=fuzzer,address -DAMK_FUZZ`); a plain `swift build`
// gives executables that replay the checked-in corpus, as a regression run.
let package = Package(
    name: "AppMigrationFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "AppMigration", path: ".."),
    ],
    targets: [
        .target(name: "CFuzzer"),
        // InputRandom draws from the project's one seeded generator.
        .target(
            name: "FuzzSupport", dependencies: ["CFuzzer", .product(name: "SampleData", package: "AppMigration")],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "fuzz-tar",
            dependencies: ["FuzzSupport", .product(name: "Tar", package: "AppMigration")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "fuzz-archive",
            dependencies: ["FuzzSupport", .product(name: "IndexedArchive", package: "AppMigration")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "fuzz-index",
            dependencies: [
                "FuzzSupport",
                .product(name: "IndexedArchive", package: "AppMigration"),
                .product(name: "Tar", package: "AppMigration"),
                .product(name: "XZ", package: "AppMigration"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
