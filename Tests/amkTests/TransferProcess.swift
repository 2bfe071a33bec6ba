import Foundation
import TestSupport
import Testing

/// Helpers for the tests that run `amk receive` and `amk send` as two processes.
enum TransferProcess {
    /// Whether this build of `amk` has `command` registered (the CLI owner adds the transfer
    /// commands to `AMK.commands`); the transfer tests are skipped, visibly, until it does.
    static func has(_ command: String) -> Bool {
        // An unknown subcommand with --help prints the root's help and exits 0, so look for the
        // subcommand's own usage line.
        guard let help = try? AMKProcess.run([command, "--help"]) else { return false }
        return help.status == 0 && help.stdout.contains("USAGE: amk \(command) ")
    }

    /// Starts `amk receive` on a free loopback port and waits for its "listening on" and
    /// "pairing code" lines.
    static func startReceiver(container: String, extra: [String] = []) throws -> (process: ChildProcess, endpoint: String, code: String) {
        // `files` unless the caller chooses (the two extension options exclude each other).
        let chosen = extra.contains { $0.hasPrefix("--extension") } ? [] : ["--extension", "files"]
        let process = try AMKProcess.start(
            ["receive", "--listen", "127.0.0.1:0", "--container", container] + chosen + ["--accept-timeout", "30"] + extra)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let match = process.stdoutSoFar().firstMatch(
                of: /listening on (127\.0\.0\.1:\d+)\npairing code ([0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4})\n/)
            {
                return (process, String(match.1), String(match.2))
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        process.send(SIGTERM)
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "amk receive did not start listening"])
    }

    /// Waits until `condition` holds or `seconds` pass.
    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return condition()
    }

    /// The largest file in any staging folder of the container at `root`.
    static func stagedBytes(in root: String) -> Int {
        let host = root + "/.amk"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: host) else { return 0 }
        var largest = 0
        for name in names where name.hasPrefix("staging-") {
            guard let walker = FileManager.default.enumerator(atPath: host + "/" + name) else { continue }
            while let relative = walker.nextObject() as? String {
                let size = (try? FileManager.default.attributesOfItem(atPath: host + "/" + name + "/" + relative)[.size] as? Int) ?? 0
                largest = max(largest, size)
            }
        }
        return largest
    }

    /// Regular files under `directory` (relative path -> bytes).
    static func files(under directory: String) -> [String: Data] {
        var result: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return result }
        while let relative = walker.nextObject() as? String {
            if relative == ".amk" || relative.hasPrefix(".amk/") { continue }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
                result[relative] = FileManager.default.contents(atPath: directory + "/" + relative)
            }
        }
        return result
    }

    /// The outcome recorded in a container's import status file, if any.
    static func recordedOutcome(in root: String) -> String? {
        guard let data = FileManager.default.contents(atPath: root + "/.amk/import-status.json"),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["outcome"] as? String
    }

    /// The message of the failure recorded in a container's import status file, if any.
    static func recordedMessage(in root: String) -> String? {
        guard let data = FileManager.default.contents(atPath: root + "/.amk/import-status.json"),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return nil }
        return error["message"] as? String
    }

    /// Every item under `directory`, links not followed (relative path -> bytes; a folder as
    /// "<dir>", a link as "-> target"): what a test compares to prove nothing changed.
    static func items(under directory: String) -> [String: Data] {
        var result: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return result }
        while let relative = walker.nextObject() as? String {
            let path = directory + "/" + relative
            switch (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType {
            case .typeDirectory?: result[relative] = Data("<dir>".utf8)
            case .typeSymbolicLink?:
                result[relative] = Data("-> \((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?")".utf8)
            default: result[relative] = FileManager.default.contents(atPath: path)
            }
        }
        return result
    }
}
