import ArgumentParser
import Foundation
import IndexedArchive

/// Whose files `extract` and `salvage` write: `--same-owner`, `--no-same-owner`, `--numeric-owner`,
/// with GNU tar's and bsdtar's defaults, so that a root restoring a backup of `/etc` or `/var`
/// gets its owners back without being told to.
struct OwnershipOptions: ParsableArguments {
    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Give members the owner and group the archive names, as tar does (default: on when run as root; only root can). Set-user-ID and set-group-ID bits are kept only with it."
        ))
    var sameOwner: Bool?

    @Flag(help: "With --same-owner, use the archive's numeric user and group ids, not its names.")
    var numericOwner = false

    @Flag(
        name: [.customShort("p"), .customLong("same-permissions"), .customLong("preserve-permissions")],
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Give members the archive's permission bits whole, as tar -p does (default: on when run as root; otherwise the umask is taken off them and set-ID and sticky bits dropped, as tar does)."
        ))
    var samePermissions: Bool?

    /// Sets `options` as asked, or as tar would by default for the user running it: an archive
    /// from elsewhere holding a 0777 `.ssh` or a 0666 `authorized_keys` gave an ordinary user
    /// exactly those, where GNU tar and bsdtar take the umask off.
    func apply(to options: inout ExtractOptions) {
        options.restoreOwnership = sameOwner ?? (geteuid() == 0)
        options.mapsOwnersByName = !numericOwner
        options.restorePermissions = samePermissions ?? (geteuid() == 0)
        options.permissionMask = Self.umask()
    }

    /// The process's umask, read without changing it where Linux says it (`umask(2)` can only
    /// be read by setting it, for a moment in which another thread could create a file).
    static func umask() -> UInt32 {
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let mask = UInt32(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        {
            return mask & 0o777
        }
        let mask = Foundation.umask(0o022)
        _ = Foundation.umask(mask)
        return UInt32(mask) & 0o777
    }
}
