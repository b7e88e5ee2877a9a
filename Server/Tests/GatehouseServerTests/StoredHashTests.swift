import Foundation
import GatehouseArgon2
import GatehouseCore
@testable import GatehouseServer
import Testing

/// Issue 61: Argon2id moved from the reference build (libargon2) to libsodium's SIMD kernels.
/// Every hash stored before the move still verifies: the fixtures below were made by libargon2
/// exactly as the server called it until then (`argon2id_hash_encoded`, random salts), at the
/// parameters hashes are stored with (the default, Keycloak's cost, the tests' cheap one, the
/// largest the import bounds allow) and at the shapes an import brings (2 and 4 lanes, 8- and
/// 32-byte salts, 12-, 16- and 64-byte outputs); the bcrypt ones by PyPI's `bcrypt`.
@Suite struct StoredHashTests {
    static let argon2Fixtures: [(password: String, hash: String)] = [
        ("correct horse battery staple", "$argon2id$v=19$m=19456,t=2,p=1$Xaxc6cDvs7D7TLliSnzPoA$TsIdtcxlNcLIkYjqMUcu9yi5l7zaILbp9Stamf6GbqU"),
        ("Ünïcødé pässwörd ✓", "$argon2id$v=19$m=19456,t=2,p=1$fpoU4BueezyKNwVp6fRhmQ$AHI0vwrHBQPJvqrLR+zGdy1+9+WPNuJ54SHKYxGG4AI"),
        ("p", "$argon2id$v=19$m=7168,t=5,p=1$McJireT5BFOs30uB0zOnzw$RCXFhGTU/tzu6TcShBz4eCh7OBT0tjz30lW3t5363ak"),
        (
            "a much longer password that goes on and on, well past the usual length of a password",
            "$argon2id$v=19$m=64,t=1,p=1$C2yDV8i3N0bla+ovjlneLQ$UQg7WMbadbXY0wgBXABjaFtcUEHPY9TSx3I1f+ELiU0"
        ),
        ("correct horse battery staple", "$argon2id$v=19$m=65536,t=3,p=1$sk+rDI6TjKg41tHgXZVoPw$4fXr5cDaeGEzBPsr1lFVBxVLBjx1XRKuyP6Hin28NbY"),
        ("Ünïcødé pässwörd ✓", "$argon2id$v=19$m=4096,t=2,p=2$5KDvdRMl5j0n8mGKQwzJwA$lcOUZhwdJlbYvJuONbLm0VLraEMxIRAdgPK42+OOa5U"),
        ("p", "$argon2id$v=19$m=4096,t=2,p=4$jSKv158ae5eGMwvcAb1ROw$yxHJNH5018rbURuYE8eTqthO2ryTjeziU6CwSVEuCsk"),
        (
            "a much longer password that goes on and on, well past the usual length of a password",
            "$argon2id$v=19$m=1024,t=2,p=1$M8DNiDqnk60$pymyeLVym3T1f8IjClINnm1ynHnuA84Yo2NHa+qFqL0"
        ),
        (
            "correct horse battery staple",
            "$argon2id$v=19$m=1024,t=2,p=1$yH1dIa1wBLAYGPCSZ2bUrgQkX+zesYf1A7A254mYUvY$UeUb5LBiwQ6UDf5CTPbs74uiKwJT+O1Vxb+wwOSciDQ"
        ),
        ("Ünïcødé pässwörd ✓", "$argon2id$v=19$m=1024,t=2,p=1$eoFbTcnjWSoZkrS7BHGMrA$NIyXZbtkOebflQxMqAiQUQ"),
        (
            "p",
            "$argon2id$v=19$m=1024,t=2,p=1$9auqMuQ7VEkOuvzW8HtqjA$rhti8op4Ruk2wFM9MjQi9hQGf7Zq6/n/S4ILTqkftaByogLzEMvy6OrSAWqBlpTc31qoQE2Z5Gzv+iC01pzdZQ"
        ),
        (
            "a much longer password that goes on and on, well past the usual length of a password",
            "$argon2id$v=19$m=1024,t=2,p=1$VPs4xCYqGsjFi+iOUc0/Jg$0ZvSsPVkkCEF1FZV"
        ),
    ]

    static let bcryptFixtures: [(password: String, hash: String)] = [
        ("bcrypt password a", "$2a$05$cKX6xCQTM4Nl28aBssi8GOAYpxl//eLMolk.Gu4wTc8emz4p.YNgK"),
        ("bcrypt password b", "$2b$05$6fTsTkd2hwKUoQpaGt9VX.5E5QuvbZGNS808gc4n2bJmAJ4tczJ0i"),
        ("bcrypt password y", "$2y$05$6PJ3Brmzucgm.6X2YGjLIOSh3Pb/DmkOeI6fNOHgQGLoNC/Rowcle"),
    ]

    /// Every fixture of every scheme verifies through the server's hasher with its password and
    /// not with another; Firebase's scrypt still gives its published vector.
    @Test func everyStoredHashOfEverySchemeStillVerifies() async throws {
        let hasher = try PasswordHasher(parameters: Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1), threads: 2)
        for fixture in Self.argon2Fixtures + Self.bcryptFixtures {
            #expect(try await hasher.verify(fixture.password, against: fixture.hash).matches, "\(fixture.hash)")
            #expect(try await !hasher.verify(fixture.password + "!", against: fixture.hash).matches, "\(fixture.hash)")
        }
        await hasher.shutdown()

        let firebase = FirebaseHashParameters(
            signerKey: Array(Data(base64Encoded: ImportTests.signerKey)!), saltSeparator: Array(Data(base64Encoded: ImportTests.saltSeparator)!),
            rounds: 8, memoryCost: 14)
        let computed = try FirebaseScrypt.hash(Array("user1password".utf8), salt: Array(Data(base64Encoded: ImportTests.vectorSalt)!), parameters: firebase)
        #expect(Data(computed).base64EncodedString() == ImportTests.vectorHash)
    }

    /// Every stored Argon2id fixture (made by libargon2 and by libsodium: one lane and four,
    /// outputs of 12 to 64 bytes) verifies with Gatehouse's implementation, the one the server
    /// uses, and with the reference build; a changed password fails.
    @Test func everyStoredArgon2HashVerifiesWithGatehousesImplementation() throws {
        #expect(Argon2Implementation.serving == .gatehouse)
        for fixture in Self.argon2Fixtures {
            let password = Array(fixture.password.utf8)
            #expect(Argon2Implementation.gatehouse.verify(password, against: fixture.hash), "\(fixture.hash)")
            #expect(Argon2Implementation.reference.verify(password, against: fixture.hash))
            #expect(!Argon2Implementation.gatehouse.verify(password + [0x21], against: fixture.hash))
            #expect(!Argon2Implementation.gatehouse.verify(password, against: fixture.hash.replacingOccurrences(of: "v=19", with: "v=16")))
        }
    }

    /// Each kernel this CPU runs computes the reference build's bytes, across lanes, passes,
    /// memory sizes and output lengths; every implementation verifies what another made.
    @Test func everyKernelAgreesWithTheReferenceByteForByte() throws {
        // Every kernel the C side compiles has its Swift case, in its order.
        #expect(Argon2Kernel.allCases.map { Int($0.rawValue) } == Array(0..<Int(GATEHOUSE_ARGON2_KERNEL_COUNT)))
        let kernels = Argon2Kernel.allCases.filter(\.supported)
        #expect(kernels.contains(.portable) && kernels.contains(Argon2Kernel.best))
        #if arch(x86_64)
        // The CI machine's CPU runs AVX2: a build that lost its dispatch would show here.
        #expect(Argon2Kernel.best != .portable)
        #endif
        for parameters in [
            Argon2Parameters(memoryKiB: 8, iterations: 1, parallelism: 1), Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 1),
            Argon2Parameters(memoryKiB: 1024, iterations: 3, parallelism: 1), Argon2Parameters(memoryKiB: 7168, iterations: 5, parallelism: 1),
            Argon2Parameters(memoryKiB: 100, iterations: 2, parallelism: 3), Argon2Parameters(memoryKiB: 64, iterations: 2, parallelism: 4),
            Argon2Parameters(),
        ] {
            let password = randomBytes(Int.random(in: 0...80))
            let salt = randomBytes(parameters.parallelism == 1 ? 16 : 8)
            for length in [4, 12, 16, 32, 64, 65, 100] {
                let reference = try Argon2Implementation.reference.raw(password, salt: salt, parameters: parameters, length: length)
                for kernel in kernels {
                    let gatehouse = try Argon2Implementation.gatehouse.raw(password, salt: salt, parameters: parameters, length: length, kernel: kernel)
                    #expect(gatehouse == reference, "\(kernel) m=\(parameters.memoryKiB) t=\(parameters.iterations) p=\(parameters.parallelism) length \(length)")
                }
                if parameters.parallelism == 1, length >= 16 {
                    #expect(try Argon2Implementation.libsodium.raw(password, salt: salt, parameters: parameters, length: length) == reference)
                }
            }
            for made in Argon2Implementation.allCases where made != .libsodium || parameters.parallelism == 1 {
                let phc = try made.hash(password, parameters: parameters)
                let fields = "m=\(parameters.memoryKiB),t=\(parameters.iterations),p=\(parameters.parallelism)"
                #expect(phc.hasPrefix("$argon2id$v=19$\(fields)$"), "\(phc)")
                for checker in Argon2Implementation.allCases where checker != .libsodium || parameters.parallelism == 1 {
                    #expect(checker.verify(password, against: phc), "\(made) made, \(checker) checked: \(phc)")
                }
            }
        }
    }

    /// A region is kept for the next hash that fits in it, survives a sweep while in use
    /// between sweeps, and goes back at the second sweep with no hash between them.
    @Test func argon2RegionsAreKeptUntilASweepFindsThemIdle() throws {
        let regions = Argon2Regions()
        let first = try regions.withRegion(bytes: 1 << 20, wipe: false) { region in
            region.storeBytes(of: 0xAB, as: UInt8.self)
            return UInt(bitPattern: region)
        }
        #expect(regions.keptBytes == 1 << 20)
        let (again, byte) = try regions.withRegion(bytes: 512 << 10, wipe: true) { region in
            (UInt(bitPattern: region), region.load(as: UInt8.self))
        }
        #expect(again == first && byte == 0xAB)
        let wiped = try regions.withRegion(bytes: 1 << 20, wipe: false) { $0.load(as: UInt8.self) }
        #expect(wiped == 0)
        #expect(regions.sweep() == 0 && regions.keptBytes == 1 << 20)
        #expect(regions.sweep() == 1 << 20 && regions.keptBytes == 0)
    }

    @Test func libsodiumRefusesLanes() throws {
        let lanes = Argon2Parameters(memoryKiB: 64, iterations: 1, parallelism: 2)
        #expect(throws: PasswordHasherError.self) { try Argon2Implementation.libsodium.hash([1], parameters: lanes) }
        let phc = try PasswordHasher.argon2id([1, 2, 3], parameters: lanes)
        #expect(phc.contains(",p=2$") && Argon2Implementation.libsodium.verify([1, 2, 3], against: phc))
    }
}
