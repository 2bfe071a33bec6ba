import CPlatform

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension FileSystem {
    /// `lseek(SEEK_DATA)` from the current position: a hole up to the next data, or to the
    /// file's current end (`ENXIO`), is skipped. A file system without holes, or one that does not
    /// answer (`EINVAL`), has none to skip.
    static func systemSkipHole(_ fd: Int32, limit: Int, path: String) throws(ArchiveError) -> Int {
        let position = lseek(fd, 0, SEEK_CUR)
        guard position >= 0, limit > 0 else { return 0 }
        let data = off_t(amk_seek_data(fd, Int64(position)))
        let holeEnd: off_t
        if data >= 0 {
            holeEnd = data
        } else if errno == ENXIO {
            // No data follows, or the position is past the end: a file that shrank since its
            // size was taken has no hole there, and its read must find the end, as before.
            holeEnd = max(position, lseek(fd, 0, SEEK_END))
        } else {
            holeEnd = position
        }
        let skipped = max(0, min(off_t(limit), holeEnd - position))
        // SEEK_DATA moved the position to the data: it belongs where the skipped bytes end.
        guard lseek(fd, position + skipped, SEEK_SET) == position + skipped else {
            throw SystemCall.error("lseek", path: path)
        }
        return Int(skipped)
    }
}
