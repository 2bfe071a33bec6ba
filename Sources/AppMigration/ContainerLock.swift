import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The container's migration lock: `flock(LOCK_EX | LOCK_NB)` on a file in the host's folder.
///
/// `flock` locks belong to an open file description, so a second migration is refused whether it
/// runs in another process or in this one, and the kernel drops the lock if the process dies: a
/// crashed migration never leaves the container locked for good.
///
/// Because the lock belongs to the description, a process that any thread spawns while the lock is
/// held shares it until that process execs and `O_CLOEXEC` closes its copy. Closing our descriptor
/// alone would leave the container locked for that moment, and a migration that follows at once
/// (an import right after an export, as ``AppMigrationTester`` does) would be refused as if another
/// were running. The lock is therefore released with `LOCK_UN`, which frees it for every copy.
///
/// A migration that must hold the container before its import starts (a receive, which waits for
/// its sender first) takes the lock with ``reserving(_:extensionName:isolation:_:)``; the one
/// import it then runs finds the reservation in a task-local value and goes ahead under it.
package enum ContainerLock {
    /// The lock file that the current task reserved for the migration it runs, if any.
    @TaskLocal private static var reservation: String?

    static func url(for container: MigrationDataContainer) -> URL {
        container.hostDirectory.appending(path: "migration.lock", directoryHint: .notDirectory)
    }

    /// Runs `body` holding the container's lock, or throws ``AppMigrationError/Code/migrationInProgress``.
    package static func withLock<T>(
        on container: MigrationDataContainer, extensionName: String?,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async throws -> T {
        let path = url(for: container).path(percentEncoded: false)
        if reservation == path {
            // The caller took the lock for this migration; anything nested in it is a second one.
            return try await $reservation.withValue(nil) { try await body() }
        }
        try DurableFile.createDirectory(container.hostDirectory.path(percentEncoded: false))
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw AppMigrationError(
                .migrationInProgress, "cannot open the migration lock: \(String(cString: strerror(errno)))",
                extensionName: extensionName, path: path)
        }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let reason =
                errno == EWOULDBLOCK
                ? "another migration is running in this container"
                : "cannot lock: \(String(cString: strerror(errno)))"
            throw AppMigrationError(.migrationInProgress, reason, extensionName: extensionName, path: path)
        }
        // Runs before the `close` deferred above: see the type's comment.
        defer { flock(fd, LOCK_UN) }
        return try await body()
    }

    /// Runs `body` holding the container's lock, which the first migration `body` runs (an
    /// import) uses instead of taking it again: a receive reserves its container before it waits
    /// for a sender, so a second receive or an import into the same container is refused at once,
    /// not after a pairing and a whole transfer.
    package static func reserving<T>(
        _ container: MigrationDataContainer, extensionName: String?,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async throws -> T {
        let path = url(for: container).path(percentEncoded: false)
        return try await withLock(on: container, extensionName: extensionName) {
            try await $reservation.withValue(path) { try await body() }
        }
    }

    /// Whether some migration holds the lock now.
    package static func isHeld(on container: MigrationDataContainer) -> Bool {
        let fd = open(url(for: container).path(percentEncoded: false), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // A shared probe conflicts only with the migration's exclusive lock; it is released at once.
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(fd, LOCK_UN)
        return false
    }
}
