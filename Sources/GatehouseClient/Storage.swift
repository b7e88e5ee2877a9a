import Foundation
import GatehouseWire

/// What the SDK keeps of a session between launches. Secret: kept in a `TokenStore`.
public struct StoredSession: Codable, Sendable, Equatable {
    public var refreshToken: String
    public var sessionID: String
    /// The install that saved it (see `ClientStorage`): a session from an earlier install of
    /// the app is discarded.
    public var installID: String
    /// How the person signed in last (`email`, `apple`, `google`, `magic_link`, `anonymous`):
    /// the re-auth screen highlights it.
    public var provider: String
    /// The last user the server returned, to show while offline.
    public var user: UserPayload?

    public init(refreshToken: String, sessionID: String, installID: String, provider: String, user: UserPayload?) {
        self.refreshToken = refreshToken
        self.sessionID = sessionID
        self.installID = installID
        self.provider = provider
        self.user = user
    }
}

/// Where the refresh token lives: the Keychain on Apple platforms, a 0600 file or memory
/// elsewhere. The access token is never stored.
public protocol TokenStore: Sendable {
    func load() throws -> StoredSession?
    func save(_ session: StoredSession) throws
    func clear() throws
}

/// Non-secret data that must vanish with the app (UserDefaults on Apple platforms, a directory
/// elsewhere): this install's id, the cached `/v1/config`, the last entitlement snapshot, the
/// analytics device id and queue.
public protocol ClientStorage: Sendable {
    func data(forKey key: String) -> Data?
    func set(_ data: Data?, forKey key: String)
}

/// A session in memory only: gone when the process ends.
public final class MemoryTokenStore: TokenStore, @unchecked Sendable {
    private let lock = NSLock()
    private var session: StoredSession?

    public init(_ session: StoredSession? = nil) { self.session = session }

    public func load() throws -> StoredSession? { lock.withLock { session } }
    public func save(_ session: StoredSession) throws { lock.withLock { self.session = session } }
    public func clear() throws { lock.withLock { session = nil } }
}

/// A session in a file only its owner can read (0600), written atomically.
public struct FileTokenStore: TokenStore {
    public let url: URL

    public init(url: URL) { self.url = url }

    public func load() throws -> StoredSession? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try JSONDecoder().decode(StoredSession.self, from: Data(contentsOf: url))
    }

    public func save(_ session: StoredSession) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = url.appendingPathExtension("tmp-\(UUID().uuidString)")
        // Created with 0600 before any secret is written into it.
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
        let handle = try FileHandle(forWritingTo: temporary)
        try handle.write(contentsOf: try JSONEncoder().encode(session))
        try handle.synchronize()
        try handle.close()
        // rename(2) replaces the old file atomically: a crash leaves the old session or the new.
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown)
        }
    }

    public func clear() throws {
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
    }
}

/// Non-secret data in memory only.
public final class MemoryStorage: ClientStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Data] = [:]

    public init() {}

    public func data(forKey key: String) -> Data? { lock.withLock { values[key] } }
    public func set(_ data: Data?, forKey key: String) { lock.withLock { values[key] = data } }
}

/// Non-secret data as files in a directory (deleted with the app when it lives in the app's
/// container).
public struct DirectoryStorage: ClientStorage {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    private func url(_ key: String) -> URL {
        directory.appendingPathComponent(key.replacingOccurrences(of: "/", with: "_") + ".json")
    }

    public func data(forKey key: String) -> Data? { try? Data(contentsOf: url(key)) }

    public func set(_ data: Data?, forKey key: String) {
        if let data {
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try? data.write(to: url(key), options: .atomic)
        } else {
            try? FileManager.default.removeItem(at: url(key))
        }
    }
}

/// Non-secret data in `UserDefaults`, which iOS deletes with the app (unlike the Keychain).
public struct UserDefaultsStorage: ClientStorage, @unchecked Sendable {
    let defaults: UserDefaults
    let prefix: String

    public init(defaults: UserDefaults = .standard, prefix: String = "gatehouse.") {
        self.defaults = defaults
        self.prefix = prefix
    }

    public func data(forKey key: String) -> Data? { defaults.data(forKey: prefix + key) }
    public func set(_ data: Data?, forKey key: String) { defaults.set(data, forKey: prefix + key) }
}

#if canImport(Security)
import Security

/// The refresh token in the Keychain, readable after the first unlock, never synced or
/// restored to another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`).
public struct KeychainTokenStore: TokenStore {
    public let service: String
    public let account: String

    public init(service: String, account: String = "session") {
        self.service = service
        self.account = account
    }

    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    public func load() throws -> StoredSession? {
        var search = query
        search[kSecReturnData as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw KeychainError(status: status) }
        return try JSONDecoder().decode(StoredSession.self, from: data)
    }

    public func save(_ session: StoredSession) throws {
        let data = try JSONEncoder().encode(session)
        let update: [String: Any] = [
            kSecValueData as String: data, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        var status = SecItemUpdate(query as CFDictionary, update as CFDictionary)
        if status == errSecItemNotFound {
            var add = query
            add.merge(update) { $1 }
            status = SecItemAdd(add as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }

    public func clear() throws {
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
    }

    public struct KeychainError: Error, Equatable {
        public var status: OSStatus
    }
}
#endif
