/// The host's rule for an import's signs of life, one reading at a time: a millisecond more of CPU
/// time on the importer's threads shows work, and a change of its completed count shows progress.
///
/// In-process importers are read by the watchdog's probe, process extensions through their
/// heartbeats; both judge by this one rule. An export's properties (the size estimate, which may
/// walk the whole container) are judged by its CPU half too; an exporter's appends are its
/// signs of life after that.
struct ImportSignsOfLife {
    private var cpu: Int64
    private var completed: Int64

    init(cpu: Int64 = 0, completed: Int64 = 0) {
        self.cpu = cpu
        self.completed = completed
    }

    /// Takes a reading. The figures may come from an extension process, so any `Int64`: no
    /// arithmetic here can trap.
    mutating func see(cpu: Int64, completed: Int64) -> (working: Bool, advanced: Bool) {
        let working =
            cpu > self.cpu && cpu.subtractingReportingOverflow(self.cpu).partialValue >= MigrationSystem.importCPUSignOfLife
        if working { self.cpu = cpu }
        let advanced = completed != self.completed
        self.completed = completed
        return (working, advanced)
    }
}
