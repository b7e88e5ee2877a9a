import Foundation
import GatehouseWire

// Accounts read from a Supabase project (its auth.users and auth.identities rows), for
// `gatehouse import supabase` (split from AccountImport.swift).

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
    /// What GoTrue's service role set (roles and the like); its `provider` and `providers` are
    /// derived here again from the identities.
    public var rawAppMetaData: [String: JSONValue]?

    enum CodingKeys: String, CodingKey {
        case id, email, phone
        case encryptedPassword = "encrypted_password", emailConfirmedAt = "email_confirmed_at", createdAt = "created_at"
        case lastSignInAt = "last_sign_in_at", bannedUntil = "banned_until", deletedAt = "deleted_at", isAnonymous = "is_anonymous"
        case isSSOUser = "is_sso_user", rawUserMetaData = "raw_user_meta_data", rawAppMetaData = "raw_app_meta_data"
    }

    public init(
        id: String, email: String? = nil, encryptedPassword: String? = nil, emailConfirmedAt: Date? = nil, createdAt: Date? = nil,
        lastSignInAt: Date? = nil, bannedUntil: Date? = nil, deletedAt: Date? = nil, isAnonymous: Bool? = nil, isSSOUser: Bool? = nil,
        phone: String? = nil, rawUserMetaData: [String: JSONValue]? = nil, rawAppMetaData: [String: JSONValue]? = nil
    ) {
        self.rawAppMetaData = rawAppMetaData
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
    /// `2024-05-01 10:00:00+00`, `…Z`; fractions of a second are dropped, and a day or time the
    /// calendar does not have (`2023-02-29`, `24:00:00`) is not a timestamp.
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
        guard let days = UTCCivil.validDays(year: Int64(year), month: Int64(month), day: Int64(day)),
            (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(second)
        else { return nil }
        return UTCCivil.midnight(days: days).addingTimeInterval(TimeInterval(hour * 3_600 + minute * 60 + second - offset))
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
        // Both objects are kept as GoTrue kept them, under `AccountMetadata`'s rules.
        let kept: (user: [String: JSONValue], app: [String: JSONValue])
        do {
            kept = (try AccountMetadata.fresh(metadata, kind: .user), try AccountMetadata.fresh(user.rawAppMetaData, kind: .app))
        } catch {
            return .failure(ImportFormatError(error.message))
        }
        var account = ImportedAccount(
            id: id, sourceID: user.id.lowercased(), email: anonymous ? nil : email,
            emailVerifiedAt: anonymous || email == nil ? nil : user.emailConfirmedAt, isAnonymous: anonymous && email == nil,
            displayName: name, avatarURL: avatar, password: anonymous ? nil : password,
            disabled: user.bannedUntil.map { $0 > now } ?? false, createdAt: user.createdAt ?? now, lastSignInAt: user.lastSignInAt,
            identities: anonymous ? [] : imported)
        (account.userMetadata, account.appMetadata) = kept
        guard ImportChecks.reachable(account) else {
            return .failure(ImportFormatError(user.phone?.isEmpty == false ? "phone sign-in is not supported" : "no email address, identity or anonymous flag"))
        }
        return .success(account)
    }
}
