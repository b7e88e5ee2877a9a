import NIOPosix

/// A Swift task executor with one thread of its own (a NIO thread pool of one): the code of a
/// task that prefers it (`withTaskExecutorPreference`) runs on that thread, where blocking is
/// harmless because nothing else waits for the thread.
///
/// SQLite's writer runs every write on one (`SQLiteDatabase`): the writer's hand-over to the next
/// waiting write, `BEGIN`, the statements, `COMMIT` and its `fsync` all happen there, so how long
/// a write holds the writer does not depend on how busy the executors answering requests are (the
/// event loops, when Swift concurrency runs on them: issue 61).
final class ThreadExecutor: TaskExecutor {
    private let thread: NIOThreadPool

    /// Starts the thread.
    init() {
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        thread.submit { state in
            switch state {
            case .active:
                job.runSynchronously(on: self.asUnownedTaskExecutor())
            case .cancelled:
                // Stopped (`shutdown()`): a task that still prefers this executor goes on, on the
                // global one. A job is never dropped, or its task would never resume.
                globalConcurrentExecutor.enqueue(ExecutorJob(job))
            }
        }
    }

    /// Stops the thread once the jobs queued before run; later ones go to the global executor.
    func shutdown() async {
        try? await thread.shutdownGracefully()
    }
}
