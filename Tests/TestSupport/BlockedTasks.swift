import Dispatch

/// Starts `count` child tasks that each block their thread until all of them have started, and
/// returns whether they all did: what an executor with fewer threads than blocked tasks cannot do.
/// The waiting happens on the caller's thread, which must not be one the children need.
package func blockedTasksAllMeet(count: Int) async throws -> Bool {
    let arrived = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    return try await withThrowingTaskGroup(of: Bool.self) { group in
        for _ in 0..<count {
            group.addTask {
                arrived.signal()
                return release.wait(timeout: .now() + 45) == .success
            }
        }
        let deadline = DispatchTime.now() + 30
        var everyone = true
        for _ in 0..<count where arrived.wait(timeout: deadline) == .timedOut { everyone = false }
        for _ in 0..<count { release.signal() }
        var released = 0
        for try await ok in group where ok { released += 1 }
        return everyone && released == count
    }
}
