import Foundation

/// Every decision `KeychainTokenStore` makes, as plain values, so that they are compiled and
/// tested on every platform (issue 19): which item (class, service, account), how it is
/// protected (readable after the first unlock, on this device only, never synchronised to
/// iCloud Keychain, so neither a backup restored to a new phone nor another device inherits the
/// session), what each call asks, and what each answer means. The Apple-only store does no more
/// than translate these keys and values to the `kSec…` constants and make the `SecItem…` call.
///
/// Reinstall detection is not the Keychain's: the Keychain outlives the app on iOS, so each
/// saved session carries the install id kept in the app's own storage, and `Gatehouse` discards
/// a session from another install (`SignOutReason.reinstalled`).
struct KeychainItem: Sendable, Equatable {
    /// The attributes the store uses, one per `kSec…` key.
    enum Key: String, Sendable, CaseIterable {
        /// `kSecClass`
        case itemClass
        /// `kSecAttrService`
        case service
        /// `kSecAttrAccount`
        case account
        /// `kSecAttrAccessGroup`: the Keychain access group shared by an app and its extensions.
        case accessGroup
        /// `kSecAttrAccessible`
        case accessible
        /// `kSecAttrSynchronizable`
        case synchronizable
        /// `kSecReturnData`
        case returnData
        /// `kSecMatchLimit`
        case matchLimit
        /// `kSecValueData`
        case valueData
    }

    /// The values the store sends, one per `kSec…` constant or plain value.
    enum Value: Sendable, Equatable {
        /// `kSecClassGenericPassword`
        case genericPassword
        /// `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: a refresh in the background after
        /// a reboot works once the phone was unlocked; not in backups restored to another device.
        case afterFirstUnlockThisDeviceOnly
        /// `kSecMatchLimitOne`
        case matchOne
        case string(String)
        case bool(Bool)
        case data(Data)
    }

    typealias Query = [Key: Value]

    /// The `OSStatus` codes the store tells apart (Security's `SecBase.h`).
    enum Status {
        static let success: Int32 = 0  // errSecSuccess
        static let itemNotFound: Int32 = -25300  // errSecItemNotFound
        /// The item exists but cannot be read now: the device has not been unlocked since it
        /// started (iOS prewarming launches apps then). Not a missing session.
        static let interactionNotAllowed: Int32 = -25308  // errSecInteractionNotAllowed
    }

    let service: String
    let account: String
    /// Shared by the app and its extensions (`$(AppIdentifierPrefix)com.example.handz.shared`);
    /// nil for the app's own default group.
    let accessGroup: String?

    /// The Keychain store's default account name: one session per service.
    static let defaultAccount = "session"

    init(service: String, account: String = KeychainItem.defaultAccount, accessGroup: String? = nil) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
    }

    /// Names the one item: a generic password under this service and account, never a
    /// synchronisable one.
    var identity: Query {
        var query: Query = [.itemClass: .genericPassword, .service: .string(service), .account: .string(account), .synchronizable: .bool(false)]
        if let accessGroup { query[.accessGroup] = .string(accessGroup) }
        return query
    }

    /// `SecItemCopyMatching`: the item's data, one item at most.
    var load: Query { identity.merging([.returnData: .bool(true), .matchLimit: .matchOne]) { $1 } }

    /// `SecItemUpdate`'s attributes: the new data, and the protection class again, so an item an
    /// older version wrote with another class is brought to this one.
    func update(_ data: Data) -> Query { [.valueData: .data(data), .accessible: .afterFirstUnlockThisDeviceOnly] }

    /// `SecItemAdd` when the update found no item: the identity and the attributes together.
    func add(_ data: Data) -> Query { identity.merging(update(data)) { $1 } }

    /// `SecItemDelete`.
    var delete: Query { identity }

    // MARK: Answers

    /// What `SecItemCopyMatching` answered: no item is no session; anything but success is an error.
    static func loaded(status: Int32, data: Data?) throws -> StoredSession? {
        if status == Status.itemNotFound { return nil }
        guard status == Status.success, let data else { throw KeychainStatusError(status: status) }
        return try JSONDecoder().decode(StoredSession.self, from: data)
    }

    /// Whether a save whose update answered `status` must add the item instead.
    static func addsAfterUpdate(status: Int32) -> Bool { status == Status.itemNotFound }

    /// A save's last answer: success or an error.
    static func saved(status: Int32) throws {
        guard status == Status.success else { throw KeychainStatusError(status: status) }
    }

    /// `SecItemDelete`'s answer: an item already gone is cleared too.
    static func cleared(status: Int32) throws {
        guard status == Status.success || status == Status.itemNotFound else { throw KeychainStatusError(status: status) }
    }
}

/// A Keychain answer other than the ones the store expects, with its `OSStatus`.
struct KeychainStatusError: TokenStoreAvailabilityError, Equatable {
    var status: Int32

    /// Locked before the first unlock: the session is there, to be read later.
    var isTemporarilyUnavailable: Bool { status == KeychainItem.Status.interactionNotAllowed }
}

/// The four Keychain calls, taking `KeychainItem`'s plain queries: `SecItem…` on Apple platforms;
/// an in-memory stand-in in the tests, so the store's logic runs on Linux too.
protocol KeychainCalls: Sendable {
    func copyMatching(_ query: KeychainItem.Query) -> (status: Int32, data: Data?)
    func update(_ query: KeychainItem.Query, _ attributes: KeychainItem.Query) -> Int32
    func add(_ attributes: KeychainItem.Query) -> Int32
    func delete(_ query: KeychainItem.Query) -> Int32
}

/// `KeychainTokenStore`'s whole logic over any `KeychainCalls`: load, save (update, else add),
/// clear. Compiled and tested everywhere; the Apple store is this over `SecItem…`.
struct KeychainSessionStore<Calls: KeychainCalls>: TokenStore {
    let item: KeychainItem
    let calls: Calls
    /// Taken around a refresh by every process sharing the item's access group.
    var lock: (any SessionLock)? = nil

    var sessionLock: (any SessionLock)? { lock }

    func load() throws -> StoredSession? {
        let answer = calls.copyMatching(item.load)
        if let session = try KeychainItem.loaded(status: answer.status, data: answer.data) { return session }
        return try movedIntoGroup()
    }

    /// An app that starts sharing its session (an access group given in an update) finds its
    /// item where the earlier version kept it, in the app's own group, and moves it into the
    /// shared one: an update must never sign anyone out. The old item is deleted first (a query
    /// without a group would delete the moved one too); the session is answered even if the
    /// write fails, and the next save writes it.
    private func movedIntoGroup() throws -> StoredSession? {
        guard item.accessGroup != nil else { return nil }
        let earlier = KeychainItem(service: item.service, account: item.account)
        let answer = calls.copyMatching(earlier.load)
        guard let session = try KeychainItem.loaded(status: answer.status, data: answer.data) else { return nil }
        try KeychainItem.cleared(status: calls.delete(earlier.delete))
        try? save(session)
        return session
    }

    func save(_ session: StoredSession) throws {
        let data = try JSONEncoder().encode(session)
        var status = calls.update(item.identity, item.update(data))
        if KeychainItem.addsAfterUpdate(status: status) { status = calls.add(item.add(data)) }
        try KeychainItem.saved(status: status)
    }

    func clear() throws {
        try KeychainItem.cleared(status: calls.delete(item.delete))
    }
}
