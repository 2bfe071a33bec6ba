import AppMigration
import Foundation

/// File helpers shared by the built-in extensions.
///
/// On the import side, nothing here follows a symbolic link: the staged tree came from an archive,
/// and although the host refuses links that lead out of it, a link that stays inside would still
/// make a following merge read or move the wrong files. Every decision is made on `lstat`
/// (`attributesOfItem`, which does not follow), a link is moved as the link it is (`rename`
/// moves the link itself), and a link standing where a folder is expected is refused.
enum SampleFiles {
    /// What `lstat` says is at a path.
    enum ItemKind: Equatable {
        case missing, directory, symbolicLink, other
    }

    /// What is at `url`, the final link not followed.
    static func kind(of url: URL) -> ItemKind {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path(percentEncoded: false)) else {
            return .missing
        }
        switch attributes[.type] as? FileAttributeType {
        case .typeDirectory?: return .directory
        case .typeSymbolicLink?: return .symbolicLink
        default: return .other
        }
    }

    /// Whether `url` is a directory, following a final link: for the export side, where the
    /// container is the app's own and the engine stores whatever it is given without following.
    static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path(percentEncoded: false), isDirectory: &isDirectory)
            && isDirectory.boolValue
    }

    /// Merges the received folder `name` under `staging` into `destination`: nothing to do when
    /// it was not received, a ``RefusedReceivedItem`` when it is not a real folder.
    static func mergeReceivedFolder(named name: String, in staging: URL, into destination: URL) throws {
        let staged = staging.appending(path: name, directoryHint: .notDirectory)
        switch kind(of: staged) {
        case .missing:
            return
        case .directory:
            try merge(staged, into: destination)
        case .symbolicLink:
            throw RefusedReceivedItem(path: staged.path(percentEncoded: false), name: name, found: "a symbolic link")
        case .other:
            throw RefusedReceivedItem(path: staged.path(percentEncoded: false), name: name, found: "a file")
        }
    }

    /// Moves the contents of the real folder `source` into `destination`, merging folders and
    /// replacing anything else of the same name.
    ///
    /// Only two real folders are merged; in every other case the received item replaces what is
    /// there (a link in the container is removed as a link) and is moved as it is, so a received
    /// link arrives as a link and nothing is read or moved through one. `destination` is made a
    /// real folder first if it is not one.
    static func merge(_ source: URL, into destination: URL) throws {
        let fileManager = FileManager.default
        switch kind(of: destination) {
        case .directory:
            break
        case .missing:
            try fileManager.createDirectory(at: destination, withIntermediateDirectories: true)
        case .symbolicLink, .other:
            try fileManager.removeItem(at: destination)
            try fileManager.createDirectory(at: destination, withIntermediateDirectories: true)
        }
        // `source` is a real folder (checked by the caller, or below), so listing it lists it.
        for name in try fileManager.contentsOfDirectory(atPath: source.path(percentEncoded: false)) {
            let from = source.appending(path: name, directoryHint: .notDirectory)
            let to = destination.appending(path: name, directoryHint: .notDirectory)
            let target = kind(of: to)
            if kind(of: from) == .directory, target == .directory {
                try merge(from, into: to)
            } else {
                // FileManager removes a link itself, not its target.
                if target != .missing { try fileManager.removeItem(at: to) }
                try fileManager.moveItem(at: from, to: to)
            }
        }
    }

    /// Bytes of the regular files under `folders` (links not followed).
    static func regularFileBytes(under folders: [URL]) -> Int {
        var total = 0
        for folder in folders {
            let base = folder.path(percentEncoded: false)
            guard let enumerator = FileManager.default.enumerator(atPath: base) else { continue }
            while let relative = enumerator.nextObject() as? String {
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: base + "/" + relative),
                    attributes[.type] as? FileAttributeType == .typeRegular
                else { continue }
                total += (attributes[.size] as? Int) ?? 0
            }
        }
        return total
    }
}
