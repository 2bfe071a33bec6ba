import ArgumentParser
import IndexedArchive

/// `--xattrs`, `--xattrs-include` and `--acls` of `extract` and `salvage`: which of the extended
/// attributes and ACLs stored in the archive are restored. A salvage of an archive packed with
/// `--xattrs` restored none, had no option to, and said nothing of it.
struct AttributeOptions: ParsableArguments {
    @Flag(help: "Restore extended attributes stored in the archive (SCHILY.xattr.*), where the file system allows; a refusal is a warning.")
    var xattrs = false

    @Option(
        help: ArgumentHelp(
            "Restore only extended attributes whose name matches this wildcard (repeatable; implies --xattrs; default: user.* and system.*, leaving out security.* and trusted.*, which grant privilege).",
            valueName: "pattern"))
    var xattrsInclude: [String] = []

    @Flag(
        help:
            "Restore POSIX ACLs other tars store as text (SCHILY.acl.access/default: GNU tar --acls, bsdtar), where the file system allows; a refusal is a warning."
    )
    var acls = false

    /// Asks `options` to restore what was chosen; the engine's default (none) otherwise.
    func apply(to options: inout ExtractOptions) {
        options.restoreExtendedAttributes = xattrs || !xattrsInclude.isEmpty
        if !xattrsInclude.isEmpty { options.extendedAttributePatterns = xattrsInclude }
        options.restoreAccessControlLists = acls
    }
}
