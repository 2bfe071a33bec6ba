public import Foundation

/// The progress the host follows during an import, for extensions that use the default
/// ``ResourcesImporting/resourcesImportProgress``.
enum ImportProgressScope {
    @TaskLocal static var bound: Progress?
}

extension ResourcesImporting {
    /// The host's progress for the running import (one object, read as often as you like), with a
    /// total of 100 units; outside an import, a new progress. Implement the property yourself only
    /// to report in other units.
    public var resourcesImportProgress: Progress {
        ImportProgressScope.bound ?? Progress(totalUnitCount: 100)
    }
}
