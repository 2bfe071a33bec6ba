/// A hook that durable writes call before each change they make to the disk.
///
/// Production code passes none. Crash tests pass one whose closure throws at a chosen
/// ``DurabilityPoint`` and at every point after it: once it has "cut the power", no later change
/// (not even one made by a `catch` block trying to clean up) reaches the disk, so the test sees the
/// disk exactly as a real power cut would leave it and proves that consistency never depends on
/// cleanup code running. The `amk _legacy-sweep` command uses one that sends itself `SIGKILL`.
package struct DurabilityProbe: Sendable {
    private let body: @Sendable (DurabilityPoint) throws -> Void

    /// `body` is called before each change; throwing stops the operation before the change is made.
    package init(_ body: @escaping @Sendable (DurabilityPoint) throws -> Void) {
        self.body = body
    }

    /// Reports `point`; throws what the probe throws.
    package func reach(_ point: DurabilityPoint) throws {
        try body(point)
    }
}

extension Optional where Wrapped == DurabilityProbe {
    /// Reports `point` to the probe if there is one.
    func reach(_ point: DurabilityPoint) throws {
        if let probe = self { try probe.reach(point) }
    }
}
