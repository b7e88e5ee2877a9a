import CArgon2
import CSodium
import Foundation
import GatehouseArgon2
import GatehouseCore

/// The three implementations of Argon2id the server carries. All compute the same function
/// (RFC 9106, version 0x13) and write the same PHC string, so each verifies what another made;
/// they differ in speed and in what they accept.
///
/// - `gatehouse` is Gatehouse's own (`Server/Sources/GatehouseArgon2`, written from the RFC): one
///   vector form of the compression compiled for AVX-512VL, AVX2 and the baseline, picked at run
///   time (``Argon2Kernel``). It takes its working memory from the caller, so a region is kept
///   from one hash to the next (``Argon2Regions``) instead of being mapped, faulted in and
///   unmapped for every hash as libsodium's is (BENCHMARKS.md, issue 61 step 9). It reads any lanes, salt
///   and output length RFC 9106 allows. **The server hashes and checks with it** (``serving``).
/// - `libsodium` picks SSSE3, AVX2 or AVX-512 kernels at run time; one lane and outputs of 16
///   bytes or more only.
/// - `reference` is libargon2 as Debian and Homebrew ship it (portable C, no SIMD).
///
/// The other two stay for the byte-for-byte proofs (`StoredHashTests`) and
/// `gatehouse-bench hash`, which times all three side by side.
public enum Argon2Implementation: String, CaseIterable, Sendable {
    case gatehouse
    case libsodium
    case reference

    /// The implementation every hash and check of the server goes through.
    public static let serving: Argon2Implementation = .gatehouse

    /// A new PHC string of `password` with a random 16-byte salt and a 32-byte output.
    public func hash(_ password: [UInt8], parameters: Argon2Parameters) throws -> String {
        switch self {
        case .gatehouse:
            let salt = randomBytes(16)
            let output = try raw(password, salt: salt, parameters: parameters)
            let fields = "m=\(parameters.memoryKiB),t=\(parameters.iterations),p=\(parameters.parallelism)"
            return "$argon2id$v=19$\(fields)$\(Self.unpaddedBase64(salt))$\(Self.unpaddedBase64(output))"
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

    /// Whether `password` is the one `phc` was made from. Each implementation compares the
    /// output in constant time.
    public func verify(_ password: [UInt8], against phc: String) -> Bool {
        switch self {
        case .gatehouse:
            guard case .success(let parsed) = Argon2idPHC.parse(phc), let salt = Self.bytes(unpaddedBase64: parsed.salt),
                let expected = Self.bytes(unpaddedBase64: parsed.output), let memory = UInt32(exactly: parsed.memoryKiB),
                let iterations = UInt32(exactly: parsed.iterations), let lanes = UInt32(exactly: parsed.parallelism),
                let computed = try? raw(
                    password, salt: salt, parameters: Argon2Parameters(memoryKiB: memory, iterations: iterations, parallelism: lanes),
                    length: expected.count)
            else { return false }
            return constantTimeEquals(computed, expected)
        case .libsodium:
            return Sodium.ready && crypto_pwhash_argon2id_str_verify(phc, password, UInt64(password.count)) == 0
        case .reference:
            return argon2id_verify(phc, password, password.count) == ARGON2_OK.rawValue
        }
    }

    /// The raw output for a given salt (16 bytes for libsodium), for proving that the
    /// implementations agree byte for byte (tests, `gatehouse-bench hash`). `kernel` chooses
    /// Gatehouse's kernel (the fastest this CPU runs unless a test names one).
    public func raw(
        _ password: [UInt8], salt: [UInt8], parameters: Argon2Parameters, length: Int = 32, kernel: Argon2Kernel = .best
    ) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: length)
        switch self {
        case .gatehouse:
            let (memory, iterations, lanes) = (parameters.memoryKiB, parameters.iterations, parameters.parallelism)
            let bytes = gatehouse_argon2id_memory_bytes(memory, lanes)
            guard bytes > 0, kernel.supported else {
                throw PasswordHasherError(message: "Argon2id refused m=\(memory), p=\(lanes) on \(kernel)")
            }
            let status = try Argon2Regions.shared.withRegion(bytes: bytes, wipe: iterations == 1) { region in
                gatehouse_argon2id(
                    &output, length, password, password.count, salt, salt.count, iterations, memory, lanes, region, bytes, kernel.rawValue)
            }
            guard status == 0 else { throw PasswordHasherError(message: "Argon2id refused the parameters") }
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

    /// Base64 without its `=` padding, as PHC strings write salts and outputs.
    static func unpaddedBase64(_ bytes: [UInt8]) -> String {
        String(Data(bytes).base64EncodedString().prefix(while: { $0 != "=" }))
    }

    static func bytes(unpaddedBase64 text: Substring) -> [UInt8]? {
        let padding = String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
        return Data(base64Encoded: String(text) + padding).map(Array.init)
    }

    private static func string(_ encoded: [CChar]) -> String {
        String(decoding: encoded.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The instruction sets Gatehouse's Argon2id compression is compiled for (the C enum in
/// `gatehouse_argon2.h`); `best` is the fastest one this CPU runs, the one the server uses.
public enum Argon2Kernel: Int32, CaseIterable, Sendable {
    case portable = 0
    case avx2 = 1
    case avx512 = 2

    public static let best = Argon2Kernel(rawValue: gatehouse_argon2_best_kernel()) ?? .portable

    /// Whether this CPU (and this build: the vector kernels are x86-64's) runs it.
    public var supported: Bool { gatehouse_argon2_kernel_supported(rawValue) != 0 }
}

/// libsodium's one-time set-up: `sodium_init` chooses the kernels for this CPU (until it runs,
/// libsodium computes Argon2 with its portable code, as slow as the reference build); later
/// calls do nothing. Every libsodium call above reads `ready` first. Should it fail, every hash
/// and check takes the reference build.
enum Sodium {
    static let ready: Bool = sodium_init() >= 0
}
