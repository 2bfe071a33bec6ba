// swift-tools-version: 6.2
import PackageDescription

// A package of its own so that `swift test` at the root never builds the benchmark's dependencies.
let package = Package(
    name: "AppMigrationBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "AppMigration", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .executableTarget(
            name: "amk-bench",
            dependencies: [
                .product(name: "IndexedArchive", package: "AppMigration"),
                .product(name: "XZ", package: "AppMigration"),
                .product(name: "AppMigration", package: "AppMigration"),
                .product(name: "SampleData", package: "AppMigration"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
