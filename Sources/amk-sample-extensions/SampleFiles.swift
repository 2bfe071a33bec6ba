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
    ///
    /// A trailing `/` is dropped first: `lstat("Documents/")` follows a link named `Documents`
    /// (the kernel resolves the name as a folder), and a container's `Documents` linked outside
    /// was once taken for a real folder and merged into, writing where the link led.
    static func kind(of url: URL) -> ItemKind {
        var path = url.path(percentEncoded: false)
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
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

    /// Merges the received folder `name` under `staging` into `destination`, a folder inside the
    /// container at `root`: nothing to do when it was not received, a ``RefusedReceivedItem``
    /// when it is not a real folder.
    static func mergeReceivedFolder(named name: String, in staging: URL, into destination: URL, under root: URL) throws {
        let staged = staging.appending(path: name, directoryHint: .notDirectory)
        switch kind(of: staged) {
        case .missing:
            return
        case .directory:
            try makeRealFolders(upTo: destination, under: root)
            try merge(staged, into: destination)
        case .symbolicLink:
            throw RefusedReceivedItem(path: staged.path(percentEncoded: false), name: name, found: "a symbolic link")
        case .other:
            throw RefusedReceivedItem(path: staged.path(percentEncoded: false), name: name, found: "a file")
        }
    }

    /// Makes every folder from `root` down to `destination` a real folder: a missing one is
    /// created, and a link or a file standing where one belongs is removed (as the link it is)
    /// and replaced by a folder.
    ///
    /// Checking only `destination` is not enough: with `Library` a link to a folder outside the
    /// container, `Library/Application Support` is a real folder out there, and the merge once
    /// wrote the received files into it.
    static func makeRealFolders(upTo destination: URL, under root: URL) throws {
        let fileManager = FileManager.default
        var base = root.path(percentEncoded: false)
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        let target = destination.path(percentEncoded: false)
        guard target.hasPrefix(base + "/") else { return }
        var current = URL(filePath: base, directoryHint: .isDirectory)
        for component in target.dropFirst(base.count + 1).split(separator: "/") {
            current = current.appending(path: String(component), directoryHint: .notDirectory)
            switch kind(of: current) {
            case .directory:
                continue
            case .missing:
                try fileManager.createDirectory(at: current, withIntermediateDirectories: false)
            case .symbolicLink, .other:
                try fileManager.removeItem(at: current)
                try fileManager.createDirectory(at: current, withIntermediateDirectories: false)
            }
        }
    }

    /// Moves the contents of the real folder `source` into `destination`, merging folders and
    /// replacing anything else of the same name.
    ///
    /// Only two real folders are merged; in every other case the received item replaces what is
    /// there (a link in the container is removed as a link) and is moved as it is, so a received
    /// link arrives as a link and nothing is read or moved through one. `destination` is a real
    /// folder: ``makeRealFolders(upTo:under:)`` made it one, or the merge above found it one.
    static func merge(_ source: URL, into destination: URL) throws {
        let fileManager = FileManager.default
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
