public import Foundation

/// An extension that imports data exported from the app on another device.
///
/// The host extracts the archive into a staging folder inside the container, then calls
/// ``importResources(at:request:)``. If it throws, the host clears the app's data container (but
/// not its app-group containers: clear those yourself before writing to them) and records the
/// failure for the app to read in ``MigrationStatus/importStatus``, as an `NSError` with the
/// thrown error's domain and code.
///
/// ## Signs of life
///
/// The host stops an importer only when it can tell that it is stuck: during a whole stall timeout
/// (``MigrationSystem/importWatchdogPolicy``, ten minutes by default) it neither advanced the
/// ``resourcesImportProgress`` object the host read when the import began, nor used as much as a
/// millisecond of CPU time on the threads that run its code. Copying, decoding or computing, even
/// for hours and without a word of progress, keeps the import alive; waiting on a lock, a
/// semaphore, a read that never returns or a sleep does not. Work the importer hands to threads of
/// its own (a detached task, a global dispatch queue) is not seen: report progress from it.
public protocol ResourcesImporting: AppMigrationExtension {
    /// Moves or copies what it needs from `url`, the extracted data, into the app's container.
    func importResources(at url: URL, request: ResourcesImportRequest) async throws

    /// The import's progress, a requirement as in AppMigrationKit. The host reads it once, when
    /// the import begins, and mirrors that object into the progress it reports: to be followed,
    /// return the same object every time (a stored `let`) and advance it as work is done. A
    /// property that makes a new object at each read is allowed; the host then sees no progress,
    /// and the import stays alive by the work it does (see "Signs of life" above).
    var resourcesImportProgress: Progress { get }
}
