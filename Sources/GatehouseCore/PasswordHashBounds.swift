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
            let fields = hash.split(separator: "$", omittingEmptySubsequences: true)
            guard fields.count == 5, fields[1] == "v=19" else { return "the Argon2id hash is not a v=19 PHC string" }
            var values: [Substring: Int] = [:]
            for pair in fields[2].split(separator: ",") {
                let parts = pair.split(separator: "=")
                guard parts.count == 2, let value = Int(parts[1]), value > 0 else { return "the Argon2id parameters are not readable" }
                values[parts[0]] = value
            }
            guard let memory = values["m"], let iterations = values["t"], let lanes = values["p"], values.count == 3 else {
                return "the Argon2id parameters are not m, t and p"
            }
            if memory > maximumArgon2MemoryKiB { return "the Argon2id memory (m=\(memory)) is over \(maximumArgon2MemoryKiB) KiB" }
            if iterations > maximumArgon2Iterations { return "the Argon2id passes (t=\(iterations)) are over \(maximumArgon2Iterations)" }
            if lanes > maximumArgon2Parallelism { return "the Argon2id parallelism (p=\(lanes)) is over \(maximumArgon2Parallelism)" }
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
