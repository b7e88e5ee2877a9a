#!/usr/bin/env python3
"""A software passkey authenticator (WebAuthn) for Gatehouse's tests, driven over JSON lines.

Used by the Swift tests (through $GATEHOUSE_TEST_PYTHON) and by webauthn_selftest.py. It plays
the browser and a platform authenticator at once: it turns the options a relying party sends into
the credential JSON a browser would post back. It can also misbehave on request ("tamper"), so a
test can check that the server refuses exactly that one thing. Each credential is a
soft-webauthn SoftWebauthnDevice (its P-256 key, credential id, rp id, user handle and signature
counter); the bytes are built here with cbor2 and cryptography, because soft-webauthn's own
create()/get() only ever set UP (and AT), never UV, BE or BS.

  webauthn_authenticator.py            run the authenticator (no arguments)
  webauthn_authenticator.py --help     print this text

Protocol: one JSON object per line on standard input, exactly one JSON object per line in answer
on standard output (flushed each time); blank lines are skipped; the process exits 0 at end of
input. A command that cannot be carried out gets {"error": "why"}; the process never stops on
one. Binary values are base64url without padding; options and credentials are the WebAuthn
Level 3 JSON forms (PublicKeyCredentialCreationOptionsJSON, RegistrationResponseJSON,
PublicKeyCredentialRequestOptionsJSON, AuthenticationResponseJSON).

  {"cmd": "create", "device": "d1", "options": {...}, "origin": "https://example.com",
   "synced": false, "tamper": {...}}
      -> {"credential": RegistrationResponseJSON}
      Makes a new credential on device d1 (created on first use) for options.rp.id (default: the
      origin's host) and options.user.id, with options.challenge in clientDataJSON; attestation
      "none"; flags UP, UV and AT; sign count 0; transports ["internal", "hybrid"];
      authenticatorAttachment "platform". Refused when an excludeCredentials id is held by d1,
      or when pubKeyCredParams is given without ES256 (-7). "synced": true makes a synced
      passkey (like iCloud Keychain): BE and BS set, and its sign count is always 0.

  {"cmd": "get", "device": "d1", "options": {...}, "origin": "...", "tamper": {...}}
      -> {"credential": AuthenticationResponseJSON}
      Signs in with the newest credential of d1 for options.rpId (default: the origin's host)
      that allowCredentials lists, or, with no allowCredentials (discoverable), the newest one
      for that rp id. Flags UP and UV (plus BE and BS if synced). The counter goes up by one
      first (a synced credential stays at 0). The signature is over
      authenticatorData || SHA-256(clientDataJSON), ECDSA P-256 SHA-256 in DER for ES256 keys.

  {"cmd": "credential", "device": "d1"}
      -> {"credential_id", "public_key_cose", "sign_count", "user_handle", "rp_id", "synced"}
      The newest credential of d1.

  {"cmd": "import", "device": "d1", "rp_id": "...", "user_handle": "...", "credential_id": "...",
   "private_key": "...", "sign_count": n}
      -> {"credential_id"}
      Puts a credential made elsewhere on d1 (as its newest): its id, its P-256 private key (the
      32-byte scalar), the user handle and counter it had. A stored passkey of an earlier
      schema version (SchemaFixtureTests) signs in with it.

  {"cmd": "verify_registration", "credential": RegistrationResponseJSON,
   "expected_challenge": "...", "expected_origin": "...", "expected_rp_id": "...",
   "require_user_verification": false, "supported_algs": [-7, ...]}
      -> {"ok": true, "credential_id", "public_key_cose", "sign_count", "fmt", "user_verified",
          "backup_eligible", "backed_up"}  or  {"ok": false, "error": "why"}
      Checks a registration with py_webauthn as the relying party. expected_origin may be a
      list; supported_algs defaults to py_webauthn's list (which includes EdDSA and RSA).

  {"cmd": "verify_authentication", "credential": AuthenticationResponseJSON,
   "expected_challenge", "expected_origin", "expected_rp_id", "public_key_cose",
   "sign_count", "require_user_verification": false}
      -> {"ok": true, "credential_id", "public_key_cose", "sign_count" (the new one),
          "user_verified", "backup_eligible", "backed_up"}  or  {"ok": false, "error": "why"}

Tamper (every key optional; an unknown key is an error). Each changes one thing and leaves the
rest what a real authenticator would send, signatures included:
  "up": bool, "uv": bool, "be": bool, "bs": bool   set or clear that authenticatorData flag
  "rp_id": "evil.example"       rpIdHash of this instead
  "type": "webauthn.get"        clientDataJSON type
  "challenge": "..."            clientDataJSON challenge (any string)
  "cross_origin": true          clientDataJSON crossOrigin
  get only:
  "sign_count": n               this counter in authenticatorData (and kept as the counter)
  "signature": "flip"           flip the lowest bit of the signature's last byte (DER stays valid)
  "credential_id": "..."        report this id and rawId
  "user_handle": "..." | null   report this userHandle (null: leave it out)
  create only:
  "attestation": "none"         the default: fmt "none", empty attStmt
               | "packed"       packed self attestation {alg, sig} by the credential key
               | "packed-rs256" the same with alg -257 (does not match the key)
               | "fido-u2f"     fido-u2f with a self-signed attestation certificate in x5c
  "cose_alg": -8 | -257 | -35   a credential key of that kind instead (Ed25519, RSA 2048,
                                P-384); it is also used to sign later assertions (-7: P-256)
  "cbor": "truncated"           attestationObject cut in half
        | "indefinite"          top map written with an indefinite-length header (0xbf ... 0xff)
        | "deep"                the map nested in 40 one-element arrays
        | "tag"                 the authData byte string wrapped in tag 21 (a harmless hint tag)
        | "float"               an extra top-level entry "float": 1.5
"""

import argparse
import base64
import binascii
import datetime
import hashlib
import json
import re
import struct
import sys
from urllib.parse import urlsplit

import cbor2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID
from soft_webauthn import SoftWebauthnDevice
from webauthn import verify_authentication_response, verify_registration_response
from webauthn.helpers.structs import CredentialDeviceType

# authenticatorData flag bits (WebAuthn Level 3, 6.1).
FLAG_UP = 0x01
FLAG_UV = 0x04
FLAG_BE = 0x08
FLAG_BS = 0x10
FLAG_AT = 0x40

# COSE algorithms a credential key can have here. ES256 is the normal one.
ES256, EDDSA, ES384, RS256 = -7, -8, -35, -257

TRANSPORTS = ["internal", "hybrid"]
# Tag 21: "expected later conversion to base64url", a hint with no effect on the value.
HARMLESS_TAG = 21
DEEP_NESTING = 40

CREATE_TAMPER = {"up", "uv", "be", "bs", "rp_id", "type", "challenge", "cross_origin",
                 "attestation", "cose_alg", "cbor"}
GET_TAMPER = {"up", "uv", "be", "bs", "rp_id", "type", "challenge", "cross_origin",
              "sign_count", "signature", "credential_id", "user_handle"}
ATTESTATIONS = {"none", "packed", "packed-rs256", "fido-u2f"}
CBOR_CORRUPTIONS = {"truncated", "indefinite", "deep", "tag", "float"}

B64URL = re.compile(r"[A-Za-z0-9_-]*")


class CommandError(Exception):
    """A command that cannot be carried out; answered with {"error": message}."""


# ---------------------------------------------------------------------------------------------
# base64url and arguments


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_b64url(text, what):
    if not isinstance(text, str) or not B64URL.fullmatch(text) or len(text) % 4 == 1:
        raise CommandError(f"{what} is not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise CommandError(f"{what} is not base64url")


def get_field(obj, name, kind, what, required=True, default=None):
    """obj[name], checked to be of `kind` (a type or tuple of types); bools are not ints."""
    if name not in obj or obj[name] is None:
        if required:
            raise CommandError(f"{what}.{name} is missing")
        return default
    value = obj[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise CommandError(f"{what}.{name} must be {names}")
    return value


def check_keys(obj, allowed, what):
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise CommandError(f"unknown {what} key(s): {', '.join(unknown)}")


def origin_host(origin):
    host = urlsplit(origin).hostname
    if not host:
        raise CommandError(f"origin {origin!r} has no host")
    return host


# ---------------------------------------------------------------------------------------------
# Keys, COSE and signatures


def new_private_key(alg):
    if alg == ES256:
        return ec.generate_private_key(ec.SECP256R1())
    if alg == ES384:
        return ec.generate_private_key(ec.SECP384R1())
    if alg == EDDSA:
        return ed25519.Ed25519PrivateKey.generate()
    if alg == RS256:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    raise CommandError(f"unsupported cose_alg {alg}")


def key_alg(private_key):
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        return EDDSA
    if isinstance(private_key, rsa.RSAPrivateKey):
        return RS256
    return ES384 if isinstance(private_key.curve, ec.SECP384R1) else ES256


def cose_key(public_key, alg):
    """The COSE_Key (RFC 9053) of a public key, keys in CTAP2 canonical order."""
    if alg in (ES256, ES384):
        numbers = public_key.public_numbers()
        size, curve = (32, 1) if alg == ES256 else (48, 2)
        return cbor2.dumps({1: 2, 3: alg, -1: curve,
                            -2: numbers.x.to_bytes(size, "big"),
                            -3: numbers.y.to_bytes(size, "big")})
    if alg == EDDSA:
        raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return cbor2.dumps({1: 1, 3: alg, -1: 6, -2: raw})
    if alg == RS256:
        numbers = public_key.public_numbers()
        n = numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")
        e = numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")
        return cbor2.dumps({1: 3, 3: alg, -1: n, -2: e})
    raise CommandError(f"unsupported cose_alg {alg}")


def sign(private_key, data):
    """A WebAuthn signature by the credential key: DER ECDSA, raw Ed25519 or PKCS#1 v1.5."""
    alg = key_alg(private_key)
    if alg == ES256:
        return private_key.sign(data, ec.ECDSA(hashes.SHA256()))
    if alg == ES384:
        return private_key.sign(data, ec.ECDSA(hashes.SHA384()))
    if alg == EDDSA:
        return private_key.sign(data)
    return private_key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def flip_signature(private_key, signature):
    """Flips the lowest bit of the last byte. For DER ECDSA that byte belongs to s and its top bit
    is untouched, so the DER stays well formed and only the value is wrong."""
    flipped = signature[:-1] + bytes([signature[-1] ^ 0x01])
    if isinstance(private_key, ec.EllipticCurvePrivateKey):
        decode_dss_signature(flipped)  # still DER; raises if that ever fails to hold
    return flipped


# ---------------------------------------------------------------------------------------------
# authenticatorData and clientDataJSON


def flags_byte(up=True, uv=True, be=False, bs=False, at=False):
    return ((FLAG_UP if up else 0) | (FLAG_UV if uv else 0) | (FLAG_BE if be else 0)
            | (FLAG_BS if bs else 0) | (FLAG_AT if at else 0))


def attested_credential_data(aaguid, credential_id, cose_public_key):
    return aaguid + struct.pack(">H", len(credential_id)) + credential_id + cose_public_key


def authenticator_data(rp_id, flags, sign_count, attested=b""):
    """rpIdHash || flags || signCount (big-endian 32 bits) || attestedCredentialData."""
    return hashlib.sha256(rp_id.encode("utf-8")).digest() + bytes([flags]) \
        + struct.pack(">I", sign_count) + attested


def client_data_json(kind, challenge, origin, cross_origin=False):
    """clientDataJSON as Chromium writes it: these four members, in this order, no spaces."""
    return json.dumps({"type": kind, "challenge": challenge, "origin": origin,
                       "crossOrigin": cross_origin}, separators=(",", ":")).encode("utf-8")


def tampered_flags(tamper, up=True, uv=True, be=False, bs=False, at=False):
    return flags_byte(up=tamper.get("up", up), uv=tamper.get("uv", uv), be=tamper.get("be", be),
                      bs=tamper.get("bs", bs), at=at)


# ---------------------------------------------------------------------------------------------
# Attestation


def packed_self_statement(private_key, auth_data, client_data_hash, alg=None):
    """Packed self attestation: no x5c, signed by the credential key itself."""
    return {"alg": key_alg(private_key) if alg is None else alg,
            "sig": sign(private_key, auth_data + client_data_hash)}


def fido_u2f_statement(private_key, auth_data, client_data_hash, credential_id):
    """A well-formed fido-u2f statement: a fresh self-signed P-256 attestation certificate in x5c
    and its signature over 0x00 || rpIdHash || clientDataHash || credentialId || publicKeyU2F."""
    attestation_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Gatehouse test U2F attestation")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(attestation_key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(days=1))
                   .not_valid_after(now + datetime.timedelta(days=365))
                   .sign(attestation_key, hashes.SHA256()))
    public_key = private_key.public_key()
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        public_key_u2f = public_key.public_bytes(serialization.Encoding.X962,
                                                 serialization.PublicFormat.UncompressedPoint)
    else:
        public_key_u2f = b""  # U2F only knows P-256 keys
    signed = b"\x00" + auth_data[:32] + client_data_hash + credential_id + public_key_u2f
    return {"sig": attestation_key.sign(signed, ec.ECDSA(hashes.SHA256())),
            "x5c": [certificate.public_bytes(serialization.Encoding.DER)]}


def attestation_statement(kind, private_key, auth_data, client_data_hash, credential_id):
    if kind == "none":
        return "none", {}
    if kind == "packed":
        return "packed", packed_self_statement(private_key, auth_data, client_data_hash)
    if kind == "packed-rs256":
        return "packed", packed_self_statement(private_key, auth_data, client_data_hash, RS256)
    return "fido-u2f", fido_u2f_statement(private_key, auth_data, client_data_hash, credential_id)


def attestation_object(fmt, att_stmt, auth_data, corruption=None):
    """The attestationObject map {fmt, attStmt, authData} (the order browsers and CTAP2 canonical
    CBOR use), or one of the CBOR corruptions applied to it."""
    entries = [("fmt", fmt), ("attStmt", att_stmt), ("authData", auth_data)]
    if corruption == "tag":
        entries[2] = ("authData", cbor2.CBORTag(HARMLESS_TAG, auth_data))
    if corruption == "float":
        entries.append(("float", 1.5))
    if corruption == "indefinite":
        return b"\xbf" + b"".join(cbor2.dumps(k) + cbor2.dumps(v) for k, v in entries) + b"\xff"
    encoded = cbor2.dumps(dict(entries))
    if corruption == "truncated":
        return encoded[: len(encoded) // 2]
    if corruption == "deep":
        return b"\x81" * DEEP_NESTING + encoded  # [[[...[{...}]...]]]
    return encoded


# ---------------------------------------------------------------------------------------------
# Credentials and devices


class Credential:
    """One passkey: a SoftWebauthnDevice holding its id, key, rp id, user handle and counter."""

    def __init__(self, rp_id, user_handle, synced, alg=ES256):
        self.soft = SoftWebauthnDevice()
        self.soft.cred_init(rp_id, user_handle)  # a random 32-byte id and a P-256 key
        if alg != ES256:
            self.soft.private_key = new_private_key(alg)
        self.synced = synced

    @property
    def id(self):
        return self.soft.credential_id

    @property
    def rp_id(self):
        return self.soft.rp_id

    @property
    def private_key(self):
        return self.soft.private_key

    @property
    def sign_count(self):
        return 0 if self.synced else self.soft.sign_count

    def cose_public_key(self):
        return cose_key(self.private_key.public_key(), key_alg(self.private_key))


class Authenticator:
    def __init__(self):
        self.devices = {}  # name -> [Credential], oldest first

    def credentials(self, device):
        if device not in self.devices or not self.devices[device]:
            raise CommandError(f"device {device!r} holds no credential")
        return self.devices[device]

    def create(self, device, options, origin, tamper, synced):
        check_keys(tamper, CREATE_TAMPER, "create tamper")
        rp = get_field(options, "rp", dict, "options", required=False, default={})
        rp_id = get_field(rp, "id", str, "options.rp", required=False) or origin_host(origin)
        user = get_field(options, "user", dict, "options")
        user_handle = from_b64url(get_field(user, "id", str, "options.user"), "options.user.id")
        challenge = get_field(options, "challenge", str, "options")
        from_b64url(challenge, "options.challenge")
        alg = tamper_value(tamper, "cose_alg", int, {ES256, EDDSA, ES384, RS256}, ES256)
        attestation = tamper_value(tamper, "attestation", str, ATTESTATIONS, "none")
        corruption = tamper_value(tamper, "cbor", str, CBOR_CORRUPTIONS, None)

        params = get_field(options, "pubKeyCredParams", list, "options", required=False, default=[])
        if params and "cose_alg" not in tamper and not any(
                isinstance(p, dict) and p.get("type") == "public-key" and p.get("alg") == ES256
                for p in params):
            raise CommandError("NotSupportedError: pubKeyCredParams does not offer ES256 (-7)")
        held = {c.id for c in self.devices.get(device, [])}
        for index, excluded in enumerate(
                get_field(options, "excludeCredentials", list, "options", required=False, default=[])):
            if not isinstance(excluded, dict):
                raise CommandError(f"options.excludeCredentials[{index}] must be an object")
            excluded_id = from_b64url(get_field(excluded, "id", str, "options.excludeCredentials[]"),
                                      "options.excludeCredentials[].id")
            if excluded_id in held:
                raise CommandError(f"InvalidStateError: device {device!r} already holds excluded "
                                   f"credential {b64url(excluded_id)}")

        credential = Credential(rp_id, user_handle, synced, alg)
        flags = tampered_flags(tamper, be=synced, bs=synced, at=True)
        attested = attested_credential_data(credential.soft.aaguid, credential.id,
                                            credential.cose_public_key())
        auth_data = authenticator_data(tamper.get("rp_id", rp_id), flags, credential.sign_count,
                                       attested)
        client_data = client_data_json(tamper.get("type", "webauthn.create"),
                                       tamper.get("challenge", challenge), origin,
                                       tamper.get("cross_origin", False))
        fmt, att_stmt = attestation_statement(attestation, credential.private_key, auth_data,
                                              hashlib.sha256(client_data).digest(), credential.id)
        self.devices.setdefault(device, []).append(credential)
        return {
            "id": b64url(credential.id),
            "rawId": b64url(credential.id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "attestationObject": b64url(attestation_object(fmt, att_stmt, auth_data, corruption)),
                "transports": list(TRANSPORTS),
            },
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
        }

    def import_credential(self, device, command):
        scalar = from_b64url(get_field(command, "private_key", str, "import"), "import.private_key")
        if len(scalar) != 32:
            raise CommandError("import.private_key must be a 32-byte P-256 scalar")
        credential = Credential(get_field(command, "rp_id", str, "import"),
                                from_b64url(get_field(command, "user_handle", str, "import"), "import.user_handle"),
                                synced=False)
        credential.soft.private_key = ec.derive_private_key(int.from_bytes(scalar, "big"), ec.SECP256R1())
        credential.soft.credential_id = from_b64url(get_field(command, "credential_id", str, "import"), "import.credential_id")
        credential.soft.sign_count = get_field(command, "sign_count", int, "import")
        self.devices.setdefault(device, []).append(credential)
        return {"credential_id": b64url(credential.id)}

    def get(self, device, options, origin, tamper):
        check_keys(tamper, GET_TAMPER, "get tamper")
        challenge = get_field(options, "challenge", str, "options")
        from_b64url(challenge, "options.challenge")
        rp_id = get_field(options, "rpId", str, "options", required=False) or origin_host(origin)
        candidates = [c for c in self.credentials(device) if c.rp_id == rp_id]
        allowed = get_field(options, "allowCredentials", list, "options", required=False, default=[])
        if allowed:
            allowed_ids = set()
            for index, entry in enumerate(allowed):
                if not isinstance(entry, dict):
                    raise CommandError(f"options.allowCredentials[{index}] must be an object")
                allowed_ids.add(from_b64url(get_field(entry, "id", str, "options.allowCredentials[]"),
                                            "options.allowCredentials[].id"))
            candidates = [c for c in candidates if c.id in allowed_ids]
        if not candidates:
            raise CommandError(f"NotAllowedError: device {device!r} has no credential for rp "
                               f"{rp_id!r}" + (" among allowCredentials" if allowed else ""))
        credential = candidates[-1]

        if "sign_count" in tamper:
            count = tamper_value(tamper, "sign_count", int, None, 0)
            if not 0 <= count <= 0xFFFFFFFF:
                raise CommandError("tamper.sign_count must fit in 32 bits")
            credential.soft.sign_count = count
        elif credential.synced:
            count = 0
        else:
            credential.soft.sign_count += 1  # as SoftWebauthnDevice.get does
            count = credential.soft.sign_count
        flip = tamper_value(tamper, "signature", str, {"flip"}, None)
        reported_id = credential.id
        if "credential_id" in tamper:
            reported_id = from_b64url(tamper_value(tamper, "credential_id", str, None, ""),
                                      "tamper.credential_id")
        user_handle = credential.soft.user_handle
        if "user_handle" in tamper:
            value = tamper["user_handle"]
            user_handle = None if value is None else from_b64url(
                tamper_value(tamper, "user_handle", str, None, ""), "tamper.user_handle")

        flags = tampered_flags(tamper, be=credential.synced, bs=credential.synced)
        auth_data = authenticator_data(tamper.get("rp_id", rp_id), flags, count)
        client_data = client_data_json(tamper.get("type", "webauthn.get"),
                                       tamper.get("challenge", challenge), origin,
                                       tamper.get("cross_origin", False))
        signature = sign(credential.private_key, auth_data + hashlib.sha256(client_data).digest())
        if flip:
            signature = flip_signature(credential.private_key, signature)
        response = {
            "clientDataJSON": b64url(client_data),
            "authenticatorData": b64url(auth_data),
            "signature": b64url(signature),
        }
        if user_handle is not None:
            response["userHandle"] = b64url(user_handle)
        return {
            "id": b64url(reported_id),
            "rawId": b64url(reported_id),
            "type": "public-key",
            "response": response,
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
        }

    def describe(self, device):
        credential = self.credentials(device)[-1]
        return {
            "credential_id": b64url(credential.id),
            "public_key_cose": b64url(credential.cose_public_key()),
            "sign_count": credential.sign_count,
            "user_handle": b64url(credential.soft.user_handle),
            "rp_id": credential.rp_id,
            "synced": credential.synced,
        }


def tamper_value(tamper, name, kind, allowed, default):
    value = get_field(tamper, name, kind, "tamper", required=False, default=default)
    if name in tamper and allowed is not None and value not in allowed:
        raise CommandError(f"tamper.{name} must be one of {sorted(allowed, key=str)}")
    return value


def check_tamper_types(tamper):
    for name in ("up", "uv", "be", "bs", "cross_origin"):
        get_field(tamper, name, bool, "tamper", required=False)
    for name in ("rp_id", "type", "challenge"):
        get_field(tamper, name, str, "tamper", required=False)


# ---------------------------------------------------------------------------------------------
# py_webauthn as the relying party


def failure_text(error):
    text = str(error) or type(error).__name__
    if error.__cause__ is not None:
        text += f": {error.__cause__}"
    return text


def backup_state(verified):
    """BE and BS as py_webauthn reports them (BE set: a "multi_device" credential)."""
    return {"backup_eligible": verified.credential_device_type == CredentialDeviceType.MULTI_DEVICE,
            "backed_up": bool(verified.credential_backed_up)}


def expected_args(command):
    origin = command.get("expected_origin")
    if not (isinstance(origin, str) or (isinstance(origin, list) and origin
                                        and all(isinstance(o, str) for o in origin))):
        raise CommandError("expected_origin must be a string or a list of strings")
    credential = command.get("credential")
    if not isinstance(credential, (dict, str)):
        raise CommandError("credential must be a RegistrationResponseJSON/AuthenticationResponseJSON")
    return {
        "credential": credential,
        "expected_challenge": from_b64url(get_field(command, "expected_challenge", str, "command"),
                                          "expected_challenge"),
        "expected_origin": origin,
        "expected_rp_id": get_field(command, "expected_rp_id", str, "command"),
        "require_user_verification": get_field(command, "require_user_verification", bool,
                                               "command", required=False, default=False),
    }


def verify_registration(command):
    args = expected_args(command)
    algs = get_field(command, "supported_algs", list, "command", required=False)
    if algs is not None:
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in algs):
            raise CommandError("supported_algs must be a list of COSE algorithm numbers")
        args["supported_pub_key_algs"] = algs
    try:
        verified = verify_registration_response(**args)
    except Exception as error:  # py_webauthn raises several kinds; all mean "refused"
        return {"ok": False, "error": failure_text(error)}
    return {
        "ok": True,
        "credential_id": b64url(verified.credential_id),
        "public_key_cose": b64url(verified.credential_public_key),
        "sign_count": verified.sign_count,
        "fmt": str(getattr(verified.fmt, "value", verified.fmt)),
        "user_verified": bool(verified.user_verified),
        **backup_state(verified),
    }


def verify_authentication(command):
    args = expected_args(command)
    public_key = from_b64url(get_field(command, "public_key_cose", str, "command"), "public_key_cose")
    sign_count = get_field(command, "sign_count", int, "command")
    try:
        verified = verify_authentication_response(credential_public_key=public_key,
                                                  credential_current_sign_count=sign_count, **args)
    except Exception as error:
        return {"ok": False, "error": failure_text(error)}
    return {
        "ok": True,
        "credential_id": b64url(verified.credential_id),
        "public_key_cose": b64url(public_key),
        "sign_count": verified.new_sign_count,
        "user_verified": bool(verified.user_verified),
        **backup_state(verified),
    }


# ---------------------------------------------------------------------------------------------
# The command loop

COMMAND_KEYS = {
    "create": {"cmd", "device", "options", "origin", "tamper", "synced"},
    "get": {"cmd", "device", "options", "origin", "tamper"},
    "credential": {"cmd", "device"},
    "import": {"cmd", "device", "rp_id", "user_handle", "credential_id", "private_key", "sign_count"},
    "verify_registration": {"cmd", "credential", "expected_challenge", "expected_origin",
                            "expected_rp_id", "require_user_verification", "supported_algs"},
    "verify_authentication": {"cmd", "credential", "expected_challenge", "expected_origin",
                              "expected_rp_id", "public_key_cose", "sign_count",
                              "require_user_verification"},
}


def handle(authenticator, line):
    try:
        command = json.loads(line)
    except ValueError as error:
        raise CommandError(f"not JSON: {error}")
    if not isinstance(command, dict):
        raise CommandError("a command must be a JSON object")
    name = command.get("cmd")
    if name not in COMMAND_KEYS:
        raise CommandError(f"unknown cmd {name!r} (one of {', '.join(COMMAND_KEYS)})")
    check_keys(command, COMMAND_KEYS[name], name)
    if name == "verify_registration":
        return verify_registration(command)
    if name == "verify_authentication":
        return verify_authentication(command)
    device = get_field(command, "device", str, name)
    if name == "credential":
        return authenticator.describe(device)
    if name == "import":
        return authenticator.import_credential(device, command)

    options = get_field(command, "options", dict, name)
    if "publicKey" in options:
        raise CommandError("options must be the JSON options themselves, without a publicKey wrapper")
    origin = get_field(command, "origin", str, name)
    origin_host(origin)
    tamper = get_field(command, "tamper", dict, name, required=False, default={})
    check_tamper_types(tamper)
    if name == "create":
        synced = get_field(command, "synced", bool, name, required=False, default=False)
        return {"credential": authenticator.create(device, options, origin, tamper, synced)}
    if "cbor" in tamper:
        raise CommandError("tamper.cbor applies to create only")
    return {"credential": authenticator.get(device, options, origin, tamper)}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()
    authenticator = Authenticator()
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return 0
        if not line.strip():
            continue
        try:
            answer = handle(authenticator, line.decode("utf-8"))
        except CommandError as error:
            answer = {"error": str(error)}
        except Exception as error:  # a bug or an unforeseen input: answer, never stop
            answer = {"error": f"{type(error).__name__}: {error}"}
        try:
            sys.stdout.write(json.dumps(answer, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            return 0


if __name__ == "__main__":
    sys.exit(main())
