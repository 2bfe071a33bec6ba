import IndexedArchive
import Tar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Formats members like `tar -tv`: `-rw-r--r--  12345 2026-11-22 03:52 src/a.txt`.
///
/// Owners are left out (the archive keeps numeric ids only, which mean little on another
/// machine); times are local, as tar shows them. Sizes are right-aligned to the widest one in
/// the listing so the dates line up. Names and link targets are escaped (``TerminalSafe``).
struct LongListing {
    let sizeWidth: Int

    init(entries: [ArchiveEntry]) {
        sizeWidth = max(6, entries.map { String($0.size).count }.max() ?? 0)
    }

    /// Sizes right-aligned to `sizeWidth` columns (a listing printed as the members come).
    init(sizeWidth: Int) {
        self.sizeWidth = sizeWidth
    }

    func line(for entry: ArchiveEntry) -> String {
        let size = String(entry.size)
        let padding = String(repeating: " ", count: max(0, sizeWidth - size.count))
        var line = "\(Self.modeString(entry)) \(padding)\(size) \(Self.date(entry.mtime)) \(TerminalSafe.name(entry.path))"
        switch entry.kind {
        case .symbolicLink: line += " -> \(TerminalSafe.name(entry.linkTarget ?? ""))"
        case .hardLink: line += " link to \(TerminalSafe.name(entry.linkTarget ?? ""))"
        default: break
        }
        return line
    }

    /// `drwxr-xr-x`, with `s`/`S` and `t`/`T` for the set-id and sticky bits, as `ls -l` prints them.
    static func modeString(_ entry: ArchiveEntry) -> String {
        let type: Character =
            switch entry.kind {
            case .regular: "-"
            case .directory: "d"
            case .symbolicLink: "l"
            case .hardLink: "h"
            case .characterDevice: "c"
            case .blockDevice: "b"
            case .fifo: "p"
            case .other: "?"
            }
        let mode = entry.mode
        func bit(_ mask: UInt32, _ letter: Character) -> Character { mode & mask != 0 ? letter : "-" }
        func special(_ execute: UInt32, _ flag: UInt32, _ set: Character, _ unset: Character) -> Character {
            switch (mode & execute != 0, mode & flag != 0) {
            case (true, true): set
            case (false, true): unset
            case (true, false): "x"
            case (false, false): "-"
            }
        }
        return String([
            type,
            bit(0o400, "r"), bit(0o200, "w"), special(0o100, 0o4000, "s", "S"),
            bit(0o040, "r"), bit(0o020, "w"), special(0o010, 0o2000, "s", "S"),
            bit(0o004, "r"), bit(0o002, "w"), special(0o001, 0o1000, "t", "T")
        ])
    }

    /// `2026-11-22 03:52` in local time.
    static func date(_ timestamp: TarTimestamp) -> String {
        var time = time_t(clamping: timestamp.seconds)
        var parts = tm()
        guard localtime_r(&time, &parts) != nil else { return "????-??-?? ??:??" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min))"
    }
}
