import CArgon2
import Foundation
import NIOPosix
import ServiceLifecycle

/// Gives the memory freed after a burst back to the system (issue 61). glibc keeps freed blocks
/// in its arenas and returns only the top of a heap by itself. After the load scenarios the
/// heap's live data was about 62 MiB (heaptrack), while the process held 198 MiB; one
/// `malloc_trim(0)` took it to 89 MiB with 1,000 connections open (BENCHMARKS.md).
///
/// Every `GATEHOUSE_MEMORY_TRIM_SECONDS` (1 by default; 0 turns it off) the free memory glibc's
/// arenas hold is read (`mallinfo2`); when it is over `threshold`, the trim runs, on NIO's
/// blocking pool, never on an event loop or the concurrency pool. Memory in use is never
/// touched, and a steady load that frees what it takes and takes it again soon keeps under the
/// threshold (the trim is Linux with glibc only). Each interval also sweeps Argon2id's kept
/// working memory (`Argon2Regions`).
struct MemoryTrim: Service {
    let interval: Duration
    /// The free bytes the arenas may keep before a trim.
    static let threshold = 16 << 20

    func run() async throws {
        await everyInterval(interval) {
            // Only while NIO's blocking pool runs (it stops with the process).
            try? await NIOThreadPool.singleton.runIfActive {
                // Argon2id's regions first: one nobody hashed in since the last interval goes back.
                Argon2Regions.shared.sweep()
                #if canImport(Glibc)
                if gatehouse_malloc_free_bytes() > Self.threshold { _ = gatehouse_malloc_trim() }
                #endif
            }
        }
    }
}
