import AppMigration
import ArgumentParser
import Foundation

/// `amk-bench extensions`: what running the extension in a process of its own costs an export.
/// The same container is exported, alternately, by an extension in this process and by amk's
/// built-in extension executable (`amk-sample-extensions`, beside the release `amk`), in two
/// shapes: the folder appended whole (one `appendItem`), and file by file (one `appendItem`, so
/// one round trip to the host, per file).
struct ExtensionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extensions",
        abstract: "Compare out-of-process exports (extension executables) with in-process ones."
    )

    @OptionGroup var options: ContainerCorpus

    @Option(help: "Which shapes to run: whole, per-file, or both.")
    var shape = "both"

    @Option(help: "The amk-sample-extensions executable. Default: beside the release (then debug) amk.")
    var samples: String?

    func validate() throws {
        guard ["whole", "per-file", "both"].contains(shape) else { throw ValidationError("--shape is whole, per-file or both") }
    }

    func run() async throws {
        let log: (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        guard
            let executable = samples
                ?? BenchCommand.locateCLI(nil).map({
                    URL(fileURLWithPath: $0).deletingLastPathComponent().appending(path: "amk-sample-extensions").path
                }),
            FileManager.default.isExecutableFile(atPath: executable)
        else {
            throw ValidationError(
                "amk-sample-extensions not found: build it in the root package (`swift build -c release --product amk` builds it), "
                    + "or pass --samples PATH")
        }
        let work = URL(fileURLWithPath: NSTemporaryDirectory()).appending(path: "amk-bench-extensions-\(getpid())")
        defer { try? FileManager.default.removeItem(at: work) }
        let (source, bytes) = try options.sourceContainer(in: work, log: log)
        let (runs, preset) = (options.runs, options.preset)
        let files = FileManager.default.enumerator(atPath: source.documentsDirectory.path)?.allObjects.count ?? 0
        let system = MigrationSystem(compressionPreset: preset)
        let request = MigrationRequest(destinationPlatform: .current)
        var times: [String: [Double]] = [:]
        let shapes = shape == "both" ? ["whole", "per-file"] : [shape]
        let archive = work.appending(path: "out.tar.xz")
        for round in 1...runs {
            // Alternate which goes first, so that a machine getting busier or quieter over the
            // run does not favour one side.
            let order = round % 2 == 1 ? ["in", "out"] : ["out", "in"]
            for shape in shapes {
                for way in order {
                    let start = ContinuousClock.now
                    switch (way, shape) {
                    case ("in", "whole"):
                        _ = try await system.exportResources(of: DocumentsMigration(), from: source, request: request, to: archive)
                    case ("in", _):
                        _ = try await system.exportResources(of: DocumentsFileByFile(), from: source, request: request, to: archive)
                    case (_, "whole"):
                        _ = try await system.exportResources(
                            of: ExtensionExecutable(path: executable, arguments: ["sample"]), from: source, request: request, to: archive)
                    default:
                        _ = try await system.exportResources(
                            of: ExtensionExecutable(path: executable, arguments: ["documents"]), from: source, request: request,
                            to: archive)
                    }
                    let seconds = (ContinuousClock.now - start).seconds
                    times["\(way)-\(shape)", default: []].append(seconds)
                    try? FileManager.default.removeItem(at: archive)
                    log(String(format: "round %d: %@ %@ %.2f s", round, shape, way == "in" ? "in-process" : "out-of-process", seconds))
                }
            }
        }
        let mib = Double(bytes) / 1_048_576
        print(String(format: "EXTENSIONS (%.1f MiB in %d files, preset %d, %d rounds, medians [min-max])", mib, files, preset, runs))
        for shape in shapes {
            let inside = times["in-\(shape)"]!, outside = times["out-\(shape)"]!
            let label = shape == "whole" ? "folder appended whole" : "one append per file  "
            for (name, values) in [("in-process    ", inside), ("out-of-process", outside)] {
                let median = TransferCommand.median(values)
                print(
                    String(
                        format: "  %@, %@ %6.2f s [%.2f-%.2f]  %6.1f MiB/s", label, name, median, values.min()!, values.max()!,
                        mib / median))
            }
            print(
                String(
                    format: "  %@: out-of-process throughput / in-process throughput: %.3f", label,
                    TransferCommand.median(inside) / TransferCommand.median(outside)))
        }
    }
}

/// Every regular file and link under `Documents`, one `appendItem` each: the in-process twin of
/// the built-in `documents` extension.
struct DocumentsFileByFile: ResourcesExporting {
    var resourcesVersion: String { "1" }
    var resourcesCompressible: Bool { true }
    var resourcesSizeEstimate: Int { 0 }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        let documents = appContainer.documentsDirectory
        guard let walker = FileManager.default.enumerator(atPath: documents.path(percentEncoded: false)) else { return }
        while let relative = walker.nextObject() as? String {
            let url = documents.appending(path: relative, directoryHint: .notDirectory)
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path(percentEncoded: false), isDirectory: &isFolder), isFolder.boolValue,
                (try? FileManager.default.contentsOfDirectory(atPath: url.path(percentEncoded: false)))?.isEmpty == false
            {
                continue
            }
            try await archiver.appendItem(at: url, pathInArchive: "documents/\(relative)")
        }
    }
}
