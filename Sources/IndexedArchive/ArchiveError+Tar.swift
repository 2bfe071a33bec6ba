import Tar

extension ArchiveError {
    /// The tar parser's error as the ``ArchiveError`` the readers promise, keeping it whole in
    /// ``underlying``. `member` is the member the stream stopped in, if any.
    ///
    /// Something that is not tar, or a feature this reader does not support, is not damage: only
    /// what looks like a broken tar stream is called `.corrupt`.
    static func fromTar(_ tar: TarError, path: String?, member: String?) -> ArchiveError {
        let place = tar.offset.map { " at tar offset \($0)" } ?? ""
        let offset = member == nil ? nil : tar.offset
        switch tar.code {
        case .notATarStream:
            return ArchiveError(.notAnArchive, tar.message, path: path, underlying: tar)
        case .unsupported:
            // The message already says "unsupported: ...".
            return ArchiveError(.notAnArchive, "\(tar.message)\(place)", path: path, member: member, offset: offset, underlying: tar)
        case .tooLarge:
            return ArchiveError(
                .limitExceeded, "tar stream\(place): \(tar.message)", path: path, member: member, offset: offset,
                underlying: tar)
        default:
            return ArchiveError(
                .corrupt, "damaged tar stream\(place): \(tar.message)", path: path, member: member,
                offset: offset, underlying: tar)
        }
    }
}
