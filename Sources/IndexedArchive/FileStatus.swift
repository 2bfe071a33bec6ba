import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `fstat` said of an open file, in the fields the packer stores.
struct FileStatus: Sendable {
    var isRegular: Bool
    var size: UInt64
    var mode: UInt32
    var uid: UInt64
    var gid: UInt64
    var mtime: TarTimestamp
    /// The inode's change time, which a writer cannot set back: a file rewritten in place at
    /// the same size, its modification time then restored (`touch -r`, a tool that keeps
    /// times), differs from its earlier self in this alone. GNU tar checks it for the same reason.
    var changeTime: TarTimestamp
    /// What the file occupies on disk (`st_blocks`): less than its size where it has holes,
    /// the only files worth asking where their data is.
    var allocatedBytes: UInt64

    init(_ info: stat) {
        isRegular = info.st_mode & S_IFMT == S_IFREG
        size = UInt64(max(0, info.st_size))
        mode = UInt32(info.st_mode) & 0o7777
        uid = UInt64(info.st_uid)
        gid = UInt64(info.st_gid)
        mtime = Platform.modificationTime(info)
        changeTime = Platform.changeTime(info)
        allocatedBytes = UInt64(max(0, info.st_blocks)) * 512
    }

    /// Whether some of the file may be holes, which read as zeros without being stored.
    var mayHaveHoles: Bool { allocatedBytes < size }

    /// Whether the file was written (or its inode changed) since `earlier` was taken.
    func changed(since earlier: FileStatus) -> Bool {
        mtime != earlier.mtime || changeTime != earlier.changeTime
    }
}
