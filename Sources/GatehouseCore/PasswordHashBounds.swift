import GatehouseWire
/// What a password hash made elsewhere may cost to check, decided once for every way a hash
/// comes in (the Supabase import over HTTP and the CLI, `POST /auth/v1/admin/users`, any
/// `password_hash` field) and again before a stored one is checked. A hash over them would let
/// anyone who guesses at the account's address tie up the hashing threads or the memory (finding
/// 5 of issue 40: `$2a$31$…`, and Argon2id with m = 4 GiB and t = 2³²−1, were accepted).
public enum PasswordHashBounds {
    /// bcrypt's cost (2^cost rounds): 14 is about a second here.
    public static let maximumBcryptCost = 14
    /// Argon2id's memory in KiB (64 MiB), passes and lanes.
    public static let maximumArgon2MemoryKiB = 65_536
    public static let maximumArgon2Iterations = 10
    public static let maximumArgon2Parallelism = 4

    /// Why `hash` may not be stored or checked, or nil when it may: a bcrypt (`$2a$`, `$2b$`,
    /// `$2y$`) or Argon2id (`$argon2id$v=19$m=…,t=…,p=…$…`) string within the bounds.
    public static func problem(_ hash: String) -> String? {
        if hash.hasPrefix("$argon2id$") {
            let phc: Argon2idPHC
            switch Argon2idPHC.parse(hash) {
            case .success(let parsed): phc = parsed
            case .failure(let problem): return problem.description
            }
            if phc.memoryKiB > maximumArgon2MemoryKiB { return "the Argon2id memory (m=\(phc.memoryKiB)) is over \(maximumArgon2MemoryKiB) KiB" }
            if phc.iterations > maximumArgon2Iterations { return "the Argon2id passes (t=\(phc.iterations)) are over \(maximumArgon2Iterations)" }
            if phc.parallelism > maximumArgon2Parallelism { return "the Argon2id parallelism (p=\(phc.parallelism)) is over \(maximumArgon2Parallelism)" }
            return nil
        }
        guard ["$2a$", "$2b$", "$2y$"].contains(where: hash.hasPrefix), hash.utf8.count == 60 else {
            return "the hash is not bcrypt ($2a$, $2b$, $2y$) or Argon2id"
        }
        let digits = hash.utf8.dropFirst(4).prefix(2)
        guard digits.count == 2, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            hash.utf8.dropFirst(6).first == UInt8(ascii: "$"), let cost = Int(String(decoding: digits, as: UTF8.self)), cost >= 4
        else { return "the bcrypt cost is not readable" }
        if cost > maximumBcryptCost { return "the bcrypt cost (\(cost)) is over \(maximumBcryptCost)" }
        return nil
    }
}

/// An Argon2id PHC string (`$argon2id$v=19$m=…,t=…,p=…$salt$output`) read once, for every
/// place that looks inside one: the bounds an imported hash must keep, the parameters a stored
/// hash was made with (rehash at the next login when they differ) and the library that checks it.
public struct Argon2idPHC: Sendable, Equatable {
    public let memoryKiB: Int
    public let iterations: Int
    public let parallelism: Int
    /// Unpadded base64, as written.
    public let salt: Substring
    public let output: Substring

    /// Why a string is not one, in words an operator reads.
    public enum Problem: Error, Equatable {
        case notVersion19
        case unreadableParameters
        case notMTP

        public var description: String {
            switch self {
            case .notVersion19: "the Argon2id hash is not a v=19 PHC string"
            case .unreadableParameters: "the Argon2id parameters are not readable"
            case .notMTP: "the Argon2id parameters are not m, t and p"
            }
        }
    }

    /// The fields of `text`, or why it is not a v=19 Argon2id PHC string with exactly m, t and p
    /// (each a positive number).
    public static func parse(_ text: String) -> Result<Argon2idPHC, Problem> {
        let fields = text.split(separator: "$", omittingEmptySubsequences: true)
        guard text.hasPrefix("$argon2id$"), fields.count == 5, fields[1] == "v=19" else { return .failure(.notVersion19) }
        var values: [Substring: Int] = [:]
        for pair in fields[2].split(separator: ",") {
            let parts = pair.split(separator: "=")
            guard parts.count == 2, let value = Int(parts[1]), value > 0 else { return .failure(.unreadableParameters) }
            values[parts[0]] = value
        }
        guard let m = values["m"], let t = values["t"], let p = values["p"], values.count == 3 else { return .failure(.notMTP) }
        return .success(Argon2idPHC(memoryKiB: m, iterations: t, parallelism: p, salt: fields[3], output: fields[4]))
    }

    /// Bytes of output the string carries (unpadded base64: four characters per three bytes).
    public var outputBytes: Int { output.utf8.count * 3 / 4 }
}
