import Foundation
import GatehouseWire

/// An account read from another auth system's export, checked and ready to insert: nothing
/// here touches a database. `ImportService` writes each one in a transaction of its own.
public struct ImportedAccount: Sendable, Equatable {
    /// The id the account gets here: the source's own where it is a UUID (Supabase), else one
    /// derived from the source's id (Firebase), so that a second run finds the same account.
    public var id: UserID
    /// The source's id for the account (Firebase `localId`, Supabase `id`).
    public var sourceID: String
    public var email: String?
    public var emailVerifiedAt: Date?
    public var isAnonymous: Bool
    public var displayName: String?
    public var avatarURL: String?
    public var password: ImportedPassword?
    public var disabled: Bool
    public var createdAt: Date
    public var lastSignInAt: Date?
    /// Provider identities other than email (which follows from `email`) and anonymous.
    public var identities: [ImportedIdentity]
    /// The account's metadata objects (`AccountMetadata`), where the source has them (Supabase).
    public var userMetadata: [String: JSONValue] = [:]
    public var appMetadata: [String: JSONValue] = [:]

    public init(
        id: UserID, sourceID: String, email: String? = nil, emailVerifiedAt: Date? = nil, isAnonymous: Bool = false,
        displayName: String? = nil, avatarURL: String? = nil, password: ImportedPassword? = nil, disabled: Bool = false,
        createdAt: Date, lastSignInAt: Date? = nil, identities: [ImportedIdentity] = []
    ) {
        self.id = id
        self.sourceID = sourceID
        self.email = email
        self.emailVerifiedAt = emailVerifiedAt
        self.isAnonymous = isAnonymous
        self.displayName = displayName
        self.avatarURL = avatarURL
        self.password = password
        self.disabled = disabled
        self.createdAt = createdAt
        self.lastSignInAt = lastSignInAt
        self.identities = identities
    }
}

public struct ImportedIdentity: Sendable, Equatable {
    public var provider: Provider
    /// The provider's `sub`: what Sign in with Apple or Google presents again here.
    public var subject: String
    public var email: String?

    public init(provider: Provider, subject: String, email: String? = nil) {
        self.provider = provider
        self.subject = subject
        self.email = email
    }
}

/// A password hash made elsewhere, kept until the owner's next sign-in replaces it with Argon2id.
public enum ImportedPassword: Sendable, Equatable {
    /// Firebase's modified scrypt: the user's salt and hash (the project's key and parameters
    /// are the import's `FirebaseHashParameters`).
    case firebaseScrypt(salt: [UInt8], hash: [UInt8])
    /// A PHC or modular-crypt string Gatehouse verifies as it is (bcrypt `$2a$`/`$2b$`/`$2y$`).
    case encoded(String)
}

/// One source row: an account to write, or why it cannot be. Rows are numbered from 1: the
/// position in a Firebase file's `users` array, the order `created_at, id` of Supabase's
/// `auth.users`.
public enum ImportRow: Sendable, Equatable {
    case account(row: Int, ImportedAccount)
    case refused(ImportRefusal)
}

/// The project-wide parameters of Firebase's modified scrypt, as the Firebase console shows
/// them under "Password hash parameters" (base64 signer key and salt separator, rounds, memory cost).
public struct FirebaseHashParameters: Sendable, Equatable {
    public var signerKey: [UInt8]
    public var saltSeparator: [UInt8]
    public var rounds: Int
    public var memoryCost: Int

    /// Firebase's own ranges: rounds 1–8, memory cost 1–14 (at most 16 MiB a verification).
    public static let roundsRange = 1...8
    public static let memoryCostRange = 1...14

    public init(signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memoryCost: Int) {
        self.signerKey = signerKey
        self.saltSeparator = saltSeparator
        self.rounds = rounds
        self.memoryCost = memoryCost
    }

    /// Reads the console's values; the message names what is wrong.
    public static func parse(signerKey: String, saltSeparator: String, rounds: Int, memoryCost: Int) -> Result<Self, ImportFormatError> {
        guard let key = Data(base64Encoded: signerKey), !key.isEmpty else {
            return .failure(ImportFormatError("the signer key is not base64"))
        }
        guard let separator = Data(base64Encoded: saltSeparator) else {
            return .failure(ImportFormatError("the salt separator is not base64"))
        }
        guard roundsRange.contains(rounds) else { return .failure(ImportFormatError("rounds must be 1–8")) }
        guard memoryCostRange.contains(memoryCost) else { return .failure(ImportFormatError("the memory cost must be 1–14")) }
        return .success(Self(signerKey: Array(key), saltSeparator: Array(separator), rounds: rounds, memoryCost: memoryCost))
    }
}

public struct ImportFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Checks shared by every source: the address, the profile fields, the identities.
enum ImportChecks {
    static func email(_ text: String?) -> Result<String?, ImportFormatError> {
        guard let text, !text.isEmpty else { return .success(nil) }
        guard EmailAddress.isValid(text) else { return .failure(ImportFormatError("the email address is not valid")) }
        // The one canonicalisation every stored address goes through: a look-alike (a fullwidth
        // `ｆｗ@example.com`) would otherwise take the real address's owner's place.
        guard let canonical = EmailAddress.canonical(text) else {
            return .failure(ImportFormatError("the email address is not in its canonical form (a look-alike of another address)"))
        }
        return .success(canonical)
    }

    /// A display name Gatehouse would accept, or none (a name it would refuse is dropped, not fatal).
    static func displayName(_ text: String?) -> String? {
        text.flatMap(ProfilePolicy.displayName)
    }

    static func avatarURL(_ text: String?) -> String? {
        text.flatMap { ProfilePolicy.isValidAvatarURL($0) ? $0 : nil }
    }

    /// An account needs a way in: an address, a provider identity, or being anonymous.
    static func reachable(_ account: ImportedAccount) -> Bool {
        account.isAnonymous || account.email != nil || !account.identities.isEmpty
    }
}

// MARK: Firebase

/// The JSON `firebase auth:export FILE --format=json` writes: `{"users": [...]}`.
public enum FirebaseExport {
    struct File: Decodable {
        var users: [JSONValue]
    }

    struct Row: Decodable {
        var localId: String
        var email: String?
        var emailVerified: Bool?
        var passwordHash: String?
        var salt: String?
        var displayName: String?
        var photoUrl: String?
        var disabled: Bool?
        var createdAt: String?
        var lastSignedInAt: String?
        var phoneNumber: String?
        var providerUserInfo: [ProviderInfo]?
    }

    struct ProviderInfo: Decodable {
        var providerId: String
        var rawId: String?
        var email: String?
    }

    /// Firebase's provider ids Gatehouse has an identity for.
    static let providers: [String: Provider] = ["apple.com": .apple, "google.com": .google]

    /// Every row of the file, in order; throws only when the file itself is not an export.
    /// `id` gives the account id for a `localId` (`derivedID(digest:)` of its SHA-256).
    public static func rows(_ data: Data, now: Date, id: (String) -> UserID) throws(ImportFormatError) -> [ImportRow] {
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            throw ImportFormatError("the file is not a Firebase export (a JSON object with a \"users\" array)")
        }
        return rows(users: file.users, firstRow: 1, now: now, id: id)
    }

    /// The export's `users` entries, numbered from `firstRow`.
    public static func rows(users: [JSONValue], firstRow: Int, now: Date, id: (String) -> UserID) -> [ImportRow] {
        users.enumerated().map { index, value in
            let number = firstRow + index
            guard let row = value.decoded(as: Row.self) else {
                let id = value.objectValue?["localId"].flatMap { if case .string(let id) = $0 { id } else { nil } }
                return .refused(ImportRefusal(row: number, sourceID: id, reason: "not a Firebase user record (localId missing or a field of the wrong type)"))
            }
            switch account(row, id: id(row.localId), now: now) {
            case .success(let account): return .account(row: number, account)
            case .failure(let error): return .refused(ImportRefusal(row: number, sourceID: row.localId, reason: error.description))
            }
        }
    }

    static func account(_ row: Row, id: UserID, now: Date) -> Result<ImportedAccount, ImportFormatError> {
        guard !row.localId.isEmpty, row.localId.utf8.count <= 128 else { return .failure(ImportFormatError("the localId is empty or too long")) }
        let email: String?
        switch ImportChecks.email(row.email) {
        case .success(let value): email = value
        case .failure(let error): return .failure(error)
        }
        var password: ImportedPassword?
        if let hash = row.passwordHash, !hash.isEmpty {
            guard let hashBytes = Data(base64Encoded: hash), !hashBytes.isEmpty else {
                return .failure(ImportFormatError("the passwordHash is not base64"))
            }
            guard let salt = row.salt.flatMap({ Data(base64Encoded: $0) }) else {
                return .failure(ImportFormatError("a passwordHash without a base64 salt"))
            }
            guard email != nil else { return .failure(ImportFormatError("a password without an email address")) }
            password = .firebaseScrypt(salt: Array(salt), hash: Array(hashBytes))
        }
        guard let created = milliseconds(row.createdAt) ?? (row.createdAt == nil ? now : nil) else {
            return .failure(ImportFormatError("createdAt is not milliseconds since 1970"))
        }
        let lastSignIn = milliseconds(row.lastSignedInAt)
        if row.lastSignedInAt != nil, lastSignIn == nil {
            return .failure(ImportFormatError("lastSignedInAt is not milliseconds since 1970"))
        }
        var identities: [ImportedIdentity] = []
        for info in row.providerUserInfo ?? [] {
            guard let provider = providers[info.providerId] else { continue }
            guard let subject = info.rawId, !subject.isEmpty else {
                return .failure(ImportFormatError("a \(info.providerId) identity without its rawId"))
            }
            identities.append(ImportedIdentity(provider: provider, subject: subject, email: info.email))
        }
        let account = ImportedAccount(
            id: id, sourceID: row.localId, email: email,
            emailVerifiedAt: row.emailVerified == true && email != nil ? created : nil,
            displayName: ImportChecks.displayName(row.displayName), avatarURL: ImportChecks.avatarURL(row.photoUrl), password: password,
            disabled: row.disabled ?? false, createdAt: created, lastSignInAt: lastSignIn, identities: identities)
        guard ImportChecks.reachable(account) else {
            return .failure(
                ImportFormatError(row.phoneNumber != nil ? "phone sign-in is not supported" : "no email address and no Apple or Google identity"))
        }
        return .success(account)
    }

    static func milliseconds(_ text: String?) -> Date? {
        guard let text, let value = Int64(text), value >= 0 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(value / 1000))
    }

    /// The id a Firebase account gets here: a UUID (version 8) of the first 16 bytes of
    /// `digest`, SHA-256 over `firebase:<localId>`, so the same on every run and every node.
    public static func derivedID(digest: [UInt8]) -> UserID {
        precondition(digest.count >= 16)
        var bytes = Array(digest.prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return UserID(uuid)
    }
}
