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

    /// Sets `options` as asked, or as tar would by default for the user running it.
    func apply(to options: inout ExtractOptions) {
        options.restoreOwnership = sameOwner ?? (geteuid() == 0)
        options.mapsOwnersByName = !numericOwner
    }
}
