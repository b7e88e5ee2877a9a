/// Firebase's "Password hash parameters" (Authentication → Users → ⋮ in the Firebase console),
/// under the names the console and `firebase auth:import` use.
public struct FirebaseHashConfig: Codable, Sendable, Hashable {
    /// Base64.
    public var signerKey: String
    /// Base64.
    public var saltSeparator: String
    public var rounds: Int
    public var memCost: Int

    public init(signerKey: String, saltSeparator: String, rounds: Int, memCost: Int) {
        self.signerKey = signerKey
        self.saltSeparator = saltSeparator
        self.rounds = rounds
        self.memCost = memCost
    }

    enum CodingKeys: String, CodingKey {
        case signerKey = "base64_signer_key", saltSeparator = "base64_salt_separator", rounds, memCost = "mem_cost"
    }
}

/// `POST /admin/v1/imports/firebase`: a batch of the `users` array `firebase auth:export FILE
/// --format=json` writes, and the project's hash parameters (needed when any user has a password).
/// An entry that is not an object makes the request malformed (400); an object that is not a
/// Firebase user record is a refused row.
public struct FirebaseImportRequest: Codable, Sendable, Hashable {
    public var hashConfig: FirebaseHashConfig?
    public var users: [[String: JSONValue]]
    /// The number of the batch's first user in the whole export (default 1), so that refusals
    /// name rows of the file.
    public var firstRow: Int?

    public init(hashConfig: FirebaseHashConfig?, users: [[String: JSONValue]], firstRow: Int? = nil) {
        self.hashConfig = hashConfig
        self.users = users
        self.firstRow = firstRow
    }

    enum CodingKeys: String, CodingKey {
        case hashConfig = "hash_config", users, firstRow = "first_row"
    }
}

/// `POST /admin/v1/imports/supabase`: a batch of `auth.users` rows and their `auth.identities`
/// rows as PostgreSQL writes them in JSON (`SELECT json_agg(u) FROM auth.users u`).
public struct SupabaseImportRequest: Codable, Sendable, Hashable {
    public var users: [[String: JSONValue]]
    public var identities: [[String: JSONValue]]?
    public var firstRow: Int?

    public init(users: [[String: JSONValue]], identities: [[String: JSONValue]]?, firstRow: Int? = nil) {
        self.users = users
        self.identities = identities
        self.firstRow = firstRow
    }

    enum CodingKeys: String, CodingKey {
        case users, identities, firstRow = "first_row"
    }
}

/// What an import did: accounts written, accounts already here from an earlier run (left as they
/// are), and rows refused with their number and why (nothing of a refused row is written).
public struct ImportReport: Codable, Sendable, Hashable {
    public var imported: Int
    public var unchanged: Int
    public var refused: [ImportRefusal]

    public init(imported: Int = 0, unchanged: Int = 0, refused: [ImportRefusal] = []) {
        self.imported = imported
        self.unchanged = unchanged
        self.refused = refused
    }

    enum CodingKeys: String, CodingKey {
        case imported, unchanged, refused
    }
}

public struct ImportRefusal: Codable, Sendable, Hashable {
    public var row: Int
    public var sourceID: String?
    public var reason: String

    public init(row: Int, sourceID: String?, reason: String) {
        self.row = row
        self.sourceID = sourceID
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case row, sourceID = "source_id", reason
    }
}
