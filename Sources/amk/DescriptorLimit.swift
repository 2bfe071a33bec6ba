#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The open-file limit amk needs to run at all.
///
/// Under a very low `ulimit -n` amk did not fail with a message: at 8 to 12, about one run in
/// twenty died by a trap in the system's thread pool (libdispatch, which needs descriptors of its
/// own) and printed nothing; at 16 to 28 a deep tree failed to extract with "Too many open files"
/// (the extractor keeps up to 16 folders open). A limit that low is said once, before anything
/// starts.
enum DescriptorLimit {
    /// The fewest descriptors amk runs with: its three standard streams, the archive, the file
    /// being written, up to 16 open folders, and the thread pool's and a socket's.
    static let minimum: rlim_t = 32

    /// What is short, or nil when the limit is enough (or cannot be read).
    static func shortfall() -> String? {
        var limit = rlimit()
        #if canImport(Glibc)
            // Glibc's module gives the resource a type of its own, getrlimit takes its raw value.
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < minimum else { return nil }
        let raise = limit.rlim_max >= minimum ? " (`ulimit -n \(minimum)` or more; the hard limit allows \(limit.rlim_max))" : ""
        return "at least \(minimum) open files are needed, and this process may open only \(limit.rlim_cur)\(raise)"
    }
}
