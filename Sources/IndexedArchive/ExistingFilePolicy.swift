/// What extraction does with a file that is already where a member goes (tar's
/// `--overwrite` and `--keep-old-files`). Folders are always reused, whatever the policy.
public enum ExistingFilePolicy: Sendable, Hashable {
    /// Replace it, atomically (a file is renamed over it): the default, as in tar.
    case replace
    /// Refuse: the extraction stops with an error naming the member, and the file is untouched.
    case keep
}
