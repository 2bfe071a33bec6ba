import Foundation
import Synchronization
import TestSupport

@testable import AppMigration

/// A ``DurabilityProbe`` that lets the first `allowed` changes reach the disk and refuses every
/// change after them, as a power cut would: even a `catch` block's cleanup cannot write.
final class PowerCut: Sendable {
    struct Cut: Error, CustomStringConvertible {
        let point: String
        var description: String { "power cut before: \(point)" }
    }

    let allowed: Int
    private let state = Mutex<(count: Int, points: [DurabilityPoint])>((0, []))

    init(after allowed: Int = .max) {
        self.allowed = allowed
    }

    var probe: DurabilityProbe {
        DurabilityProbe { [self] point in
            let count = state.withLock { state in
                state.count += 1
                state.points.append(point)
                return state.count
            }
            if count > allowed { throw Cut(point: point.description) }
        }
    }

    /// Every point reported, including those refused.
    var points: [DurabilityPoint] { state.withLock { $0.points } }

    /// Whether the cut happened.
    var tripped: Bool { state.withLock { $0.count > allowed } }
}

/// A scratch folder for one test, removed when the value is released by `with`.
struct TransferScratch: Sendable {
    let directory: TemporaryDirectory
    var root: URL { directory.url }

    init() throws {
        directory = try TemporaryDirectory(prefix: "amk-transfer")
    }

    func url(_ name: String) -> URL { directory.url(name) }
    func path(_ name: String) -> String { directory.path(name) }

    /// The names in `directory` (default: the root), sorted.
    func names(in directory: String? = nil) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory ?? root.path(percentEncoded: false)).sorted()
    }

    static func with<T>(_ body: (TransferScratch) throws -> T) throws -> T {
        let scratch = try TransferScratch()
        defer { withExtendedLifetime(scratch) {} }
        return try body(scratch)
    }
}
