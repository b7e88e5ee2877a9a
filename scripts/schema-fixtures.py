#!/usr/bin/env python3
"""Writes the per-version schema fixtures that SchemaFixtureTests walk (issue 62).

For every migration N there is one fixture, Server/Tests/support/schema-fixtures/NNNN.json: the
rows a database at schema version N holds, written against that version's schema. They are made
in order on SQLite: the migrations are applied one at a time, as a server of each version applied
them; after migration N the rows of the kinds that version brought are added (see ADDITIONS), and
everything the database then holds is written out. So the data of older kinds in fixture N is
what migration N and those before it made of the older versions' rows, and a migration that loses
a kind's data shows in the test of every fixture from before it.

Secrets are kept as the server keeps them: password hashes as stored (Argon2id, bcrypt, Firebase
scrypt), refresh tokens, reset tokens and client secrets as SHA-256, recovery codes as HMAC under
a key derived from the refresh-chain key, and signing keys, the refresh-chain key, second-factor
secrets and Firebase projects' parameters sealed with AES-256-GCM under the key HKDF derives from
GATEHOUSE_SECRET_KEY (the fixture names that secret). What a test needs to prove the rows through HTTP (passwords, tokens, the
signing key, the TOTP secret) is in each fixture's "known" object. Times are absolute; the test
runs the server on a clock set to the fixture's "now".

A fixture already written is never rewritten unless --rewrite is given: a shipped fixture is the
record of what that version stored. A new migration needs its fixture: run this script.

  scripts/schema-fixtures.py [--rewrite]      (needs the cryptography package)
"""
import base64
import calendar
import hashlib
import hmac
import json
import os
import sqlite3
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIGRATIONS = os.path.join(ROOT, "Server/Sources/GatehouseStore/Migrations/sqlite")
OUT = os.path.join(ROOT, "Server/Tests/support/schema-fixtures")

SECRET_KEY = "schema-fixtures-secret-key-7d1c0e55a2b94f36"
# The fixtures' moment: 2026-10-15 12:00 UTC; credits count from the month's first day.
NOW = calendar.timegm((2026, 10, 15, 12, 0, 0))
MONTH = calendar.timegm((2026, 10, 1, 0, 0, 0))
DAY = 86_400

# Identity columns the database numbers itself (PostgreSQL refuses a value for them).
GENERATED = {("audit_log", "seq"), ("events", "seq")}


def seed(label, length=32):
    """Deterministic bytes: the fixtures come out the same on every run."""
    return hashlib.sha256(("gatehouse schema fixture " + label).encode()).digest()[:length]


def sha256(text):
    return hashlib.sha256(text.encode()).digest()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def seal(plain, label):
    """SecretSealer's form: AES-256-GCM, nonce || ciphertext || tag."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"gatehouse", info=b"signing-key-encryption-v1").derive(SECRET_KEY.encode())
    nonce = seed("nonce " + label, 12)
    return nonce + AESGCM(key).encrypt(nonce, plain, None)


def uuid(label):
    h = seed("id " + label, 16).hex()
    return f"{h[0:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


# Accounts and what proves them. Password hashes as the server stored them (argon2id at the
# production cost, bcrypt as imported); the plaintexts are in "known".
USERS = {
    "password": uuid("user password"),
    "bcrypt": uuid("user bcrypt"),
    "totp": uuid("user totp"),
    "google": uuid("user google"),
    "apple": uuid("user apple"),
    "anonymous": uuid("user anonymous"),
    "pro": uuid("user pro"),
    "passkey": uuid("user passkey"),
    "firebase": uuid("user firebase"),
}
SESSIONS = {"password": uuid("session password"), "anonymous": uuid("session anonymous"), "client": uuid("session client")}
PASSWORD = "correct horse battery staple"
PASSWORD_HASH = "$argon2id$v=19$m=19456,t=2,p=1$Xaxc6cDvs7D7TLliSnzPoA$TsIdtcxlNcLIkYjqMUcu9yi5l7zaILbp9Stamf6GbqU"
TOTP_PASSWORD = "Ünïcødé pässwörd ✓"
TOTP_PASSWORD_HASH = "$argon2id$v=19$m=19456,t=2,p=1$fpoU4BueezyKNwVp6fRhmQ$AHI0vwrHBQPJvqrLR+zGdy1+9+WPNuJ54SHKYxGG4AI"
BCRYPT_PASSWORD = "bcrypt password b"
BCRYPT_HASH = "$2b$05$6fTsTkd2hwKUoQpaGt9VX.5E5QuvbZGNS808gc4n2bJmAJ4tczJ0i"
REFRESH_TOKEN = b64url(seed("refresh password"))
ANONYMOUS_REFRESH_TOKEN = b64url(seed("refresh anonymous"))
CLIENT_ID = "fixture-client"
CLIENT_SECRET = b64url(seed("client secret"))
TOTP_SECRET = seed("totp secret", 20)
SIGNING_SCALAR = int.from_bytes(seed("signing key"), "big") % (2**256 - 2**224 - 1) or 1
PRO_PRODUCT = "com.handz.pro.monthly"
PASSKEY_ID = seed("passkey credential id")
PASSKEY_SCALAR = seed("passkey key")  # below the P-256 order (its first byte is not 0xff)
RP_ID = "gatehouse.test"
CHAIN_KEY = seed("refresh chain key")
RECOVERY_CODE = "abcd-efgh-ijkm-npqr"
RESET_TOKEN = "fixture-reset-token"
AUDIT_ID = uuid("audit sign in")
# Firebase's published scrypt test vector (github.com/firebase/scrypt): password "user1password".
FIREBASE_SIGNER_KEY = "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA=="
FIREBASE_SALT_SEPARATOR = "Bw=="
FIREBASE_SALT = "42xEC+ixf3L2lw=="
FIREBASE_HASH = "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="


def signing_key():
    private = ec.derive_private_key(SIGNING_SCALAR, ec.SECP256R1())
    numbers = private.public_key().public_numbers()
    x, y = b64url(numbers.x.to_bytes(32, "big")), b64url(numbers.y.to_bytes(32, "big"))
    kid = b64url(hashlib.sha256(f'{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}'.encode()).digest())
    jwk = json.dumps({"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": kid, "alg": "ES256", "use": "sig"}, separators=(",", ":"))
    return private.private_numbers().private_value.to_bytes(32, "big"), kid, jwk


RAW_KEY, KID, JWK = signing_key()


def insert(db, table, **row):
    columns = ", ".join(row)
    db.execute(f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' for _ in row)})", list(row.values()))


def v1(db):
    created = NOW - 90 * DAY
    for name, email, hash_ in [
        ("password", "password@fixture.test", PASSWORD_HASH),
        ("bcrypt", "bcrypt@fixture.test", BCRYPT_HASH),
        ("totp", "totp@fixture.test", TOTP_PASSWORD_HASH),
        ("google", "google@fixture.test", None),
        ("apple", "apple@privaterelay.appleid.com", None),
        ("pro", "pro@fixture.test", PASSWORD_HASH),
        ("passkey", "passkey@fixture.test", None),
    ]:
        insert(db, "users", id=USERS[name], email=email, email_normalized=email.lower(), email_verified_at=created, is_anonymous=0,
               display_name=name.capitalize(), handle=f"fixture_{name}", onboarding_complete=1, password_hash=hash_,
               password_changed_at=created if hash_ else None, created_at=created, updated_at=created)
    insert(db, "users", id=USERS["anonymous"], is_anonymous=1, display_name="Quiet Otter", created_at=created, updated_at=created)
    insert(db, "identities", id=uuid("identity google"), user_id=USERS["google"], provider="google", subject="fixture-google-subject",
           email="google@fixture.test", is_private_relay=0, created_at=created)
    insert(db, "identities", id=uuid("identity apple"), user_id=USERS["apple"], provider="apple", subject="000123.fixture.apple",
           email="apple@privaterelay.appleid.com", is_private_relay=1, created_at=created)
    insert(db, "signing_keys", kid=KID, algorithm="ES256", private_key=seal(RAW_KEY, "signing key"), encryption="aes-256-gcm",
           public_jwk=JWK, status="active", created_at=NOW - 10 * DAY)


def v2(db):
    started = NOW - DAY
    for name, token in [("password", REFRESH_TOKEN), ("anonymous", ANONYMOUS_REFRESH_TOKEN)]:
        insert(db, "sessions", id=SESSIONS[name], user_id=USERS[name], provider="anonymous" if name == "anonymous" else "password",
               created_at=started, last_active_at=started, user_agent="Handz/1.0 iOS", ip_address="203.0.113.7")
        insert(db, "refresh_tokens", token_hash=sha256(token), session_id=SESSIONS[name], issued_at=started, expires_at=started + 30 * DAY)
    insert(db, "server_secrets", name="refresh_chain_key", value=seal(CHAIN_KEY, "refresh chain key"),
           encryption="aes-256-gcm", created_at=NOW - 90 * DAY)
    insert(db, "throttles", key="login:password@fixture.test", failures=1, updated_at=NOW - 2 * DAY)
    insert(db, "audit_log", id=AUDIT_ID, created_at=started, event="login", outcome="success", user_id=USERS["password"],
           session_id=SESSIONS["password"], ip_address="203.0.113.7", user_agent="Handz/1.0 iOS", details="{}")


def v4(db):
    insert(db, "email_tokens", token_hash=sha256(RESET_TOKEN), purpose="password_reset", user_id=USERS["password"],
           email="password@fixture.test", email_normalized="password@fixture.test", code_attempts=0,
           password_stamp=NOW - 90 * DAY, created_at=NOW - 3600,
           expires_at=NOW + 3600)


def v6(db):
    insert(db, "events", id=uuid("event created"), type="user.created", user_id=USERS["password"],
           data=json.dumps({"user_id": USERS["password"], "provider": "email"}), created_at=NOW - 90 * DAY)


def v8(db):
    # One practice credit spent this month by the free account: two of three left.
    insert(db, "credit_ledger", id=uuid("credit spend"), user_id=USERS["password"], credit="practice", amount=1, action="practice",
           subject="flow-1", idempotency_key="fixture-spend-1", period_start=MONTH, created_at=NOW - 3600)


def v10(db):
    insert(db, "subscriptions", original_transaction_id="2000000000000042", user_id=USERS["pro"], product_id=PRO_PRODUCT,
           environment="Sandbox", status="active", expires_at=NOW + 20 * DAY, will_renew=1, introductory=0, signed_at=NOW - 10 * DAY,
           updated_at=NOW - 10 * DAY)
    insert(db, "app_store_notifications", notification_uuid=uuid("notification"), type="SUBSCRIBED", received_at=NOW - 10 * DAY)


def cose_p256(private):
    """The COSE_Key of a P-256 public key (EC2, ES256), as the authenticator's attestation carries it."""
    numbers = private.public_key().public_numbers()
    return (bytes([0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]) + numbers.x.to_bytes(32, "big")
            + bytes([0x22, 0x58, 0x20]) + numbers.y.to_bytes(32, "big"))


def v13(db):
    # A share link made today by the pro account (handz meters share links per day).
    today = NOW - NOW % DAY
    insert(db, "usage_records", user_id=USERS["pro"], meter="share_links", idempotency_key="fixture-share-1", amount=1,
           period_start=today, created_at=NOW - 3600)
    insert(db, "usage_meters", user_id=USERS["pro"], meter="share_links", period_start=today, used=1)


def v14(db):
    private = ec.derive_private_key(int.from_bytes(PASSKEY_SCALAR, "big"), ec.SECP256R1())
    insert(db, "passkeys", id=uuid("passkey"), user_id=USERS["passkey"], credential_id=PASSKEY_ID, public_key=cose_p256(private),
           sign_count=5, backup_eligible=0, backed_up=0, transports="internal,hybrid", aaguid=bytes(16), name="iPhone",
           created_at=NOW - 40 * DAY, last_used_at=NOW - 2 * DAY)


def v15(db):
    insert(db, "mfa_factors", id=uuid("factor totp"), user_id=USERS["totp"], type="totp", name="Phone", secret=seal(TOTP_SECRET, "totp"),
           encryption="aes-256-gcm", created_at=NOW - 20 * DAY, confirmed_at=NOW - 20 * DAY)
    # Recovery codes are HMAC-SHA256 of the normalized code under a key HKDF derives from the
    # refresh-chain key (MFAService.hash).
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"gatehouse recovery codes").derive(CHAIN_KEY)
    insert(db, "mfa_recovery_codes", user_id=USERS["totp"], code_hash=hmac.new(key, RECOVERY_CODE.replace("-", "").encode(), "sha256").digest(),
           created_at=NOW - 20 * DAY)


def v17(db):
    # An account imported from Firebase (imports came with version 17): Firebase's published
    # scrypt vector, its project's parameters sealed in server_secrets under their key id
    # (FirebaseScrypt, FirebaseHashKeys).
    signer, separator = base64.b64decode(FIREBASE_SIGNER_KEY), base64.b64decode(FIREBASE_SALT_SEPARATOR)
    key_id = hashlib.sha256(b"firebase-scrypt-v1" + bytes([8, 14, len(separator)]) + separator + signer).digest()[:8].hex()
    parameters = json.dumps({"signerKey": FIREBASE_SIGNER_KEY, "saltSeparator": FIREBASE_SALT_SEPARATOR, "rounds": 8, "memoryCost": 14})
    insert(db, "server_secrets", name=f"firebase-scrypt:{key_id}", value=seal(parameters.encode(), "firebase"), encryption="aes-256-gcm",
           created_at=NOW - 60 * DAY)
    created = NOW - 60 * DAY
    insert(db, "users", id=USERS["firebase"], email="firebase@fixture.test", email_normalized="firebase@fixture.test",
           email_verified_at=created, is_anonymous=0, onboarding_complete=1,
           password_hash=f"$firebase-scrypt${key_id}${FIREBASE_SALT}${FIREBASE_HASH}", password_changed_at=created, created_at=created,
           updated_at=created)


def v22(db):
    db.execute("UPDATE users SET phone = ?, phone_verified_at = ? WHERE id = ?", ["+447700900123", NOW - 30 * DAY, USERS["google"]])


def v23(db):
    v23_stripe(db)
    insert(db, "plan_grants", id=uuid("grant"), user_id=USERS["bcrypt"], plan="pro", starts_at=NOW - DAY, ends_at=NOW + 60 * DAY,
           reason="Beta tester", created_by="operator")


def v23_stripe(db):
    insert(db, "stripe_customers", user_id=USERS["pro"], customer_id="cus_FixtureCustomer", created_at=NOW - 30 * DAY)
    insert(db, "stripe_subscriptions", subscription_id="sub_FixtureSubscription", customer_id="cus_FixtureCustomer", user_id=USERS["pro"],
           price_id="price_fixture_monthly", status="canceled", current_period_end=NOW - 5 * DAY, cancel_at_period_end=0,
           read_at=NOW - 5 * DAY, updated_at=NOW - 5 * DAY)
    insert(db, "stripe_events", event_id="evt_FixtureEvent", type="customer.subscription.deleted", outcome="applied", received_at=NOW - 5 * DAY)


def v24(db):
    insert(db, "oauth_clients", client_id=CLIENT_ID, name="Fixture Partner", secret_hash=sha256(CLIENT_SECRET), public=0, first_party=0,
           redirect_uris=json.dumps(["https://partner.fixture.test/callback"]), post_logout_redirect_uris="[]",
           scopes=json.dumps(["openid", "email", "api:read"]), audience="https://api.fixture.test", rate_limit_per_minute=60,
           created_at=NOW - 5 * DAY)
    insert(db, "oauth_consents", user_id=USERS["password"], client_id=CLIENT_ID, scope="openid email", granted_at=NOW - 5 * DAY)


def v30(db):
    insert(db, "google_play_purchases", purchase_token="fixture-play-token", user_id=USERS["apple"], product_id="pro_monthly",
           state="SUBSCRIPTION_STATE_EXPIRED", expires_at=(NOW - DAY) * 1000, acknowledged=1, test_purchase=1, read_at=(NOW - DAY) * 1000,
           updated_at=NOW - DAY)


ADDITIONS = {1: v1, 2: v2, 4: v4, 6: v6, 8: v8, 10: v10, 13: v13, 14: v14, 15: v15, 17: v17, 22: v22, 23: v23, 24: v24, 30: v30}

KNOWN = {
    "secret_key": SECRET_KEY,
    "users": USERS,
    "password": PASSWORD,
    "totp_password": TOTP_PASSWORD,
    "bcrypt_password": BCRYPT_PASSWORD,
    "firebase_password": "user1password",
    "refresh_token": REFRESH_TOKEN,
    "anonymous_refresh_token": ANONYMOUS_REFRESH_TOKEN,
    "session": SESSIONS["password"],
    "signing_key": {"kid": KID, "d": b64url(RAW_KEY)},
    "totp_secret": base64.b32encode(TOTP_SECRET).decode().rstrip("="),
    "client_id": CLIENT_ID,
    "client_secret": CLIENT_SECRET,
    "refresh_chain_key": CHAIN_KEY.hex(),
    "recovery_code": RECOVERY_CODE,
    "reset_token": RESET_TOKEN,
    "event_id": uuid("event created"),
    "audit_id": AUDIT_ID,
    "passkey": {"rp_id": RP_ID, "credential_id": b64url(PASSKEY_ID), "private_key": b64url(PASSKEY_SCALAR),
                "user_handle": b64url(USERS["passkey"].encode()), "sign_count": "5"},
}


def tables_in_order(db):
    """Tables parents first (foreign keys), then by name."""
    names = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))
    parents = {n: {r[2] for r in db.execute(f"PRAGMA foreign_key_list({n})")} - {n} for n in names}
    ordered = []
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and parents[n] <= set(ordered)]
        ordered.extend(ready)
    return ordered


def value(v):
    if isinstance(v, bytes):
        return {"hex": v.hex()}
    return v


def dump(db, version):
    tables = []
    for name in tables_in_order(db):
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({name})") if (name, r[1]) not in GENERATED]
        rows = db.execute(f"SELECT {', '.join(columns)} FROM {name} ORDER BY {', '.join(columns)}").fetchall()
        if rows:
            tables.append({"table": name, "rows": [{c: value(v) for c, v in zip(columns, row) if v is not None} for row in rows]})
    return {"version": version, "now": NOW, "known": KNOWN, "tables": tables}


def main():
    rewrite = "--rewrite" in sys.argv[1:]
    os.makedirs(OUT, exist_ok=True)
    files = sorted(f for f in os.listdir(MIGRATIONS) if f.endswith(".sql"))
    db = sqlite3.connect(":memory:")
    db.execute("PRAGMA foreign_keys = ON")
    written = 0
    for name in files:
        version = int(name[:4])
        with open(os.path.join(MIGRATIONS, name), encoding="utf-8") as f:
            db.executescript(f.read())
        if version in ADDITIONS:
            ADDITIONS[version](db)
        db.commit()
        path = os.path.join(OUT, f"{version:04d}.json")
        if os.path.exists(path) and not rewrite:
            continue
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dump(db, version), f, indent=1, ensure_ascii=False, sort_keys=False)
            f.write("\n")
        written += 1
    print(f"{written} fixture(s) written to {os.path.relpath(OUT, ROOT)} ({len(files)} migrations)")


if __name__ == "__main__":
    main()
