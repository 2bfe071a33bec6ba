public import Foundation

#if !canImport(Darwin)
    extension FileManager {
        /// The app-group container `groupIdentifier`, as Apple's Foundation provides it: here, the
        /// folder the host configured for the current container
        /// (``MigrationDataContainer/appGroupDirectories``), created if missing; `nil` for a group the
        /// app does not belong to.
        ///
        /// Foundation on Linux has no app groups, and migration code that clears its group data before
        /// importing (as it must: a failed import does not clear app groups) calls this method.
        public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
            guard let url = MigrationDataContainer.current.appGroupDirectories[groupIdentifier] else { return nil }
            do {
                try createDirectory(at: url, withIntermediateDirectories: true)
                // cancellation: synchronous createDirectory cannot throw CancellationError; nil on any failure, as Foundation's API
            } catch {
                return nil
            }
            return url
        }
    }
#endif
