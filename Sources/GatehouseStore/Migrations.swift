/// A numbered schema change. Shipped migrations are never edited: a changed one is detected
/// by its checksum and refused at start. Every change is a new migration for both databases.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    /// Run in order inside one transaction.
    public let statements: [String]

    public init(version: Int, name: String, statements: [String]) {
        self.version = version
        self.name = name
        self.statements = statements
    }

    /// FNV-1a over the statements: detects edits, which is all it is for.
    public var checksum: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for statement in statements {
            for byte in statement.utf8 + [0] {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
        }
        return String(hash, radix: 16)
    }
}

public enum Migrations {
    public static func all(for dialect: SQLDialect) -> [Migration] {
        switch dialect {
        case .sqlite: return sqlite
        case .postgres: return postgres
        }
    }

    static let sqlite: [Migration] = [
        Migration(
            version: 1, name: "users_identities_signing_keys",
            statements: [
                """
                CREATE TABLE users (
                    id TEXT PRIMARY KEY,
                    email TEXT,
                    email_normalized TEXT UNIQUE,
                    email_verified_at INTEGER,
                    is_anonymous INTEGER NOT NULL DEFAULT 0,
                    display_name TEXT,
                    handle TEXT UNIQUE,
                    avatar_url TEXT,
                    onboarding_complete INTEGER NOT NULL DEFAULT 0,
                    password_hash TEXT,
                    password_changed_at INTEGER,
                    disabled_at INTEGER,
                    disabled_reason TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                )
                """,
                "CREATE INDEX users_created ON users (created_at, id)",
                """
                CREATE TABLE identities (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    provider TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    email TEXT,
                    is_private_relay INTEGER NOT NULL DEFAULT 0,
                    created_at INTEGER NOT NULL,
                    UNIQUE (provider, subject)
                )
                """,
                "CREATE INDEX identities_user ON identities (user_id)",
                """
                CREATE TABLE signing_keys (
                    kid TEXT PRIMARY KEY,
                    algorithm TEXT NOT NULL,
                    private_key BLOB NOT NULL,
                    encryption TEXT NOT NULL,
                    public_jwk TEXT NOT NULL,
                    status TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    retired_at INTEGER,
                    publish_until INTEGER
                )
                """,
                "CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (status) WHERE status = 'active'",
            ]),
        Migration(
            version: 2, name: "sessions_tokens_throttles_audit_secrets",
            statements: [
                """
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    provider TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_active_at INTEGER NOT NULL,
                    expires_at INTEGER,
                    revoked_at INTEGER,
                    revoked_reason TEXT,
                    user_agent TEXT,
                    ip_address TEXT
                )
                """,
                "CREATE INDEX sessions_user ON sessions (user_id, created_at)",
                """
                CREATE TABLE refresh_tokens (
                    token_hash BLOB PRIMARY KEY,
                    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    issued_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    rotated_at INTEGER
                )
                """,
                "CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id)",
                """
                CREATE TABLE throttles (
                    key TEXT PRIMARY KEY,
                    failures INTEGER NOT NULL,
                    locked_until INTEGER,
                    updated_at INTEGER NOT NULL
                )
                """,
                """
                CREATE TABLE rate_limits (
                    key TEXT NOT NULL,
                    window_start INTEGER NOT NULL,
                    count INTEGER NOT NULL,
                    PRIMARY KEY (key, window_start)
                )
                """,
                """
                CREATE TABLE audit_log (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL,
                    event TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    user_id TEXT,
                    session_id TEXT,
                    ip_address TEXT,
                    user_agent TEXT,
                    details TEXT
                )
                """,
                "CREATE INDEX audit_log_user ON audit_log (user_id, seq)",
                """
                CREATE TABLE server_secrets (
                    name TEXT PRIMARY KEY,
                    value BLOB NOT NULL,
                    encryption TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                )
                """,
            ]),
        Migration(
            version: 3, name: "outbox",
            statements: [
                """
                CREATE TABLE outbox (
                    id TEXT PRIMARY KEY,
                    created_at INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    recipient TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    text_body TEXT,
                    html_body TEXT,
                    link_host TEXT,
                    status TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    next_attempt_at INTEGER NOT NULL,
                    claimed_until INTEGER,
                    last_error TEXT,
                    sent_at INTEGER
                )
                """,
                "CREATE INDEX outbox_due ON outbox (status, next_attempt_at)",
                "CREATE INDEX outbox_created ON outbox (created_at)",
            ]),
        Migration(
            version: 4, name: "email_tokens",
            statements: [
                """
                CREATE TABLE email_tokens (
                    token_hash BLOB PRIMARY KEY,
                    purpose TEXT NOT NULL,
                    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
                    email TEXT NOT NULL,
                    email_normalized TEXT NOT NULL,
                    code_hash BLOB,
                    code_attempts INTEGER NOT NULL,
                    redirect_to TEXT,
                    password_stamp INTEGER,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    used_at INTEGER
                )
                """,
                "CREATE INDEX email_tokens_user ON email_tokens (user_id, purpose, created_at)",
                "CREATE INDEX email_tokens_email ON email_tokens (email_normalized, purpose, created_at)",
                "CREATE INDEX email_tokens_expiry ON email_tokens (expires_at)",
                // A queued request (forgot-password, magic link) is composed by the mail worker.
                "ALTER TABLE outbox ADD COLUMN payload TEXT",
            ]),
        Migration(
            version: 5, name: "jobs_provider_tokens",
            statements: [
                """
                CREATE TABLE jobs (
                    id TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    encryption TEXT NOT NULL,
                    status TEXT NOT NULL,
                    attempts INTEGER NOT NULL,
                    next_attempt_at INTEGER NOT NULL,
                    claimed_until INTEGER,
                    last_error TEXT,
                    created_at INTEGER NOT NULL
                )
                """,
                "CREATE INDEX jobs_due ON jobs (status, next_attempt_at)",
                // A provider's own token for the identity (Apple's refresh token), sealed.
                "ALTER TABLE identities ADD COLUMN provider_token BLOB",
                "ALTER TABLE identities ADD COLUMN provider_token_encryption TEXT",
            ]),
        Migration(
            version: 6, name: "events_idempotency_profiles",
            statements: [
                """
                CREATE TABLE events (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    type TEXT NOT NULL,
                    user_id TEXT,
                    data TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                )
                """,
                "CREATE INDEX events_user ON events (user_id, seq)",
                """
                CREATE TABLE idempotency_keys (
                    scope TEXT NOT NULL,
                    key_hash BLOB NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (scope, key_hash)
                )
                """,
                "CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)",
                // The names last offered to an anonymous user (JSON array).
                "ALTER TABLE users ADD COLUMN name_suggestions TEXT",
                // An operator's plan override (read by the entitlement engine).
                "ALTER TABLE users ADD COLUMN plan_override TEXT",
            ]),
        Migration(
            version: 7, name: "magic_link_upgrades",
            statements: [
                // The anonymous account a magic link upgrades, when it was asked for while signed in.
                "ALTER TABLE email_tokens ADD COLUMN upgrade_user_id TEXT",
            ]),
        Migration(
            version: 8, name: "trials_credit_ledger",
            statements: [
                "ALTER TABLE users ADD COLUMN trial_started_at INTEGER",
                """
                CREATE TABLE credit_ledger (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    credit TEXT NOT NULL,
                    amount INTEGER NOT NULL,
                    action TEXT NOT NULL,
                    subject TEXT,
                    idempotency_key TEXT NOT NULL,
                    period_start INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    UNIQUE (user_id, idempotency_key)
                )
                """,
                "CREATE INDEX credit_ledger_period ON credit_ledger (user_id, credit, period_start)",
            ]),
        Migration(
            version: 9, name: "analytics_anonymous_ids",
            statements: [
                // Client analytics sent before any account exists carry a device-local id; it is
                // tied to the user once one signs in (decision 23).
                "ALTER TABLE events ADD COLUMN anonymous_id TEXT",
                "CREATE INDEX events_anonymous ON events (anonymous_id)",
            ]),
        Migration(
            version: 10, name: "app_store_subscriptions",
            statements: [
                // One row per App Store subscription (original transaction id); user_id is NULL
                // until an account claims it.
                """
                CREATE TABLE subscriptions (
                    original_transaction_id TEXT PRIMARY KEY,
                    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
                    product_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    status TEXT NOT NULL,
                    expires_at INTEGER,
                    grace_expires_at INTEGER,
                    will_renew INTEGER NOT NULL,
                    introductory INTEGER NOT NULL,
                    signed_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                )
                """,
                "CREATE INDEX subscriptions_user ON subscriptions (user_id)",
                // Notifications already applied, by notificationUUID (Apple retries).
                "CREATE TABLE app_store_notifications (notification_uuid TEXT PRIMARY KEY, type TEXT NOT NULL, received_at INTEGER NOT NULL)",
            ]),
        Migration(
            version: 11, name: "retention_indexes",
            statements: [
                // The retention sweep deletes by age (decision 11).
                "CREATE INDEX audit_log_created ON audit_log (created_at)",
                "CREATE INDEX sessions_last_active ON sessions (last_active_at)",
                "CREATE INDEX rate_limits_window ON rate_limits (window_start)",
            ]),
        Migration(
            version: 12, name: "replay_guards",
            statements: [
                // The session an idempotent sign-up or anonymous start opened: a replay is
                // honoured only while it is live.
                "ALTER TABLE idempotency_keys ADD COLUMN session_id TEXT",
                "CREATE INDEX idempotency_keys_user ON idempotency_keys (user_id)",
                // Single-use ids of signed messages from outside (Apple's events by jti).
                """
                CREATE TABLE used_message_ids (
                    issuer TEXT NOT NULL,
                    message_id TEXT NOT NULL,
                    keep_until INTEGER NOT NULL,
                    PRIMARY KEY (issuer, message_id)
                )
                """,
                "CREATE INDEX used_message_ids_keep ON used_message_ids (keep_until)",
            ]),
        Migration(
            version: 13, name: "usage_meters",
            statements: [
                // The uses an app's backend reported (POST /v1/usage/{meter}), one row per
                // idempotency key, and each period's running count.
                """
                CREATE TABLE usage_records (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    meter TEXT NOT NULL,
                    idempotency_key TEXT NOT NULL,
                    amount INTEGER NOT NULL,
                    period_start INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (user_id, meter, idempotency_key)
                )
                """,
                "CREATE INDEX usage_records_period ON usage_records (period_start)",
                """
                CREATE TABLE usage_meters (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    meter TEXT NOT NULL,
                    period_start INTEGER NOT NULL,
                    used INTEGER NOT NULL,
                    PRIMARY KEY (user_id, meter, period_start)
                )
                """,
                "CREATE INDEX usage_meters_period ON usage_meters (period_start)",
            ]),
    ]

    static let postgres: [Migration] = [
        Migration(
            version: 1, name: "users_identities_signing_keys",
            statements: [
                """
                CREATE TABLE users (
                    id TEXT PRIMARY KEY,
                    email TEXT,
                    email_normalized TEXT UNIQUE,
                    email_verified_at BIGINT,
                    is_anonymous BIGINT NOT NULL DEFAULT 0,
                    display_name TEXT,
                    handle TEXT UNIQUE,
                    avatar_url TEXT,
                    onboarding_complete BIGINT NOT NULL DEFAULT 0,
                    password_hash TEXT,
                    password_changed_at BIGINT,
                    disabled_at BIGINT,
                    disabled_reason TEXT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX users_created ON users (created_at, id)",
                """
                CREATE TABLE identities (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    provider TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    email TEXT,
                    is_private_relay BIGINT NOT NULL DEFAULT 0,
                    created_at BIGINT NOT NULL,
                    UNIQUE (provider, subject)
                )
                """,
                "CREATE INDEX identities_user ON identities (user_id)",
                """
                CREATE TABLE signing_keys (
                    kid TEXT PRIMARY KEY,
                    algorithm TEXT NOT NULL,
                    private_key BYTEA NOT NULL,
                    encryption TEXT NOT NULL,
                    public_jwk TEXT NOT NULL,
                    status TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    retired_at BIGINT,
                    publish_until BIGINT
                )
                """,
                "CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (status) WHERE status = 'active'",
            ]),
        Migration(
            version: 2, name: "sessions_tokens_throttles_audit_secrets",
            statements: [
                """
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    provider TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    last_active_at BIGINT NOT NULL,
                    expires_at BIGINT,
                    revoked_at BIGINT,
                    revoked_reason TEXT,
                    user_agent TEXT,
                    ip_address TEXT
                )
                """,
                "CREATE INDEX sessions_user ON sessions (user_id, created_at)",
                """
                CREATE TABLE refresh_tokens (
                    token_hash BYTEA PRIMARY KEY,
                    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                    issued_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    rotated_at BIGINT
                )
                """,
                "CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id)",
                """
                CREATE TABLE throttles (
                    key TEXT PRIMARY KEY,
                    failures BIGINT NOT NULL,
                    locked_until BIGINT,
                    updated_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE rate_limits (
                    key TEXT NOT NULL,
                    window_start BIGINT NOT NULL,
                    count BIGINT NOT NULL,
                    PRIMARY KEY (key, window_start)
                )
                """,
                """
                CREATE TABLE audit_log (
                    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    created_at BIGINT NOT NULL,
                    event TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    user_id TEXT,
                    session_id TEXT,
                    ip_address TEXT,
                    user_agent TEXT,
                    details TEXT
                )
                """,
                "CREATE INDEX audit_log_user ON audit_log (user_id, seq)",
                """
                CREATE TABLE server_secrets (
                    name TEXT PRIMARY KEY,
                    value BYTEA NOT NULL,
                    encryption TEXT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
            ]),
        Migration(
            version: 3, name: "outbox",
            statements: [
                """
                CREATE TABLE outbox (
                    id TEXT PRIMARY KEY,
                    created_at BIGINT NOT NULL,
                    kind TEXT NOT NULL,
                    recipient TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    text_body TEXT,
                    html_body TEXT,
                    link_host TEXT,
                    status TEXT NOT NULL,
                    attempts BIGINT NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    claimed_until BIGINT,
                    last_error TEXT,
                    sent_at BIGINT
                )
                """,
                "CREATE INDEX outbox_due ON outbox (status, next_attempt_at)",
                "CREATE INDEX outbox_created ON outbox (created_at)",
            ]),
        Migration(
            version: 4, name: "email_tokens",
            statements: [
                """
                CREATE TABLE email_tokens (
                    token_hash BYTEA PRIMARY KEY,
                    purpose TEXT NOT NULL,
                    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
                    email TEXT NOT NULL,
                    email_normalized TEXT NOT NULL,
                    code_hash BYTEA,
                    code_attempts BIGINT NOT NULL,
                    redirect_to TEXT,
                    password_stamp BIGINT,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    used_at BIGINT
                )
                """,
                "CREATE INDEX email_tokens_user ON email_tokens (user_id, purpose, created_at)",
                "CREATE INDEX email_tokens_email ON email_tokens (email_normalized, purpose, created_at)",
                "CREATE INDEX email_tokens_expiry ON email_tokens (expires_at)",
                // A queued request (forgot-password, magic link) is composed by the mail worker.
                "ALTER TABLE outbox ADD COLUMN payload TEXT",
            ]),
        Migration(
            version: 5, name: "jobs_provider_tokens",
            statements: [
                """
                CREATE TABLE jobs (
                    id TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    payload BYTEA NOT NULL,
                    encryption TEXT NOT NULL,
                    status TEXT NOT NULL,
                    attempts BIGINT NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    claimed_until BIGINT,
                    last_error TEXT,
                    created_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX jobs_due ON jobs (status, next_attempt_at)",
                // A provider's own token for the identity (Apple's refresh token), sealed.
                "ALTER TABLE identities ADD COLUMN provider_token BYTEA",
                "ALTER TABLE identities ADD COLUMN provider_token_encryption TEXT",
            ]),
        Migration(
            version: 6, name: "events_idempotency_profiles",
            statements: [
                """
                CREATE TABLE events (
                    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    type TEXT NOT NULL,
                    user_id TEXT,
                    data TEXT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX events_user ON events (user_id, seq)",
                """
                CREATE TABLE idempotency_keys (
                    scope TEXT NOT NULL,
                    key_hash BYTEA NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (scope, key_hash)
                )
                """,
                "CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)",
                // The names last offered to an anonymous user (JSON array).
                "ALTER TABLE users ADD COLUMN name_suggestions TEXT",
                // An operator's plan override (read by the entitlement engine).
                "ALTER TABLE users ADD COLUMN plan_override TEXT",
            ]),
        Migration(
            version: 7, name: "magic_link_upgrades",
            statements: [
                // The anonymous account a magic link upgrades, when it was asked for while signed in.
                "ALTER TABLE email_tokens ADD COLUMN upgrade_user_id TEXT",
            ]),
        Migration(
            version: 8, name: "trials_credit_ledger",
            statements: [
                "ALTER TABLE users ADD COLUMN trial_started_at BIGINT",
                """
                CREATE TABLE credit_ledger (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    credit TEXT NOT NULL,
                    amount BIGINT NOT NULL,
                    action TEXT NOT NULL,
                    subject TEXT,
                    idempotency_key TEXT NOT NULL,
                    period_start BIGINT NOT NULL,
                    created_at BIGINT NOT NULL,
                    UNIQUE (user_id, idempotency_key)
                )
                """,
                "CREATE INDEX credit_ledger_period ON credit_ledger (user_id, credit, period_start)",
            ]),
        Migration(
            version: 9, name: "analytics_anonymous_ids",
            statements: [
                // Client analytics sent before any account exists carry a device-local id; it is
                // tied to the user once one signs in (decision 23).
                "ALTER TABLE events ADD COLUMN anonymous_id TEXT",
                "CREATE INDEX events_anonymous ON events (anonymous_id)",
            ]),
        Migration(
            version: 10, name: "app_store_subscriptions",
            statements: [
                // One row per App Store subscription (original transaction id); user_id is NULL
                // until an account claims it.
                """
                CREATE TABLE subscriptions (
                    original_transaction_id TEXT PRIMARY KEY,
                    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
                    product_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    status TEXT NOT NULL,
                    expires_at BIGINT,
                    grace_expires_at BIGINT,
                    will_renew BIGINT NOT NULL,
                    introductory BIGINT NOT NULL,
                    signed_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX subscriptions_user ON subscriptions (user_id)",
                // Notifications already applied, by notificationUUID (Apple retries).
                "CREATE TABLE app_store_notifications (notification_uuid TEXT PRIMARY KEY, type TEXT NOT NULL, received_at BIGINT NOT NULL)",
            ]),
        Migration(
            version: 11, name: "retention_indexes",
            statements: [
                // The retention sweep deletes by age (decision 11).
                "CREATE INDEX audit_log_created ON audit_log (created_at)",
                "CREATE INDEX sessions_last_active ON sessions (last_active_at)",
                "CREATE INDEX rate_limits_window ON rate_limits (window_start)",
            ]),
        Migration(
            version: 12, name: "replay_guards",
            statements: [
                // The session an idempotent sign-up or anonymous start opened: a replay is
                // honoured only while it is live.
                "ALTER TABLE idempotency_keys ADD COLUMN session_id TEXT",
                "CREATE INDEX idempotency_keys_user ON idempotency_keys (user_id)",
                // Single-use ids of signed messages from outside (Apple's events by jti).
                """
                CREATE TABLE used_message_ids (
                    issuer TEXT NOT NULL,
                    message_id TEXT NOT NULL,
                    keep_until BIGINT NOT NULL,
                    PRIMARY KEY (issuer, message_id)
                )
                """,
                "CREATE INDEX used_message_ids_keep ON used_message_ids (keep_until)",
            ]),
        Migration(
            version: 13, name: "usage_meters",
            statements: [
                // The uses an app's backend reported (POST /v1/usage/{meter}), one row per
                // idempotency key, and each period's running count.
                """
                CREATE TABLE usage_records (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    meter TEXT NOT NULL,
                    idempotency_key TEXT NOT NULL,
                    amount BIGINT NOT NULL,
                    period_start BIGINT NOT NULL,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (user_id, meter, idempotency_key)
                )
                """,
                "CREATE INDEX usage_records_period ON usage_records (period_start)",
                """
                CREATE TABLE usage_meters (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    meter TEXT NOT NULL,
                    period_start BIGINT NOT NULL,
                    used BIGINT NOT NULL,
                    PRIMARY KEY (user_id, meter, period_start)
                )
                """,
                "CREATE INDEX usage_meters_period ON usage_meters (period_start)",
            ]),
    ]
}

/// Applies pending migrations; safe to run from several nodes at once.
public struct Migrator: Sendable {
    public let database: any SQLDatabase
    public let migrations: [Migration]

    public init(database: any SQLDatabase, migrations: [Migration]? = nil) {
        self.database = database
        self.migrations = migrations ?? Migrations.all(for: database.dialect)
    }

    /// The versions that were applied by this call, in order.
    @discardableResult
    public func migrate(now: Int64) async throws -> [Int] {
        let integer = database.dialect == .postgres ? "BIGINT" : "INTEGER"
        try await database.query(
            """
            CREATE TABLE IF NOT EXISTS gatehouse_migrations (
                version \(integer) PRIMARY KEY,
                name TEXT NOT NULL,
                checksum TEXT NOT NULL,
                applied_at \(integer) NOT NULL
            )
            """)
        var applied: [Int] = []
        for migration in migrations.sorted(by: { $0.version < $1.version }) {
            let didApply = try await database.transaction { tx -> Bool in
                if tx.dialect == .postgres {
                    // Serialises nodes starting together; released at commit.
                    try await tx.query("SELECT pg_advisory_xact_lock(727274)")
                }
                let rows = try await tx.query(
                    "SELECT checksum FROM gatehouse_migrations WHERE version = ?", [.integer(Int64(migration.version))])
                if let row = rows.first {
                    let recorded = try row.string("checksum")
                    guard recorded == migration.checksum else {
                        throw StoreError.migrationMismatch(
                            "migration \(migration.version) (\(migration.name)) differs from the one applied to this database; shipped migrations must never be edited"
                        )
                    }
                    return false
                }
                for statement in migration.statements {
                    try await tx.query(statement)
                }
                try await tx.query(
                    "INSERT INTO gatehouse_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
                    [.integer(Int64(migration.version)), .text(migration.name), .text(migration.checksum), .integer(now)])
                return true
            }
            if didApply { applied.append(migration.version) }
        }
        let known = Set(migrations.map(\.version))
        let newest = try await database.query("SELECT MAX(version) AS version FROM gatehouse_migrations")
        if let version = try newest.first?.optionalInt("version"), !known.contains(Int(version)) {
            throw StoreError.migrationMismatch(
                "the database has schema version \(version), newer than this Gatehouse knows; upgrade Gatehouse")
        }
        return applied
    }
}
