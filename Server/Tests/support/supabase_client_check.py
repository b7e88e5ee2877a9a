"""Supabase's own Python auth client (supabase-auth, or the older gotrue package), unchanged,
against a live Gatehouse's /auth/v1. Every step asserts what the client hands back; the first
failure exits non-zero with its step. Mail is read from the SMTP sink's maildir.

Usage: supabase_client_check.py --url http://127.0.0.1:PORT --anon KEY --service KEY
       --maildir DIR --reset-path /auth/reset-password --magic-path /auth/magic-link
       --app-url https://app.example.com/welcome --library supabase_auth|gotrue
(--app-url is on the server's redirect allowlist.)
"""
import argparse
import base64
import email
import hashlib
import importlib
import mailbox
import re
import secrets
import sys
import time
import uuid

import bcrypt
import httpx
import pyotp


def patient_http(library):
    """The client's HTTP client, waiting up to 60 s (httpx's default is 5): the test suite runs
    many servers at once on two cores, and a slow answer is not a wrong one."""
    try:
        client_class = importlib.import_module(library + ".http_clients").SyncClient
    except ModuleNotFoundError:
        client_class = httpx.Client
    return client_class(timeout=60, follow_redirects=True, http2=True)


def main():
    parser = argparse.ArgumentParser()
    for name in ("url", "anon", "service", "maildir", "reset-path", "magic-path", "app-url", "library"):
        parser.add_argument("--" + name, required=True)
    options = parser.parse_args()
    lib = importlib.import_module(options.library)
    errors = importlib.import_module(options.library + ".errors")
    auth_url = options.url + "/auth/v1"
    tag = uuid.uuid4().hex[:8]
    password = "Correct-Horse-42-battery"

    def client():
        return lib.SyncGoTrueClient(
            url=auth_url, headers={"apikey": options.anon}, auto_refresh_token=False, persist_session=False,
            http_client=patient_http(options.library))

    admin = lib.SyncGoTrueAdminAPI(
        url=auth_url, headers={"apikey": options.service, "Authorization": "Bearer " + options.service},
        http_client=patient_http(options.library))

    def step(name):
        print("ok:", name, flush=True)

    def refused(call, code, status=None):
        try:
            call()
        except errors.AuthApiError as error:
            assert error.code == code, f"expected {code}, got {error.code} ({error.status}: {error.message})"
            assert status is None or error.status == status, f"expected {status}, got {error.status}"
            return error
        raise AssertionError(f"expected {code}, the call went through")

    def seen(address):
        box = mailbox.Maildir(options.maildir, factory=None, create=False)
        return {key for key, m in box.items() if address.lower() in (m["To"] or "").lower()}

    def mail_match(address, before, pattern):
        """The first group of `pattern` in a message to `address` that was not in `before`
        (other mail, such as sign-in notices, may arrive around it)."""
        for _ in range(300):
            box = mailbox.Maildir(options.maildir, factory=None, create=False)
            for key, message in box.items():
                if key in before or address.lower() not in (message["To"] or "").lower():
                    continue
                for part in message.walk():
                    if part.get_content_type() == "text/plain":
                        found = re.search(pattern, part.get_payload(decode=True).decode())
                        if found:
                            return found.group(1)
            time.sleep(0.1)
        raise AssertionError(f"no mail to {address} matching {pattern}")

    # The project key: none, or a wrong one, is refused in GoTrue's shapes.
    bare = httpx.get(auth_url + "/settings")
    assert bare.status_code == 401 and bare.json()["error_code"] == "no_authorization", bare.text
    versioned = httpx.get(auth_url + "/settings", headers={"apikey": "wrong-key-wrong-key", "X-Supabase-Api-Version": "2024-01-01"})
    assert versioned.status_code == 401 and versioned.json()["code"] == "no_authorization", versioned.text
    assert versioned.headers["X-Supabase-Api-Version"] == "2024-01-01"
    settings = httpx.get(auth_url + "/settings", headers={"apikey": options.anon}).json()
    assert settings["external"]["email"] is True and settings["external"]["anonymous_users"] is True, settings
    jwks = httpx.get(auth_url + "/.well-known/jwks.json", headers={"apikey": options.anon}).json()
    assert jwks["keys"] and jwks["keys"][0]["kty"] == "EC", jwks
    step("api key, settings and keys")

    # Sign-up and password sign-in.
    ann = f"ann.{tag}@example.com"
    app = client()
    signed_up = app.sign_up({"email": ann, "password": password, "options": {"data": {"full_name": "Ann Example"}}})
    assert signed_up.session is not None and signed_up.session.access_token
    user = signed_up.user
    assert user.email == ann and user.aud == "authenticated" and user.role == "authenticated", user
    assert user.app_metadata["provider"] == "email" and user.identities[0].provider == "email", user
    assert user.user_metadata["full_name"] == "Ann Example" and user.is_anonymous is False, user
    assert user.email_confirmed_at is None
    refused(lambda: client().sign_up({"email": ann, "password": password}), "user_already_exists", 422)
    weak = client()
    try:
        weak.sign_up({"email": f"weak.{tag}@example.com", "password": "abc"})
        raise AssertionError("a weak password was taken")
    except errors.AuthWeakPasswordError as error:
        assert error.status == 422 and error.code == "weak_password", error
    refused(lambda: client().sign_in_with_password({"email": ann, "password": "Wrong-password-1"}), "invalid_credentials", 400)
    signed_in = app.sign_in_with_password({"email": ann, "password": password})
    assert signed_in.user.id == user.id and signed_in.session.expires_in > 0
    assert signed_in.session.expires_at and signed_in.session.token_type.lower() == "bearer"
    step("sign up, refusals, sign in")

    refreshed = app.refresh_session(signed_in.session.refresh_token)
    assert refreshed.session.refresh_token != signed_in.session.refresh_token
    assert refreshed.user.id == user.id
    fetched = app.get_user()
    assert fetched.user.id == user.id and fetched.user.email == ann
    updated = app.update_user({"data": {"full_name": "Ann Updated"}})
    assert updated.user.user_metadata["full_name"] == "Ann Updated", updated.user.user_metadata
    step("refresh, read and update the user")

    # Tokens work on both surfaces.
    me = httpx.get(options.url + "/v1/me", headers={"Authorization": "Bearer " + refreshed.session.access_token})
    assert me.status_code == 200 and me.json()["user"]["id"] == user.id, me.text
    native = httpx.post(options.url + "/v1/auth/login", json={"email": ann, "password": password})
    assert native.status_code == 200, native.text
    native_token = native.json()["session"]["access_token"]
    assert client().get_user(native_token).user.id == user.id
    native_refresh = native.json()["session"]["refresh_token"]
    assert client().refresh_session(native_refresh).user.id == user.id
    step("tokens from one surface work on the other")

    # Anonymous, then upgraded with an address and a password: the same id.
    guest = client()
    anonymous = guest.sign_in_anonymously()
    assert anonymous.user.is_anonymous is True and anonymous.session.access_token
    bob = f"bob.{tag}@example.com"
    upgraded = guest.update_user({"email": bob, "password": password})
    assert upgraded.user.id == anonymous.user.id and upgraded.user.is_anonymous is False and upgraded.user.email == bob
    assert client().sign_in_with_password({"email": bob, "password": password}).user.id == anonymous.user.id
    step("anonymous sign-in and its upgrade")

    # Sign-out with each scope: what each leaves alive is told by a refresh.
    def session_of(address):
        c = client()
        return c, c.sign_in_with_password({"email": address, "password": password}).session

    keeper, kept = session_of(bob)
    _, other = session_of(bob)
    keeper.sign_out({"scope": "others"})
    refused(lambda: client().refresh_session(other.refresh_token), "refresh_token_not_found")
    kept = keeper.refresh_session(kept.refresh_token).session
    keeper.sign_out({"scope": "local"})
    refused(lambda: client().refresh_session(kept.refresh_token), "refresh_token_not_found")
    everywhere, _ = session_of(bob)
    _, elsewhere = session_of(bob)
    everywhere.sign_out()
    refused(lambda: client().refresh_session(elsewhere.refresh_token), "refresh_token_not_found")
    step("sign out: others, local, global")

    # Password recovery from the mail the sink caught.
    before = seen(ann)
    client().reset_password_for_email(ann)
    token = mail_match(ann, before, re.escape(options.reset_path) + r"\?token=([A-Za-z0-9_-]+)")
    recovering = client()
    recovered = recovering.verify_otp({"type": "recovery", "token_hash": token})
    assert recovered.user.id == user.id and recovered.session.access_token
    new_password = "Another-Horse-43-staple"
    recovering.update_user({"password": new_password})
    refused(lambda: client().sign_in_with_password({"email": ann, "password": password}), "invalid_credentials")
    assert client().sign_in_with_password({"email": ann, "password": new_password}).user.id == user.id
    refused(lambda: client().verify_otp({"type": "recovery", "token_hash": token}), "otp_expired", 403)
    step("recover a password from the mail")

    # A one-time code by mail.
    cy = f"cy.{tag}@example.com"
    before = seen(cy)
    client().sign_in_with_otp({"email": cy})
    code = mail_match(cy, before, r"\b([0-9]{6})\b")
    refused(lambda: client().verify_otp({"email": cy, "token": "000000" if code != "000000" else "111111", "type": "email"}), "otp_expired")
    by_code = client().verify_otp({"email": cy, "token": code, "type": "email"})
    assert by_code.user.email == cy and by_code.user.email_confirmed_at is not None and by_code.session.access_token
    step("one-time code")

    # The operator's calls, with the service role key only.
    dee = f"dee.{tag}@example.com"
    made = admin.create_user({"email": dee, "password": password, "email_confirm": True, "user_metadata": {"full_name": "Dee"}})
    assert made.user.email == dee and made.user.email_confirmed_at is not None and made.user.user_metadata["full_name"] == "Dee"
    listed = admin.list_users(page=1, per_page=200)
    assert dee in [u.email for u in listed] and ann in [u.email for u in listed]
    assert admin.get_user_by_id(made.user.id).user.email == dee
    renamed = admin.update_user_by_id(made.user.id, {"user_metadata": {"full_name": "Dee Renamed"}})
    assert renamed.user.user_metadata["full_name"] == "Dee Renamed"
    assert client().sign_in_with_password({"email": dee, "password": password}).user.id == made.user.id
    admin.update_user_by_id(made.user.id, {"ban_duration": "876000h"})
    raw = httpx.get(auth_url + "/admin/users/" + made.user.id,
                    headers={"apikey": options.service, "Authorization": "Bearer " + options.service}).json()
    assert raw["banned_until"] is not None, raw  # (the older gotrue package's model drops this field)
    refused(lambda: client().sign_in_with_password({"email": dee, "password": password}), "user_banned", 403)
    imported = f"eve.{tag}@example.com"
    hashed = bcrypt.hashpw(b"Supabase-Era-Password-7", bcrypt.gensalt(rounds=4)).decode()
    admin.create_user({"email": imported, "password_hash": hashed, "email_confirm": True})
    assert client().sign_in_with_password({"email": imported, "password": "Supabase-Era-Password-7"}).user.email == imported
    admin.delete_user(made.user.id)
    refused(lambda: admin.get_user_by_id(made.user.id), "user_not_found", 404)
    outsider = lib.SyncGoTrueAdminAPI(url=auth_url, headers={"apikey": options.anon, "Authorization": "Bearer " + options.anon})
    refused(lambda: outsider.list_users(), "no_authorization", 401)
    step("admin: create, list, get, update, ban, bcrypt hash, delete")

    # A second factor: enrolled, challenged and verified with pyotp's code, the session then
    # at aal2; a used code refused; a verified factor steps the session up again; removed.
    fay = f"fay.{tag}@example.com"
    factor_client = client()
    factor_client.sign_up({"email": fay, "password": password})
    enrolled = factor_client.mfa.enroll({"factor_type": "totp", "friendly_name": "Fay's phone"})
    assert enrolled.totp.qr_code.startswith("data:image/svg+xml;utf-8,<svg"), enrolled.totp.qr_code[:80]
    assert enrolled.totp.uri.startswith("otpauth://totp/") and enrolled.friendly_name == "Fay's phone"
    totp = pyotp.TOTP(enrolled.totp.secret)
    assert factor_client.mfa.get_authenticator_assurance_level().current_level == "aal1"
    challenge = factor_client.mfa.challenge({"factor_id": enrolled.id})
    wrong = "000000" if totp.now() != "000000" else "111111"
    refused(lambda: factor_client.mfa.verify({"factor_id": enrolled.id, "challenge_id": challenge.id, "code": wrong}),
            "mfa_verification_failed", 422)
    refused(lambda: factor_client.mfa.verify({"factor_id": enrolled.id, "challenge_id": challenge.id[:-4] + "AAAA", "code": totp.now()}),
            "mfa_challenge_expired", 400)
    verified = factor_client.mfa.verify({"factor_id": enrolled.id, "challenge_id": challenge.id, "code": totp.now()})
    assert verified.access_token and verified.user.email == fay
    assert factor_client.mfa.get_authenticator_assurance_level().current_level == "aal2"
    assert [f.id for f in factor_client.mfa.list_factors().totp] == [enrolled.id]
    later = totp.at(time.time() + 30)
    stepped = factor_client.mfa.challenge_and_verify({"factor_id": enrolled.id, "code": later})
    assert stepped.access_token != verified.access_token
    refused(lambda: factor_client.mfa.challenge_and_verify({"factor_id": enrolled.id, "code": later}), "mfa_verification_failed", 422)
    # Gatehouse opens no session before the second factor (docs/supabase-compat.md, difference 5).
    refused(lambda: client().sign_in_with_password({"email": fay, "password": password}), "insufficient_aal", 403)
    factor_client.mfa.unenroll({"factor_id": enrolled.id})
    assert client().sign_in_with_password({"email": fay, "password": password}).user.email == fay
    step("second factor: enroll, challenge, verify, step up, unenroll")

    # A magic link followed in a browser (GET /verify, no apikey): the implicit flow lands on
    # the app with the session in the fragment; the link works once.
    hal = f"hal.{tag}@example.com"
    before = seen(hal)
    client().sign_in_with_otp({"email": hal, "options": {"email_redirect_to": options.app_url}})
    link = mail_match(hal, before, re.escape(options.magic_path) + r"\?token=([A-Za-z0-9_-]+)")
    followed = httpx.get(auth_url + "/verify", params={"token": link, "type": "magiclink", "redirect_to": options.app_url})
    assert followed.status_code == 303, followed.text
    landing, _, fragment = followed.headers["location"].partition("#")
    assert landing == options.app_url, followed.headers["location"]
    values = dict(pair.split("=", 1) for pair in fragment.split("&"))
    assert values["token_type"] == "bearer" and values["type"] == "magiclink"
    assert client().get_user(values["access_token"]).user.email == hal
    assert client().refresh_session(values["refresh_token"]).session.access_token
    again = httpx.get(auth_url + "/verify", params={"token": link, "type": "magiclink", "redirect_to": options.app_url})
    assert again.status_code == 303 and "error_code=otp_expired" in again.headers["location"], again.headers
    elsewhere_to = httpx.get(auth_url + "/verify", params={"token": link, "type": "magiclink", "redirect_to": "https://evil.example.net/"})
    assert not elsewhere_to.headers["location"].startswith("https://evil.example.net"), elsewhere_to.headers
    step("a magic link followed in a browser (implicit flow)")

    # The PKCE flow (supabase-swift's default): the link lands on the app with ?code=, which
    # only the client holding the verifier exchanges for the session.
    ida = f"ida.{tag}@example.com"
    pkce = lib.SyncGoTrueClient(url=auth_url, headers={"apikey": options.anon}, auto_refresh_token=False,
                                persist_session=False, flow_type="pkce")
    before = seen(ida)
    verifier = None
    if options.library == "supabase_auth":
        pkce.sign_in_with_otp({"email": ida, "options": {"email_redirect_to": options.app_url}})
    else:
        # The older gotrue package sends a challenge with OAuth redirects only: send one as
        # supabase-swift does, with a verifier of our own.
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        answer = httpx.post(auth_url + "/otp", params={"redirect_to": options.app_url}, headers={"apikey": options.anon},
                            json={"email": ida, "code_challenge": challenge, "code_challenge_method": "s256"})
        assert answer.status_code == 200, answer.text
    link = mail_match(ida, before, re.escape(options.magic_path) + r"\?token=([A-Za-z0-9_-]+)")
    followed = httpx.get(auth_url + "/verify", params={"token": link, "type": "magiclink", "redirect_to": options.app_url})
    assert followed.status_code == 303 and followed.headers["location"].startswith(options.app_url + "?code="), followed.headers
    auth_code = followed.headers["location"].split("?code=", 1)[1]
    refused(lambda: client().exchange_code_for_session({"auth_code": auth_code, "code_verifier": "x" * 43}), "bad_code_verifier", 400)
    exchanged = pkce.exchange_code_for_session({"auth_code": auth_code, "code_verifier": verifier} if verifier else {"auth_code": auth_code})
    assert exchanged.user.email == ida and exchanged.session.access_token
    assert pkce.get_user(exchanged.session.access_token).user.email == ida
    refused(lambda: client().exchange_code_for_session({"auth_code": auth_code[:-6] + "AAAAAA", "code_verifier": "y" * 43}),
            "flow_state_not_found", 404)
    step("a magic link in the PKCE flow")

    # Reauthentication: a code by mail, then a new password with that code as the nonce and
    # without the old password; a wrong code refused; the old password dead afterwards.
    jo = f"jo.{tag}@example.com"
    reauth = client()
    reauth.sign_up({"email": jo, "password": password})
    before = seen(jo)
    reauth.reauthenticate()
    nonce = mail_match(jo, before, r"\b([0-9]{6})\b")
    newer = "Third-Horse-44-battery"
    refused(lambda: reauth.update_user({"password": newer, "nonce": "000000" if nonce != "000000" else "111111"}), "otp_expired", 403)
    refused(lambda: reauth.update_user({"password": newer}), "reauthentication_needed", 400)
    reauth.update_user({"password": newer, "nonce": nonce})
    refused(lambda: client().sign_in_with_password({"email": jo, "password": password}), "invalid_credentials")
    assert client().sign_in_with_password({"email": jo, "password": newer}).user.email == jo
    refused(lambda: reauth.update_user({"password": "Fourth-Horse-45-staple", "nonce": nonce}), "otp_expired", 403)
    step("reauthenticate with a mailed code")

    # Resending the confirmation: the same answer whether or not the address has an account.
    assert httpx.post(auth_url + "/resend", headers={"apikey": options.anon},
                      json={"type": "signup", "email": f"nobody.{tag}@example.com"}).status_code == 200
    refused(lambda: client().resend({"type": "signup", "email": "not-an-address"}), "email_address_invalid", 400)
    client().resend({"type": "signup", "email": fay})
    step("resend")

    # A refresh token presented again within the reuse interval (two app launches racing) gets
    # the same successor, as GoTrue's does.
    first = client().sign_in_with_password({"email": bob, "password": password}).session
    second = client().refresh_session(first.refresh_token).session
    again = client().refresh_session(first.refresh_token).session
    assert again.refresh_token == second.refresh_token
    step("a refresh raced within the reuse interval")
    print("ALL OK", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as failure:  # noqa: BLE001 — the test reads this line
        print("FAILED:", type(failure).__name__, failure, flush=True)
        raise
