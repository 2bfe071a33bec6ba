public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Moves each registered key's data from the places earlier releases kept it to its current
/// place: lazily, when the key is read, and all at once with ``sweep()`` at start-up.
///
/// The move is crash-safe. The new copy is written with ``DurableFile`` (temporary file, fsync,
/// rename, fsync of the folder) and the legacy copy is deleted only after that has returned, so
/// whenever a crash or a power cut hits, the data is whole in the legacy place, in the new place,
/// or in both, never in neither. When both exist the new one wins and the legacy leftover is
/// deleted by the next read or sweep.
///
/// ```swift
/// var migrator = LegacyLocationMigrator()
/// migrator.register("settings", at: support.appending(path: "settings.json"),
///                   legacy: [LegacyLocation(documents.appending(path: "prefs.json"))])
/// try migrator.sweep()                        // at start-up
/// let settings = try migrator.read("settings") // or lazily, on access
/// ```
///
/// One migrator should handle a key at a time (the app's storage layer, at start-up): two
/// processes moving the same key at once both end with the data in the new place, but one of them
/// may report the other's move as its own.
public struct LegacyLocationMigrator: Sendable {
    /// A key: its current place and the places it used to live, searched in order.
    public struct Key: Sendable {
        /// The data's name, in reports.
        public let name: String
        /// Where the data lives now.
        public let path: String
        /// Where earlier releases kept it, newest first.
        public let legacy: [LegacyLocation]
    }

    /// What ``migrate(_:)`` found and did for one key.
    public enum Outcome: Sendable, Equatable {
        /// The data is in its current place; no legacy copy was found.
        case current
        /// The data was moved from the legacy path.
        case migrated(from: String)
        /// The data was in its current place and legacy leftovers (from a move a crash
        /// interrupted after the new copy was durable) were deleted.
        case removedLeftovers([String])
        /// The key has no data anywhere.
        case absent
    }

    /// The registered keys, in registration order (the order a sweep visits them).
    public private(set) var keys: [Key] = []
    /// Called before every change to the disk; crash tests stop the migrator there.
    package var probe: DurabilityProbe?

    /// A migrator with nothing registered yet.
    public init() {}

    /// Registers `name`, whose data lives at `url` and used to live at the `legacy` places.
    /// Registering a name again replaces it.
    public mutating func register(_ name: String, at url: URL, legacy: [LegacyLocation]) {
        let key = Key(name: name, path: url.path(percentEncoded: false), legacy: legacy)
        if let index = keys.firstIndex(where: { $0.name == name }) {
            keys[index] = key
        } else {
            keys.append(key)
        }
    }

    /// The key's data, moved from a legacy place first if its own place is empty; nil if it has
    /// none anywhere.
    public func read(_ name: String) throws -> Data? {
        let key = self.key(name)
        try migrate(key)
        return try DurableFile.read(key.path)
    }

    /// Stores `data` as the key's data, durably, then deletes any legacy copies: once the key has
    /// been written in its new place, an old copy must never come back.
    public func write(_ data: Data, for name: String) throws {
        let key = self.key(name)
        try DurableFile.createDirectory(DurableFile.parent(of: key.path), probe: probe)
        try DurableFile.write(data, to: key.path, probe: probe)
        for legacy in key.legacy {
            try DurableFile.remove(legacy.path, probe: probe)
        }
    }

    /// Moves the key's data to its current place if it is only in a legacy one.
    @discardableResult
    public func migrate(_ name: String) throws -> Outcome {
        try migrate(key(name))
    }

    /// Migrates every registered key, in registration order; stops at the first failure.
    /// - Returns: each key's outcome, by name.
    @discardableResult
    public func sweep() throws -> [String: Outcome] {
        var outcomes: [String: Outcome] = [:]
        for key in keys {
            outcomes[key.name] = try migrate(key)
        }
        return outcomes
    }

    @discardableResult
    private func migrate(_ key: Key) throws -> Outcome {
        try DurableFile.removeStaleTemporaries(for: key.path)
        if try exists(key.path) {
            var removed: [String] = []
            for legacy in key.legacy where try DurableFile.remove(legacy.path, probe: probe) {
                removed.append(legacy.path)
            }
            return removed.isEmpty ? .current : .removedLeftovers(removed)
        }
        for legacy in key.legacy {
            guard let old = try DurableFile.read(legacy.path) else { continue }
            let data = try legacy.transform?(old) ?? old
            try DurableFile.createDirectory(DurableFile.parent(of: key.path), probe: probe)
            // Returns only once the new copy and its name are on disk; only then may the old go.
            try DurableFile.write(data, to: key.path, probe: probe)
            for other in key.legacy {
                try DurableFile.remove(other.path, probe: probe)
            }
            return .migrated(from: legacy.path)
        }
        return .absent
    }

    /// The registered key; an unregistered name is a programming error (a typo would otherwise
    /// read as "no data" and silently strand the user's legacy copy).
    private func key(_ name: String) -> Key {
        guard let key = keys.first(where: { $0.name == name }) else {
            preconditionFailure("LegacyLocationMigrator: key '\(name)' is not registered")
        }
        return key
    }

    private func exists(_ path: String) throws -> Bool {
        var info = stat()
        if lstat(path, &info) == 0 { return true }
        if errno == ENOENT { return false }
        throw DurableFileError(operation: "stat", path: path, errno: errno)
    }
}
