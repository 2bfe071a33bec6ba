import Foundation
import SampleData

/// Generates a corpus once and finds it again on later runs.
///
/// A corpus lives in `<cache>/amk-bench-corpus-<name>-<scale>/<name>/` and counts as present only
/// when the stamp file beside the tree names the current generator version: a run that was killed
/// half-way leaves no stamp, and a change to the generators bumps the version, so neither is
/// reused by mistake. The tree is built in a temporary folder and renamed into place.
struct CorpusCache {
    /// Bump when any generator's output changes (they live in the root package's SampleData,
    /// which `amk demo` uses too, so a change there for the demo's sake invalidates the cache).
    static let generatorVersion = 2
    /// Every corpus derives from this seed, so all machines generate the same bytes.
    static let seed: UInt64 = 0xa3c5_2025_0b0e_7e57

    let cacheRoot: String

    /// The directory to pack for `kind` at `scale`: generated if needed, else reused.
    func directory(for kind: CorpusKind, scale: Double, log: (String) -> Void) throws -> String {
        let name: String
        switch kind {
        case .directory(let path):
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw BenchError("\(path) is not a directory")
            }
            return URL(fileURLWithPath: path).standardizedFileURL.path
        case .appdata: name = "appdata"
        case .smallfiles: name = "smallfiles"
        }
        let folder = "\(cacheRoot)/amk-bench-corpus-\(name)-\(Self.format(scale))"
        let tree = "\(folder)/\(name)"
        let stamp = "\(folder)/stamp"
        let expected = "generator \(Self.generatorVersion) seed \(Self.seed) scale \(scale)\n"
        if (try? String(contentsOfFile: stamp, encoding: .utf8)) == expected {
            log("corpus \(name) at scale \(Self.format(scale)): reusing \(tree)")
            return tree
        }
        log("corpus \(name) at scale \(Self.format(scale)): generating into \(tree) ...")
        let start = ContinuousClock.now
        try? FileManager.default.removeItem(atPath: folder)
        let partial = "\(folder).partial-\(getpid())"
        try? FileManager.default.removeItem(atPath: partial)
        var writer = CorpusWriter(root: "\(partial)/\(name)")
        try FileManager.default.createDirectory(atPath: writer.root, withIntermediateDirectories: true)
        switch kind {
        case .appdata: try AppDataCorpus(scale: scale, seed: Self.seed).generate(into: &writer)
        case .smallfiles: try SmallFilesCorpus(scale: scale, seed: Self.seed).generate(into: &writer)
        case .directory: break
        }
        try expected.write(toFile: "\(partial)/stamp", atomically: true, encoding: .utf8)
        try FileManager.default.moveItem(atPath: partial, toPath: folder)
        let seconds = (ContinuousClock.now - start).seconds
        log(String(format: "  %d files, %.1f MiB in %.1f s", writer.files, Double(writer.bytes) / 1_048_576, seconds))
        return tree
    }

    /// `0.05`, `1`: the scale as it appears in the folder's name.
    static func format(_ scale: Double) -> String {
        var text = String(format: "%.4f", scale)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}
