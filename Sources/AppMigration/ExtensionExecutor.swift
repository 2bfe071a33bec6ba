import Dispatch

/// Runs an extension's code on a dispatch queue of its own instead of Swift's cooperative pool.
///
/// The pool has one thread per core. An extension that blocks its thread (a read stuck in the
/// kernel, a semaphore that never signals) would take one of them for good; two such extensions on
/// a two-core machine would leave none to deliver the watchdog's verdict to the caller. A dispatch
/// queue's thread is not the pool's, and Dispatch starts another when one blocks, so the host keeps
/// running whatever the extension does.
///
/// `Sendable`: it holds only the queue, which is.
final class ExtensionExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init(name: String) {
        queue = DispatchQueue(label: "amk-extension-\(name)")
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
