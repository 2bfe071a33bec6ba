package import Foundation

/// The executables built with the tests (`amk`, `amk-test-extension`), which tests run as a user
/// or the host would.
///
/// They are found beside the running test binary, so that a test always runs the `amk` of its
/// own build: the one `swift build --build-tests` made in the same build directory, whichever
/// `--scratch-path` or configuration that was. Only where the test binary cannot be located
/// does this fall back to `.build/debug` in the package's root.
package enum BuildProducts {
    /// The directory that holds the test binary and the executables built with it.
    package static let directory: URL = {
        #if canImport(Darwin)
            // `swift test` loads the tests as a bundle, `<build directory>/<name>.xctest`.
            if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
                return bundle.bundleURL.deletingLastPathComponent()
            }
        #else
            // `swift test` runs the tests as an executable, `<build directory>/<name>.xctest`.
            if let binary = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"), binary.hasSuffix(".xctest") {
                return URL(fileURLWithPath: binary).deletingLastPathComponent()
            }
        #endif
        // Tests/TestSupport/BuildProducts.swift -> the package's root.
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug")
    }()

    /// The path of the built executable `name`.
    package static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
}
