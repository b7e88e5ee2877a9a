import CArgon2
import CSodium
import GatehouseCore

/// The two implementations of Argon2id the server carries. Both compute the same function
/// (RFC 9106, version 0x13) and write the same PHC string, so either verifies what the other
/// made; they differ in speed and in what they accept.
///
/// - `libsodium` picks SSSE3 or AVX2 kernels at run time: on the benchmark machine it takes
///   about half the reference build's CPU per hash (BENCHMARKS.md, "The hash"). Every hash
///   Gatehouse makes at one lane goes through it, and every check it can read.
/// - `reference` is libargon2 as Debian and Homebrew ship it (portable C, no SIMD). It keeps the
///   cases libsodium refuses: hashing with more than one lane, and checking a stored hash whose
///   output is shorter than 16 bytes (an import from another system).
public enum Argon2Implementation: String, CaseIterable, Sendable {
    case libsodium
    case reference

    /// The implementation that makes a new hash at `parameters`: libsodium writes one lane only.
    public static func hashing(_ parameters: Argon2Parameters) -> Argon2Implementation {
        parameters.parallelism == 1 && Sodium.ready ? .libsodium : .reference
    }

    /// The implementation that checks `phc`: libsodium reads every `v=19` string whose output is
    /// 16 bytes or more, whatever its lanes; anything else goes to the reference build.
    public static func verifying(_ phc: String) -> Argon2Implementation {
        guard Sodium.ready, case .success(let parsed) = Argon2idPHC.parse(phc) else { return .reference }
        return parsed.outputBytes >= 16 ? .libsodium : .reference
    }

    /// A new PHC string of `password` with a random 16-byte salt and a 32-byte output.
    public func hash(_ password: [UInt8], parameters: Argon2Parameters) throws -> String {
        switch self {
        case .libsodium:
            // `Sodium.ready` first: before `sodium_init` libsodium runs its portable kernels.
            guard Sodium.ready, parameters.parallelism == 1 else { throw PasswordHasherError(message: "libsodium hashes with one lane only") }
            var encoded = [CChar](repeating: 0, count: Int(crypto_pwhash_argon2id_STRBYTES))
            let status = crypto_pwhash_argon2id_str(
                &encoded, password, UInt64(password.count), UInt64(parameters.iterations), Int(parameters.memoryKiB) * 1024)
            guard status == 0 else { throw PasswordHasherError(message: "libsodium refused m=\(parameters.memoryKiB), t=\(parameters.iterations)") }
            return Self.string(encoded)
        case .reference:
            let salt = randomBytes(16)
            let length = argon2_encodedlen(
                parameters.iterations, parameters.memoryKiB, parameters.parallelism, UInt32(salt.count), 32, Argon2_id)
            var encoded = [CChar](repeating: 0, count: length)
            let status = argon2id_hash_encoded(
                parameters.iterations, parameters.memoryKiB, parameters.parallelism, password, password.count, salt, salt.count,
                32, &encoded, length)
            guard status == ARGON2_OK.rawValue else {
                throw PasswordHasherError(message: String(cString: argon2_error_message(status)))
            }
            return Self.string(encoded)
        }
    }

    /// Whether `password` is the one `phc` was made from. Both libraries compare the output in
    /// constant time.
    public func verify(_ password: [UInt8], against phc: String) -> Bool {
        switch self {
        case .libsodium:
            return Sodium.ready && crypto_pwhash_argon2id_str_verify(phc, password, UInt64(password.count)) == 0
        case .reference:
            return argon2id_verify(phc, password, password.count) == ARGON2_OK.rawValue
        }
    }

    /// The raw output for a given salt (16 bytes for libsodium), for proving that the two
    /// implementations agree byte for byte (tests, `gatehouse-bench hash`).
    public func raw(_ password: [UInt8], salt: [UInt8], parameters: Argon2Parameters, length: Int = 32) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: length)
        switch self {
        case .libsodium:
            guard parameters.parallelism == 1, salt.count == Int(crypto_pwhash_argon2id_SALTBYTES), Sodium.ready else {
                throw PasswordHasherError(message: "libsodium computes one lane with a 16-byte salt only")
            }
            let status = crypto_pwhash_argon2id(
                &output, UInt64(length), password, UInt64(password.count), salt, UInt64(parameters.iterations),
                Int(parameters.memoryKiB) * 1024, crypto_pwhash_argon2id_alg_argon2id13())
            guard status == 0 else { throw PasswordHasherError(message: "libsodium refused the parameters") }
        case .reference:
            let status = argon2id_hash_raw(
                parameters.iterations, parameters.memoryKiB, parameters.parallelism, password, password.count, salt, salt.count,
                &output, length)
            guard status == ARGON2_OK.rawValue else {
                throw PasswordHasherError(message: String(cString: argon2_error_message(status)))
            }
        }
        return output
    }

    private static func string(_ encoded: [CChar]) -> String {
        String(decoding: encoded.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// libsodium's one-time set-up: `sodium_init` chooses the kernels for this CPU (until it runs,
/// libsodium computes Argon2 with its portable code, as slow as the reference build); later
/// calls do nothing. Every libsodium call above reads `ready` first. Should it fail, every hash
/// and check takes the reference build.
enum Sodium {
    static let ready: Bool = sodium_init() >= 0
}
