import Foundation

// The hashing section of the configuration.
extension GatehouseConfig {
    /// Argon2id's cost, the hashing threads, the memory trim and the breached-password range
    /// service.
    static func readHashing(_ settings: inout Settings, into config: inout GatehouseConfig) {
        if let memory = settings.int("argon2_memory_kib", range: 8...4_194_304, meaning: "a memory size in KiB from 8 to 4194304") {
            config.argon2.memoryKiB = UInt32(memory)
        }
        if let iterations = settings.int("argon2_iterations", range: 1...64, meaning: "a number of passes from 1 to 64") {
            config.argon2.iterations = UInt32(iterations)
        }
        if let lanes = settings.int("argon2_parallelism", range: 1...16, meaning: "a number of lanes from 1 to 16") {
            config.argon2.parallelism = UInt32(lanes)
        }
        if let threads = settings.int("hash_threads", range: 1...256, meaning: "a thread count from 1 to 256") {
            config.hashThreads = threads
        }
        if let seconds = settings.int("memory_trim_seconds", range: 0...3_600, meaning: "a number of seconds from 0 (never) to 3600") {
            config.memoryTrimSeconds = seconds
        }
        if let url = settings.url("breached_passwords_url", schemes: ["http", "https"]) {
            config.breachedPasswordsURL = url.absoluteString.hasSuffix("/") ? url.absoluteString : url.absoluteString + "/"
        }
    }
}
