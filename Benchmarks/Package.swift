// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "AppMigrationBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "AppMigration", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "amk-bench",
            dependencies: [.product(name: "IndexedArchive", package: "AppMigration")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
