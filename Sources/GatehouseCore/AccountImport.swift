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

// MARK: Supabase

/// One row of Supabase's `auth.users`, the columns the import reads.
public struct SupabaseUserRow: Sendable, Equatable, Codable {
    public var id: String
    public var email: String?
    public var encryptedPassword: String?
    public var emailConfirmedAt: Date?
    public var createdAt: Date?
    public var lastSignInAt: Date?
    public var bannedUntil: Date?
    public var deletedAt: Date?
    public var isAnonymous: Bool?
    public var isSSOUser: Bool?
    public var phone: String?
    public var rawUserMetaData: [String: JSONValue]?

    enum CodingKeys: String, CodingKey {
        case id, email, phone
        case encryptedPassword = "encrypted_password", emailConfirmedAt = "email_confirmed_at", createdAt = "created_at"
        case lastSignInAt = "last_sign_in_at", bannedUntil = "banned_until", deletedAt = "deleted_at", isAnonymous = "is_anonymous"
        case isSSOUser = "is_sso_user", rawUserMetaData = "raw_user_meta_data"
    }

    public init(
        id: String, email: String? = nil, encryptedPassword: String? = nil, emailConfirmedAt: Date? = nil, createdAt: Date? = nil,
        lastSignInAt: Date? = nil, bannedUntil: Date? = nil, deletedAt: Date? = nil, isAnonymous: Bool? = nil, isSSOUser: Bool? = nil,
        phone: String? = nil, rawUserMetaData: [String: JSONValue]? = nil
    ) {
        self.id = id
        self.email = email
        self.encryptedPassword = encryptedPassword
        self.emailConfirmedAt = emailConfirmedAt
        self.createdAt = createdAt
        self.lastSignInAt = lastSignInAt
        self.bannedUntil = bannedUntil
        self.deletedAt = deletedAt
        self.isAnonymous = isAnonymous
        self.isSSOUser = isSSOUser
        self.phone = phone
        self.rawUserMetaData = rawUserMetaData
    }
}

/// One row of Supabase's `auth.identities`.
public struct SupabaseIdentityRow: Sendable, Equatable, Codable {
    public var userID: String
    public var provider: String
    /// The provider's id for the person (`sub`); older GoTrue schemas keep it in `id`.
    public var providerID: String
    public var email: String?

    enum CodingKeys: String, CodingKey {
        case userID = "user_id", provider, providerID = "provider_id", email
    }

    public init(userID: String, provider: String, providerID: String, email: String? = nil) {
        self.userID = userID
        self.provider = provider
        self.providerID = providerID
        self.email = email
    }
}

public enum SupabaseExport {
    /// A row as PostgreSQL writes it in JSON (`json_agg`, `row_to_json`); nil when it is not one.
    public static func userRow(_ value: JSONValue) -> SupabaseUserRow? {
        decode(value)
    }

    public static func identityRow(_ value: JSONValue) -> SupabaseIdentityRow? {
        guard var members = value.objectValue else { return nil }
        // GoTrue before late 2023 kept the provider's id in `id` (text) and had no `provider_id`.
        if members["provider_id"] == nil || members["provider_id"] == .null { members["provider_id"] = members["id"] }
        return decode(.object(members))
    }

    private static func decode<T: Decodable>(_ value: JSONValue) -> T? {
        guard let data = try? JSONEncoder().encode(value) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = timestamp(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a timestamp"))
            }
            return date
        }
        return try? decoder.decode(T.self, from: data)
    }

    /// PostgreSQL's `timestamptz` in JSON or text: `2024-05-01T10:00:00.123456+00:00`,
    /// `2024-05-01 10:00:00+00`, `…Z`; fractions of a second are dropped.
    public static func timestamp(_ text: String) -> Date? {
        let characters = Array(text)
        guard characters.count >= 19 else { return nil }
        func number(_ range: Range<Int>) -> Int? { Int(String(characters[range])) }
        guard let year = number(0..<4), characters[4] == "-", let month = number(5..<7), characters[7] == "-", let day = number(8..<10),
            characters[10] == "T" || characters[10] == " ", let hour = number(11..<13), characters[13] == ":", let minute = number(14..<16),
            characters[16] == ":", let second = number(17..<19)
        else { return nil }
        var index = 19
        if index < characters.count, characters[index] == "." {
            index += 1
            while index < characters.count, characters[index].isNumber { index += 1 }
        }
        var offset = 0
        if index < characters.count {
            let zone = String(characters[index...])
            if zone == "Z" {
                offset = 0
            } else if let sign = zone.first, sign == "+" || sign == "-" {
                let digits = zone.dropFirst().filter { $0 != ":" }
                guard digits.count == 2 || digits.count == 4, let value = Int(digits) else { return nil }
                let minutes = digits.count == 2 ? value * 60 : (value / 100) * 60 + value % 100
                offset = (sign == "+" ? 1 : -1) * minutes * 60
            } else {
                return nil
            }
        }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (hour, minute, second)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: components) else { return nil }
        return date.addingTimeInterval(TimeInterval(-offset))
    }

    /// The metadata keys a display name may come from, in order (GoTrue's own and Google's, Apple's).
    public static let displayNameKeys = ["display_name", "full_name", "name"]
    static let providers: [String: Provider] = ["apple": .apple, "google": .google]

    /// Every `auth.users` row, numbered from `firstRow`, with its identities.
    public static func rows(_ users: [SupabaseUserRow], identities: [SupabaseIdentityRow], firstRow: Int = 1, now: Date) -> [ImportRow] {
        let byUser = Dictionary(grouping: identities, by: { $0.userID.lowercased() })
        return users.enumerated().map { index, user in
            let number = firstRow + index
            switch account(user, identities: byUser[user.id.lowercased()] ?? [], now: now) {
            case .success(let account): return .account(row: number, account)
            case .failure(let error): return .refused(ImportRefusal(row: number, sourceID: user.id, reason: error.description))
            }
        }
    }

    static func account(_ user: SupabaseUserRow, identities: [SupabaseIdentityRow], now: Date) -> Result<ImportedAccount, ImportFormatError> {
        guard let id = UserID(user.id) else { return .failure(ImportFormatError("the id is not a UUID")) }
        guard user.deletedAt == nil else { return .failure(ImportFormatError("soft-deleted in Supabase (deleted_at is set)")) }
        guard user.isSSOUser != true else { return .failure(ImportFormatError("an SSO user (SAML sign-in is not supported)")) }
        let anonymous = user.isAnonymous == true
        let email: String?
        switch ImportChecks.email(user.email) {
        case .success(let value): email = value
        case .failure(let error): return .failure(error)
        }
        var password: ImportedPassword?
        if let hash = user.encryptedPassword, !hash.isEmpty {
            guard hash.hasPrefix("$2") else { return .failure(ImportFormatError("encrypted_password is not a bcrypt hash")) }
            if let problem = PasswordHashBounds.problem(hash) { return .failure(ImportFormatError("encrypted_password: \(problem)")) }
            guard email != nil else { return .failure(ImportFormatError("a password without an email address")) }
            password = .encoded(hash)
        }
        var imported: [ImportedIdentity] = []
        for identity in identities {
            guard let provider = providers[identity.provider] else { continue }
            guard !identity.providerID.isEmpty else { return .failure(ImportFormatError("a \(identity.provider) identity without its provider_id")) }
            imported.append(ImportedIdentity(provider: provider, subject: identity.providerID, email: identity.email))
        }
        let metadata = user.rawUserMetaData ?? [:]
        let name = displayNameKeys.lazy.compactMap { key -> String? in
            if case .string(let text)? = metadata[key] { ImportChecks.displayName(text) } else { nil }
        }.first
        var avatar: String?
        if case .string(let url)? = metadata["avatar_url"] ?? metadata["picture"] { avatar = ImportChecks.avatarURL(url) }
        let account = ImportedAccount(
            id: id, sourceID: user.id.lowercased(), email: anonymous ? nil : email,
            emailVerifiedAt: anonymous || email == nil ? nil : user.emailConfirmedAt, isAnonymous: anonymous && email == nil,
            displayName: name, avatarURL: avatar, password: anonymous ? nil : password,
            disabled: user.bannedUntil.map { $0 > now } ?? false, createdAt: user.createdAt ?? now, lastSignInAt: user.lastSignInAt,
            identities: anonymous ? [] : imported)
        guard ImportChecks.reachable(account) else {
            return .failure(ImportFormatError(user.phone?.isEmpty == false ? "phone sign-in is not supported" : "no email address, identity or anonymous flag"))
        }
        return .success(account)
    }
}
