#!/usr/bin/env python3
"""Checks webauthn_authenticator.py against py_webauthn acting as the relying party.

A developer's tool, not part of CI. Run it with the Python of .build-venv (scripts/lib/common.sh
installs soft-webauthn, webauthn, fido2, cbor2 and cryptography there):

  .build-venv/bin/python Server/Tests/support/webauthn_selftest.py [-v]

It starts the authenticator as a subprocess and speaks its JSON-lines protocol, as the Swift
tests do. The relying party is py_webauthn (generate_registration_options,
verify_registration_response, generate_authentication_options, verify_authentication_response):
normal registrations and sign-ins must pass; each tamper that py_webauthn checks must be refused,
for that reason; each one it does not check must still pass, which shows that the tamper changed
that one thing and left everything else valid. It also checks that the authenticator's bytes are
the ones soft-webauthn and fido2 make for the same credential, that bad commands get an error
without stopping the process, and that the process exits at end of input.

Prints one line per check (-v: with details) and ends with "N passed, N failed"; exits 1 if any
check failed.
"""

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from fido2 import cbor as fido2_cbor
from fido2.cose import ES256 as Fido2ES256
from soft_webauthn import SoftWebauthnDevice
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.structs import (
    CredentialDeviceType,
    PublicKeyCredentialDescriptor,
    UserVerificationRequirement,
)

HERE = os.path.dirname(os.path.abspath(__file__))
AUTHENTICATOR = os.path.join(HERE, "webauthn_authenticator.py")
RP_ID = "example.com"
ORIGIN = "https://example.com"
OVERALL_TIMEOUT = 120

sys.path.insert(0, HERE)
import webauthn_authenticator as wa  # noqa: E402  (the builders, for the byte-for-byte checks)


class Results:
    def __init__(self, verbose):
        self.verbose = verbose
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        line = f"{'PASS' if ok else 'FAIL'} {name}"
        if detail and (self.verbose or not ok):
            line += f"  [{detail}]"
        print(line, flush=True)
        return ok


class Process:
    """The authenticator under test, spoken to one JSON line at a time."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, AUTHENTICATOR], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def send_raw(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"authenticator stopped: {self.proc.stderr.read()}")
        return json.loads(answer)

    def call(self, **command):
        return self.send_raw(json.dumps(command))

    def close(self):
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = None
        return code, self.proc.stderr.read()


# ---------------------------------------------------------------------------------------------
# The relying party (py_webauthn)


def registration_options(user_id, exclude=()):
    options = generate_registration_options(
        rp_id=RP_ID, rp_name="Example", user_id=user_id, user_name="alice",
        exclude_credentials=[PublicKeyCredentialDescriptor(id=i) for i in exclude],
        authenticator_selection=None)
    return options, json.loads(options_to_json(options))


def authentication_options(allow=()):
    options = generate_authentication_options(
        rp_id=RP_ID, allow_credentials=[PublicKeyCredentialDescriptor(id=i) for i in allow],
        user_verification=UserVerificationRequirement.REQUIRED)
    return options, json.loads(options_to_json(options))


def error_text(error):
    parts = []
    while error is not None:
        parts.append(str(error) or type(error).__name__)
        error = error.__cause__
    return ": ".join(parts)


def rp_verify_registration(credential, options, **kwargs):
    kwargs.setdefault("require_user_verification", True)
    try:
        return True, verify_registration_response(
            credential=credential, expected_challenge=options.challenge, expected_rp_id=RP_ID,
            expected_origin=ORIGIN, **kwargs)
    except Exception as error:
        return False, error_text(error)


def rp_verify_authentication(credential, options, public_key, sign_count, **kwargs):
    kwargs.setdefault("require_user_verification", True)
    try:
        return True, verify_authentication_response(
            credential=credential, expected_challenge=options.challenge, expected_rp_id=RP_ID,
            expected_origin=ORIGIN, credential_public_key=public_key,
            credential_current_sign_count=sign_count, **kwargs)
    except Exception as error:
        return False, error_text(error)


def for_reason(error, reason):
    """Whether a refusal names the expected reason: a substring, or a tuple of alternatives (the
    wording differs between py_webauthn versions)."""
    if reason is None:
        return True
    alternatives = reason if isinstance(reason, tuple) else (reason,)
    return any(text.lower() in error.lower() for text in alternatives)


def client_data(credential):
    return json.loads(base64url_to_bytes(credential["response"]["clientDataJSON"]))


def registration_auth_data(credential):
    return cbor2.loads(base64url_to_bytes(credential["response"]["attestationObject"]))["authData"]


def flags_of(auth_data):
    return auth_data[32]


def count_of(auth_data):
    return int.from_bytes(auth_data[33:37], "big")


# ---------------------------------------------------------------------------------------------
# The checks


def check_same_bytes_as_soft_webauthn(results):
    """Our builders, given soft-webauthn's flags, make exactly soft-webauthn's bytes."""
    device = SoftWebauthnDevice()
    made = device.create({"publicKey": {
        "rp": {"id": RP_ID, "name": "Example"}, "user": {"id": b"alice", "name": "alice"},
        "challenge": os.urandom(32), "pubKeyCredParams": [{"type": "public-key", "alg": -7}]}},
        ORIGIN)
    their_object = made["response"]["attestationObject"]
    their_auth_data = cbor2.loads(their_object)["authData"]
    cose = wa.cose_key(device.private_key.public_key(), wa.ES256)
    results.check("COSE key encoder = fido2's ES256 encoding",
                  cose == fido2_cbor.encode(Fido2ES256.from_cryptography_key(device.private_key.public_key())))
    ours = wa.authenticator_data(RP_ID, wa.FLAG_UP | wa.FLAG_AT, 0,
                                 wa.attested_credential_data(device.aaguid, device.credential_id, cose))
    results.check("authData builder = soft-webauthn create() authData (flags UP|AT)",
                  ours == their_auth_data)
    results.check("attestationObject encoder = soft-webauthn create() attestationObject",
                  wa.attestation_object("none", {}, their_auth_data) == their_object)
    assertion = device.get({"publicKey": {"rpId": RP_ID, "challenge": os.urandom(32)}}, ORIGIN)
    their_auth_data = assertion["response"]["authenticatorData"]
    results.check("authData builder = soft-webauthn get() authData (flags UP, count 1)",
                  wa.authenticator_data(RP_ID, wa.FLAG_UP, 1) == their_auth_data)
    signed = their_auth_data + hashlib.sha256(assertion["response"]["clientDataJSON"]).digest()
    device.private_key.public_key().verify(assertion["response"]["signature"], signed,
                                           ec.ECDSA(hashes.SHA256()))


def register(process, results, device, name, user_id=b"alice-user-id", synced=False, tamper=None,
             verify=None, expect=True, reason=None, extra=None):
    """create on `device`, verify with py_webauthn, check the outcome; returns the credential and
    the verification (or None)."""
    options, options_json = registration_options(user_id)
    command = {"cmd": "create", "device": device, "options": options_json, "origin": ORIGIN}
    if synced:
        command["synced"] = True
    if tamper is not None:
        command["tamper"] = tamper
    answer = process.call(**command)
    if "credential" not in answer:
        results.check(name, False, f"no credential: {answer}")
        return None, None
    credential = answer["credential"]
    ok, verified = rp_verify_registration(credential, options, **(verify or {}))
    return judge(results, name, credential, ok, verified, expect, reason, extra)


def sign_in(process, results, device, name, public_key, stored_count, allow=(), tamper=None,
            verify=None, expect=True, reason=None, extra=None):
    options, options_json = authentication_options(allow)
    command = {"cmd": "get", "device": device, "options": options_json, "origin": ORIGIN}
    if tamper is not None:
        command["tamper"] = tamper
    answer = process.call(**command)
    if "credential" not in answer:
        results.check(name, False, f"no credential: {answer}")
        return None, None
    credential = answer["credential"]
    ok, verified = rp_verify_authentication(credential, options, public_key, stored_count,
                                            **(verify or {}))
    return judge(results, name, credential, ok, verified, expect, reason, extra)


def judge(results, name, credential, ok, verified, expect, reason, extra):
    """Records whether py_webauthn's verdict is the expected one (a refusal for `reason`), and
    then `extra`'s check; returns the credential and the verification (or None)."""
    outcome = "accepted" if ok else f"rejected: {verified}"
    good = ok == expect and (ok or for_reason(verified, reason))
    if good and extra is not None:
        extra_ok, extra_detail = extra(credential, verified if ok else None)
        good = extra_ok
        outcome += f"; {extra_detail}"
    results.check(name, good, outcome)
    return credential, (verified if ok else None)


def check_normal_path(process, results):
    credential, verified = register(
        process, results, "d1", "create: default passkey verifies (UV required)",
        extra=lambda c, v: (
            v.sign_count == 0 and v.user_verified and not v.credential_backed_up
            and v.credential_device_type == CredentialDeviceType.SINGLE_DEVICE and v.fmt == "none"
            and flags_of(registration_auth_data(c)) == 0x45
            and c["response"]["transports"] == ["internal", "hybrid"]
            and c["authenticatorAttachment"] == "platform" and c["clientExtensionResults"] == {}
            and c["id"] == c["rawId"] and "=" not in c["id"],
            "count 0, flags UP|UV|AT, BE=BS=0, fmt none"))
    if verified is None:
        return None
    public_key, credential_id = verified.credential_public_key, verified.credential_id

    described = process.call(cmd="credential", device="d1")
    results.check("credential: matches the verified registration",
                  described.get("credential_id") == bytes_to_base64url(credential_id)
                  and base64url_to_bytes(described.get("public_key_cose", "")) == public_key
                  and described.get("sign_count") == 0
                  and described.get("user_handle") == bytes_to_base64url(b"alice-user-id"),
                  json.dumps(described))

    count = 0
    for attempt in (1, 2):
        _, result = sign_in(process, results, "d1", f"get #{attempt} (allowCredentials) verifies",
                            public_key, count, allow=[credential_id],
                            extra=lambda c, v, n=attempt: (
                                v.new_sign_count == n and v.user_verified,
                                f"count {v.new_sign_count}"))
        count = result.new_sign_count if result else count
    _, result = sign_in(process, results, "d1", "get (discoverable) verifies, userHandle = user id",
                        public_key, count,
                        extra=lambda c, v: (
                            c["response"].get("userHandle") == bytes_to_base64url(b"alice-user-id")
                            and v.new_sign_count == count + 1
                            and flags_of(base64url_to_bytes(c["response"]["authenticatorData"])) == 0x05,
                            f"count {v.new_sign_count}, flags UP|UV"))
    count = result.new_sign_count if result else count
    if result:
        described = process.call(cmd="credential", device="d1")
        results.check("credential: sign_count follows the assertions",
                      described.get("sign_count") == count, json.dumps(described))
    return {"public_key": public_key, "id": credential_id, "count": count}


def check_synced(process, results):
    _, verified = register(
        process, results, "synced", "create synced: BE=BS=1, count 0", synced=True,
        extra=lambda c, v: (v.credential_backed_up and v.sign_count == 0
                            and v.credential_device_type == CredentialDeviceType.MULTI_DEVICE
                            and flags_of(registration_auth_data(c)) == 0x5D,
                            "multi_device, backed up"))
    if verified is None:
        return
    for attempt in (1, 2):
        sign_in(process, results, "synced", f"get synced #{attempt}: count stays 0, BE=BS=1",
                verified.credential_public_key, 0,
                extra=lambda c, v: (v.new_sign_count == 0 and v.credential_backed_up
                                    and flags_of(base64url_to_bytes(c["response"]["authenticatorData"])) == 0x1D,
                                    "count 0"))
    sign_in(process, results, "synced", "get synced tamper bs=false: BE=1 BS=0 is valid",
            verified.credential_public_key, 0, tamper={"bs": False},
            extra=lambda c, v: (not v.credential_backed_up, "not backed up"))


def check_create_tampers(process, results):
    cases = [
        ("up=false", {"up": False}, {}, False, "user presence"),
        ("uv=false, UV required", {"uv": False}, {}, False, "user verification"),
        ("uv=false, UV not required", {"uv": False}, {"require_user_verification": False}, True, None),
        ("be=false bs=true", {"be": False, "bs": True}, {}, False, "backed up"),
        ("bs=true alone (BE stays 0)", {"bs": True}, {}, False, "backed up"),
        ("be=true (not checked against anything)", {"be": True}, {}, True, None),
        ("rp_id=evil.example", {"rp_id": "evil.example"}, {}, False, "rp id hash"),
        ("type=webauthn.get", {"type": "webauthn.get"}, {}, False, "client data type"),
        ("challenge", {"challenge": bytes_to_base64url(b"another challenge")}, {}, False, "challenge"),
        ("cross_origin (py_webauthn does not check)", {"cross_origin": True}, {}, True, None),
        ("attestation=packed (self, valid)", {"attestation": "packed"}, {}, True, None),
        ("attestation=packed-rs256", {"attestation": "packed-rs256"}, {}, False, "alg"),
        ("attestation=fido-u2f (valid, self-signed cert)", {"attestation": "fido-u2f"}, {}, True, None),
        ("cose_alg=-8 (EdDSA allowed by default)", {"cose_alg": -8}, {}, True, None),
        ("cose_alg=-8, only ES256 supported", {"cose_alg": -8}, {"supported_pub_key_algs": [-7]},
         False, "unsupported credential public key alg"),
        ("cose_alg=-257, only ES256 supported", {"cose_alg": -257}, {"supported_pub_key_algs": [-7]},
         False, "unsupported credential public key alg"),
        ("cose_alg=-35 (not in py_webauthn's list)", {"cose_alg": -35}, {}, False,
         "unsupported credential public key alg"),
        ("cbor=truncated", {"cbor": "truncated"}, {}, False, "cbor"),
        ("cbor=indefinite (cbor2 accepts it)", {"cbor": "indefinite"}, {}, True, None),
        ("cbor=deep", {"cbor": "deep"}, {}, False, ("not a dict", "list indices")),
        ("cbor=tag", {"cbor": "tag"}, {}, False, "CBORTag"),
        ("cbor=float (an extra entry py_webauthn ignores)", {"cbor": "float"}, {}, True, None),
        ("attestation=packed + cbor=indefinite", {"attestation": "packed", "cbor": "indefinite"}, {},
         True, None),
    ]
    visible = {
        "cross_origin": lambda c, v: (client_data(c)["crossOrigin"] is True, "crossOrigin true"),
        "attestation": lambda c, v: (v is None or v.fmt in ("packed", "fido-u2f"), f"fmt {v and v.fmt}"),
        "cbor": lambda c, v: (True, f"first byte {base64url_to_bytes(c['response']['attestationObject'])[0]:#04x}"),
        "be": lambda c, v: (v.credential_device_type == CredentialDeviceType.MULTI_DEVICE
                            and not v.credential_backed_up, "multi_device, not backed up"),
        "uv": lambda c, v: (not v.user_verified, "user not verified"),
    }
    for label, tamper, verify, expect, reason in cases:
        extra = None
        if expect:
            extra = next((visible[key] for key in tamper if key in visible), None)
        register(process, results, "tampered", f"create tamper {label}: "
                 f"{'accepted' if expect else 'REJECTED'}", tamper=tamper, verify=verify,
                 expect=expect, reason=reason, extra=extra)

    object_bytes = {}
    for mode in ("indefinite", "deep", "tag", "float", "truncated"):
        answer = process.call(cmd="create", device="cbor-bytes", origin=ORIGIN,
                              options=registration_options(b"bob")[1], tamper={"cbor": mode})
        object_bytes[mode] = base64url_to_bytes(answer["credential"]["response"]["attestationObject"])
    results.check("cbor=indefinite starts 0xbf and ends 0xff",
                  object_bytes["indefinite"][0] == 0xBF and object_bytes["indefinite"][-1] == 0xFF)
    deep = object_bytes["deep"]
    results.check("cbor=deep is 40 nested arrays around the map",
                  deep[:40] == b"\x81" * 40 and deep[40] == 0xA3)
    results.check("cbor=tag wraps authData in tag 21",
                  isinstance(cbor2.loads(object_bytes["tag"])["authData"], cbor2.CBORTag)
                  and cbor2.loads(object_bytes["tag"])["authData"].tag == 21)
    results.check("cbor=float adds a float entry", cbor2.loads(object_bytes["float"]).get("float") == 1.5)
    try:
        cbor2.loads(object_bytes["truncated"])
        truncated_fails = False
    except Exception:
        truncated_fails = True
    results.check("cbor=truncated does not decode", truncated_fails)

    # A credential made with another key kind signs later assertions with that key.
    for alg in (-8, -257):
        _, verified = register(process, results, f"alg{alg}", f"create cose_alg={alg} for sign-in",
                               tamper={"cose_alg": alg})
        if verified:
            sign_in(process, results, f"alg{alg}", f"get with the cose_alg={alg} key verifies",
                    verified.credential_public_key, 0)


def check_get_tampers(process, results, normal):
    public_key, credential_id = normal["public_key"], normal["id"]
    state = {"count": normal["count"]}

    def run(label, tamper, expect, reason=None, verify=None, extra=None):
        _, verified = sign_in(process, results, "d1", f"get tamper {label}: "
                              f"{'accepted' if expect else 'REJECTED'}", public_key, state["count"],
                              allow=[credential_id], tamper=tamper, verify=verify, expect=expect,
                              reason=reason, extra=extra)
        return verified

    def counted(verified):
        if verified:
            state["count"] = verified.new_sign_count

    run("up=false", {"up": False}, False, "user was not present")
    run("uv=false, UV required", {"uv": False}, False, "user verification")
    counted(run("uv=false, UV not required", {"uv": False}, True,
                verify={"require_user_verification": False},
                extra=lambda c, v: (not v.user_verified, "user not verified")))
    run("be=false bs=true", {"be": False, "bs": True}, False, "backed up")
    counted(run("be=true (not compared with registration)", {"be": True}, True))
    run("rp_id=evil.example", {"rp_id": "evil.example"}, False, "rp id hash")
    run("type=webauthn.create", {"type": "webauthn.create"}, False, "client data type")
    run("challenge", {"challenge": bytes_to_base64url(b"another challenge")}, False, "challenge")
    counted(run("cross_origin (py_webauthn does not check)", {"cross_origin": True}, True,
                extra=lambda c, v: (client_data(c)["crossOrigin"] is True, "crossOrigin true")))
    run("sign_count = stored (replay)", {"sign_count": state["count"]}, False, "sign count")
    run("sign_count = 0 after use", {"sign_count": 0}, False, "sign count")
    jump = state["count"] + 10
    counted(run(f"sign_count={jump}", {"sign_count": jump}, True,
                extra=lambda c, v: (v.new_sign_count == jump, f"count {v.new_sign_count}")))
    counted(run("next get continues from the tampered counter", None, True,
                extra=lambda c, v: (v.new_sign_count == jump + 1, f"count {v.new_sign_count}")))

    def der_still_parses(credential, verified):
        signature = base64url_to_bytes(credential["response"]["signature"])
        try:
            decode_dss_signature(signature)
            return True, "signature is still DER"
        except ValueError:
            return False, "signature is no longer DER"
    run("signature=flip", {"signature": "flip"}, False, "could not verify authentication signature")
    answer = process.call(cmd="get", device="d1", origin=ORIGIN, tamper={"signature": "flip"},
                          options=authentication_options([credential_id])[1])
    state["count"] += 1  # that get was counted by the authenticator
    ok, detail = der_still_parses(answer["credential"], None)
    results.check("signature=flip keeps the DER parseable", ok, detail)
    unknown = os.urandom(32)
    counted(run("credential_id=unknown (py_webauthn does not look ids up)",
                {"credential_id": bytes_to_base64url(unknown)}, True,
                extra=lambda c, v: (c["id"] == c["rawId"] == bytes_to_base64url(unknown)
                                    and unknown != credential_id,
                                    "reported the unknown id: a relying party finds no such credential")))
    counted(run("user_handle (py_webauthn does not check it)",
                {"user_handle": bytes_to_base64url(b"mallory")}, True,
                extra=lambda c, v: (c["response"]["userHandle"] == bytes_to_base64url(b"mallory"),
                                    "reported userHandle mallory")))
    counted(run("user_handle=null leaves it out", {"user_handle": None}, True,
                extra=lambda c, v: ("userHandle" not in c["response"], "no userHandle")))
    return state["count"]


def check_selection_and_errors(process, results, normal):
    # excludeCredentials
    options, options_json = registration_options(b"alice-user-id", exclude=[normal["id"]])
    answer = process.call(cmd="create", device="d1", options=options_json, origin=ORIGIN)
    results.check("create refuses an excluded credential it holds", "error" in answer, json.dumps(answer))
    answer = process.call(cmd="create", device="other", options=options_json, origin=ORIGIN)
    results.check("create on another device ignores that exclusion", "credential" in answer)
    # allowCredentials listing nothing this device holds
    answer = process.call(cmd="get", device="d1", options=authentication_options([os.urandom(32)])[1],
                          origin=ORIGIN)
    results.check("get refuses when allowCredentials lists none of its credentials", "error" in answer,
                  json.dumps(answer))
    # Discoverable sign-in picks the newest credential for the rp id.
    first = process.call(cmd="create", device="multi", options=registration_options(b"u1")[1],
                         origin=ORIGIN)["credential"]
    second = process.call(cmd="create", device="multi", options=registration_options(b"u2")[1],
                          origin=ORIGIN)["credential"]
    answer = process.call(cmd="get", device="multi", options=authentication_options()[1], origin=ORIGIN)
    results.check("discoverable get uses the newest credential",
                  answer.get("credential", {}).get("id") == second["id"])
    answer = process.call(cmd="get", device="multi", options=authentication_options(
        [base64url_to_bytes(first["id"])])[1], origin=ORIGIN)
    results.check("get with allowCredentials uses the listed credential",
                  answer.get("credential", {}).get("id") == first["id"])
    other_rp = dict(authentication_options()[1], rpId="other.example")
    answer = process.call(cmd="get", device="multi", options=other_rp, origin="https://other.example")
    results.check("get refuses an rp id it holds no credential for", "error" in answer)
    no_es256 = dict(registration_options(b"x")[1], pubKeyCredParams=[{"type": "public-key", "alg": -257}])
    answer = process.call(cmd="create", device="d9", options=no_es256, origin=ORIGIN)
    results.check("create refuses pubKeyCredParams without ES256", "error" in answer)

    bad = [
        ("not JSON", "this is not json"),
        ("not an object", "[1, 2]"),
        ("unknown cmd", json.dumps({"cmd": "dance"})),
        ("unknown device", json.dumps({"cmd": "credential", "device": "nobody"})),
        ("missing options", json.dumps({"cmd": "create", "device": "d1", "origin": ORIGIN})),
        ("unknown tamper key", json.dumps({"cmd": "get", "device": "d1", "origin": ORIGIN,
                                           "options": authentication_options()[1],
                                           "tamper": {"flip": True}})),
        ("cbor tamper on get", json.dumps({"cmd": "get", "device": "d1", "origin": ORIGIN,
                                           "options": authentication_options()[1],
                                           "tamper": {"cbor": "deep"}})),
        ("create-only tamper on get", json.dumps({"cmd": "get", "device": "d1", "origin": ORIGIN,
                                                  "options": authentication_options()[1],
                                                  "tamper": {"attestation": "packed"}})),
        ("bad tamper value", json.dumps({"cmd": "create", "device": "d1", "origin": ORIGIN,
                                         "options": registration_options(b"x")[1],
                                         "tamper": {"cbor": "spicy"}})),
        ("bad base64url", json.dumps({"cmd": "get", "device": "d1", "origin": ORIGIN,
                                      "options": {"challenge": "not base64url!"}})),
        ("unknown command key", json.dumps({"cmd": "credential", "device": "d1", "extra": 1})),
        ("verify without arguments", json.dumps({"cmd": "verify_registration"})),
    ]
    for label, line in bad:
        answer = process.send_raw(line)
        results.check(f"bad command ({label}) -> error", set(answer) == {"error"}, answer.get("error", answer))
    alive = process.call(cmd="credential", device="d1")
    results.check("still answering after the bad commands", "credential_id" in alive)


def check_verify_commands(process, results):
    """verify_registration / verify_authentication inside the process agree with py_webauthn."""
    options, options_json = registration_options(b"carol")
    credential = process.call(cmd="create", device="v", options=options_json, origin=ORIGIN)["credential"]
    common = {"expected_challenge": bytes_to_base64url(options.challenge), "expected_origin": ORIGIN,
              "expected_rp_id": RP_ID, "require_user_verification": True}
    answer = process.call(cmd="verify_registration", credential=credential, **common)
    results.check("verify_registration: ok for a good registration",
                  answer.get("ok") is True and answer.get("sign_count") == 0
                  and answer.get("credential_id") == credential["id"] and answer.get("fmt") == "none"
                  and answer.get("user_verified") is True and answer.get("backup_eligible") is False,
                  json.dumps(answer))
    public_key = answer.get("public_key_cose")
    bad = process.call(cmd="create", device="v2", options=options_json, origin=ORIGIN,
                       tamper={"up": False})["credential"]
    answer = process.call(cmd="verify_registration", credential=bad, **common)
    results.check("verify_registration: refuses up=false", answer.get("ok") is False and "error" in answer,
                  json.dumps(answer))
    wrong = dict(common, expected_origin="https://evil.example")
    answer = process.call(cmd="verify_registration", credential=credential, **wrong)
    results.check("verify_registration: refuses a wrong origin", answer.get("ok") is False)
    ed = process.call(cmd="create", device="v3", options=options_json, origin=ORIGIN,
                      tamper={"cose_alg": -8})["credential"]
    answer = process.call(cmd="verify_registration", credential=ed, supported_algs=[-7], **common)
    results.check("verify_registration: supported_algs [-7] refuses an EdDSA key", answer.get("ok") is False,
                  answer.get("error"))

    options, options_json = authentication_options([base64url_to_bytes(credential["id"])])
    assertion = process.call(cmd="get", device="v", options=options_json, origin=ORIGIN)["credential"]
    common = dict(common, expected_challenge=bytes_to_base64url(options.challenge))
    answer = process.call(cmd="verify_authentication", credential=assertion, public_key_cose=public_key,
                          sign_count=0, **common)
    results.check("verify_authentication: ok, new sign count 1",
                  answer.get("ok") is True and answer.get("sign_count") == 1, json.dumps(answer))
    answer = process.call(cmd="verify_authentication", credential=assertion, public_key_cose=public_key,
                          sign_count=1, **common)
    results.check("verify_authentication: refuses a replay (count not above 1)", answer.get("ok") is False,
                  answer.get("error"))
    flipped = process.call(cmd="get", device="v", options=options_json, origin=ORIGIN,
                           tamper={"signature": "flip"})["credential"]
    answer = process.call(cmd="verify_authentication", credential=flipped, public_key_cose=public_key,
                          sign_count=1, **common)
    results.check("verify_authentication: refuses a flipped signature", answer.get("ok") is False,
                  answer.get("error"))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="print details of passing checks too")
    args = parser.parse_args()
    signal.alarm(OVERALL_TIMEOUT)
    results = Results(args.verbose)

    check_same_bytes_as_soft_webauthn(results)
    process = Process()
    try:
        normal = check_normal_path(process, results)
        check_synced(process, results)
        check_create_tampers(process, results)
        if normal:
            check_get_tampers(process, results, normal)
            check_selection_and_errors(process, results, normal)
        check_verify_commands(process, results)
    finally:
        code, stderr = process.close()
    results.check("exits 0 at end of input, nothing on stderr", code == 0 and not stderr.strip(),
                  f"exit {code}, stderr {stderr.strip()[:300]!r}")
    print(f"{results.passed} passed, {results.failed} failed", flush=True)
    return 0 if results.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
