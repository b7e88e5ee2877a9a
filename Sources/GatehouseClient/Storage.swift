import Foundation
import GatehouseWire

/// What the SDK keeps of a session between launches. Secret: kept in a `TokenStore`.
public struct StoredSession: Codable, Sendable, Equatable {
    /// The secret that gets the session new access tokens (`POST /v1/auth/refresh`); each
    /// refresh replaces it.
    public var refreshToken: String
    /// The server's id for the session, as `sessions()` lists it.
    public var sessionID: String
    /// The install that saved it (see `ClientStorage`): a session from an earlier install of
    /// the app is discarded.
    public var installID: String
    /// How the person signed in last (`email`, `apple`, `google`, `magic_link`, `anonymous`):
    /// the re-auth screen highlights it.
    public var provider: String
    /// The last user the server returned, to show while offline.
    public var user: UserPayload?

    /// Makes a saved session, e.g. for a ``MemoryTokenStore`` in tests and previews.
    ///
    /// - Parameters:
    ///   - refreshToken: The session's refresh token.
    ///   - sessionID: The server's id for the session.
    ///   - installID: The install that saved it; a session from another install is discarded
    ///     at launch.
    ///   - provider: How the person signed in (`email`, `apple`, …).
    ///   - user: The last user the server returned; nil when none is known yet.
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
    /// The saved session, or nil when there is none. The SDK reads it once per launch and
    /// treats an error as no session.
    func load() throws -> StoredSession?
    /// Replaces the saved session: at every sign-in and after every refresh (which rotates the
    /// refresh token). An error at sign-in fails the sign-in with `internal_error`.
    func save(_ session: StoredSession) throws
    /// Removes the saved session when it ends (a sign-out, or the server ended it); errors are
    /// ignored.
    func clear() throws
    /// The lock the processes sharing this store take around a refresh (see "Extensions and
    /// widgets" in the SDK's guide); nil, the default, when one process alone uses the store.
    var sessionLock: (any SessionLock)? { get }
}

extension TokenStore {
    /// No lock: one process alone uses the store.
    public var sessionLock: (any SessionLock)? { nil }
}

/// Non-secret data that must vanish with the app (UserDefaults on Apple platforms, a directory
/// elsewhere): this install's id, the cached `/v1/config`, the last entitlement snapshot, the
/// analytics device id and queue.
public protocol ClientStorage: Sendable {
    /// The data kept under `key`, or nil when there is none.
    func data(forKey key: String) -> Data?
    /// Keeps `data` under `key`, replacing what was there; nil removes the key.
    func set(_ data: Data?, forKey key: String)
}

extension ClientStorage {
    /// The JSON kept under `key`, or nil when there is none or it no longer decodes.
    func decoded<Value: Decodable>(_: Value.Type, forKey key: String) -> Value? {
        data(forKey: key).flatMap { try? JSONDecoder().decode(Value.self, from: $0) }
    }

    /// Keeps `value` under `key` as JSON (removes the key when it does not encode).
    func set<Value: Encodable>(encoding value: Value, forKey key: String) {
        set(try? JSONEncoder().encode(value), forKey: key)
    }
}

/// A session in memory only: gone when the process ends.
public final class MemoryTokenStore: TokenStore, @unchecked Sendable {
    private let lock = NSLock()
    private var session: StoredSession?

    /// Makes a store holding `session`, or empty. A session whose `installID` is not this
    /// install's is discarded at launch.
    public init(_ session: StoredSession? = nil) { self.session = session }

    /// The session held, or nil; never throws.
    public func load() throws -> StoredSession? { lock.withLock { session } }
    /// Holds `session` in place of the previous one; never throws.
    public func save(_ session: StoredSession) throws { lock.withLock { self.session = session } }
    /// Forgets the session; never throws.
    public func clear() throws { lock.withLock { session = nil } }
}

/// A session in a file only its owner can read (0600), written atomically.
public struct FileTokenStore: TokenStore {
    /// The file holding the session, as JSON.
    public let url: URL
    /// The lock shared with the other processes using this file, if any.
    public let sessionLock: (any SessionLock)?

    /// Makes a store for the file at `url`; its folder is created at the first save.
    ///
    /// - Parameters:
    ///   - url: The file holding the session.
    ///   - lock: For a file several processes share: the lock they all take around a refresh
    ///     (a ``FileSessionLock`` beside the file, for instance). Nil when one process alone
    ///     uses the file.
    public init(url: URL, lock: (any SessionLock)? = nil) {
        self.url = url
        sessionLock = lock
    }

    /// The session in the file, or nil when there is no file; throws when the file cannot be
    /// read or decoded.
    public func load() throws -> StoredSession? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try JSONDecoder().decode(StoredSession.self, from: Data(contentsOf: url))
    }

    /// Writes the session to a new 0600 file and renames it over the old one, so a crash
    /// leaves either the old session or the new one; throws when the file cannot be written.
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

    /// Deletes the file, if there is one; throws when it cannot be removed.
    public func clear() throws {
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
    }
}

/// Non-secret data in memory only.
public final class MemoryStorage: ClientStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Data] = [:]

    /// Makes an empty storage.
    public init() {}

    /// The data held under `key`, or nil.
    public func data(forKey key: String) -> Data? { lock.withLock { values[key] } }
    /// Holds `data` under `key`; nil removes it.
    public func set(_ data: Data?, forKey key: String) { lock.withLock { values[key] = data } }
}

/// Non-secret data as files in a directory (deleted with the app when it lives in the app's
/// container).
public struct DirectoryStorage: ClientStorage {
    /// The folder holding one `<key>.json` file per key (a `/` in a key becomes `_`).
    public let directory: URL

    /// Makes a storage in `directory`; the folder is created at the first write.
    public init(directory: URL) { self.directory = directory }

    private func url(_ key: String) -> URL {
        directory.appendingPathComponent(key.replacingOccurrences(of: "/", with: "_") + ".json")
    }

    /// The contents of the key's file, or nil when it is missing or cannot be read.
    public func data(forKey key: String) -> Data? { try? Data(contentsOf: url(key)) }

    /// Writes the key's file atomically, or deletes it for nil; a failure is ignored.
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

    /// Makes a storage in `defaults`.
    ///
    /// - Parameters:
    ///   - defaults: The defaults to write to; `.standard` by default.
    ///   - prefix: Put before every key, so the SDK's keys stay apart from the app's own.
    public init(defaults: UserDefaults = .standard, prefix: String = "gatehouse.") {
        self.defaults = defaults
        self.prefix = prefix
    }

    /// The data under `key` with the prefix, or nil.
    public func data(forKey key: String) -> Data? { defaults.data(forKey: prefix + key) }
    /// Keeps `data` under `key` with the prefix; nil removes it.
    public func set(_ data: Data?, forKey key: String) { defaults.set(data, forKey: prefix + key) }
}

#if canImport(Security)
import Security

/// The refresh token in the Keychain, readable after the first unlock, never synced or
/// restored to another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`, not
/// synchronizable). An app and its extensions share it through a Keychain access group and a
/// ``FileSessionLock`` in their app group (see "Extensions and widgets" in the SDK's guide).
///
/// Only the `SecItem…` calls and the `kSec…` names live here (they exist on Apple platforms
/// only); what is asked and what the answers mean is `KeychainItem`, compiled and tested on
/// every platform.
public struct KeychainTokenStore: TokenStore {
    /// The Keychain item's service: one per app (`com.example.handz.gatehouse`).
    public let service: String
    /// The Keychain item's account within the service.
    public let account: String
    /// The Keychain access group the item is in, when the app shares it with its extensions.
    public let accessGroup: String?
    private let store: KeychainSessionStore<SecItemCalls>

    /// A store of the session in the Keychain item `service` / `account`.
    ///
    /// - Parameters:
    ///   - service: The item's service: one per app (`com.example.handz.gatehouse`).
    ///   - account: The item's account within the service.
    ///   - accessGroup: A Keychain access group the app and its extensions all list in their
    ///     entitlements (`$(AppIdentifierPrefix)com.example.handz.shared`), to share one session;
    ///     nil keeps the item in the app's own group.
    ///   - lock: With an access group: the lock every sharing process takes around a refresh, a
    ///     ``FileSessionLock`` in the app group's container.
    public init(service: String, account: String = "session", accessGroup: String? = nil, lock: (any SessionLock)? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
        store = KeychainSessionStore(
            item: KeychainItem(service: service, account: account, accessGroup: accessGroup), calls: SecItemCalls(), lock: lock)
    }

    /// The lock given at init.
    public var sessionLock: (any SessionLock)? { store.sessionLock }

    /// The stored session; nil when the item does not exist. Throws ``KeychainError``.
    public func load() throws -> StoredSession? { try mapped { try store.load() } }
    /// Stores the session, replacing the item. Throws ``KeychainError``.
    public func save(_ session: StoredSession) throws { try mapped { try store.save(session) } }
    /// Deletes the item (nothing to do when it does not exist). Throws ``KeychainError``.
    public func clear() throws { try mapped { try store.clear() } }

    private func mapped<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as KeychainStatusError { throw KeychainError(status: error.status) }
    }

    /// A Keychain call that failed, with its status.
    public struct KeychainError: TokenStoreAvailabilityError, Equatable {
        /// The `OSStatus` the `SecItem…` call answered (`errSecInteractionNotAllowed` while the
        /// device is locked before its first unlock, for example).
        public var status: OSStatus

        /// `errSecInteractionNotAllowed`: the item cannot be read until the device is unlocked.
        public var isTemporarilyUnavailable: Bool { status == errSecInteractionNotAllowed }
    }
}

/// `KeychainItem`'s plain queries as `SecItem…` calls: a name for each key and value, nothing else.
struct SecItemCalls: KeychainCalls {
    static func dictionary(_ query: KeychainItem.Query) -> CFDictionary {
        var result: [String: Any] = [:]
        for (key, value) in query {
            let name: CFString
            switch key {
            case .itemClass: name = kSecClass
            case .service: name = kSecAttrService
            case .account: name = kSecAttrAccount
            case .accessGroup: name = kSecAttrAccessGroup
            case .accessible: name = kSecAttrAccessible
            case .synchronizable: name = kSecAttrSynchronizable
            case .returnData: name = kSecReturnData
            case .matchLimit: name = kSecMatchLimit
            case .valueData: name = kSecValueData
            }
            switch value {
            case .genericPassword: result[name as String] = kSecClassGenericPassword
            case .afterFirstUnlockThisDeviceOnly: result[name as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            case .matchOne: result[name as String] = kSecMatchLimitOne
            case .string(let text): result[name as String] = text
            case .bool(let flag): result[name as String] = flag
            case .data(let data): result[name as String] = data
            }
        }
        return result as CFDictionary
    }

    func copyMatching(_ query: KeychainItem.Query) -> (status: Int32, data: Data?) {
        var result: AnyObject?
        let status = SecItemCopyMatching(Self.dictionary(query), &result)
        return (status, result as? Data)
    }

    func update(_ query: KeychainItem.Query, _ attributes: KeychainItem.Query) -> Int32 {
        SecItemUpdate(Self.dictionary(query), Self.dictionary(attributes))
    }

    func add(_ attributes: KeychainItem.Query) -> Int32 { SecItemAdd(Self.dictionary(attributes), nil) }

    func delete(_ query: KeychainItem.Query) -> Int32 { SecItemDelete(Self.dictionary(query)) }
}
#endif
