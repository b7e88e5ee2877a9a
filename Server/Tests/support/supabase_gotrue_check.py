"""Supabase's own Python auth client (supabase-auth), unchanged, against a live Gatehouse's
/auth/v1, for the answers GoTrue gives that apps and operators rely on (issue 46): the admin
list with and without page arguments, claims verified with the JWKS, free user_metadata and
operator-only app_metadata, the admin's address changes, invitations, every generate_link
type used, the admin factor calls, GoTrue's error shape on unknown paths, identity_data's
email_verified, the reauthentication code, OAuth clients, and a row-level security policy
reading Gatehouse's claims as Supabase apps write them. Every step asserts what the client
hands back; the first failure exits non-zero with its step. Mail is read from the SMTP sink's
maildir.

Usage: supabase_gotrue_check.py --url http://127.0.0.1:PORT --anon KEY --service KEY
       --maildir DIR --app-url https://app.example.com/welcome
       [--pg-url postgres://… --psql /path/to/psql]
(--app-url is on the server's redirect allowlist; without --pg-url and --psql the row-level
security step is skipped.)
"""
import argparse
import base64
import json
import mailbox
import re
import subprocess
import time
import uuid
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import httpx
import jwt
import pyotp
from supabase_auth import SyncGoTrueAdminAPI, SyncGoTrueClient
from supabase_auth.errors import AuthApiError, AuthInvalidJwtError

PASSWORD = "Correct-Horse-42-battery"

# The `type` a generated link carries: GoTrue's links for both halves of an email change say
# `type=email_change` (the one type `POST /verify` and the client's verify_otp know for it);
# the others carry the generated type itself.
LINK_TYPE = {"email_change_current": "email_change", "email_change_new": "email_change"}



def patient_http():
    """The client's HTTP client, waiting up to 60 s (httpx's default is 5): the test suite runs
    many servers at once on two cores, and a slow answer is not a wrong one."""
    return httpx.Client(timeout=60, follow_redirects=True, http2=True)


class Run:
    """What every step shares: the options, the clients, the run's tag, and helpers."""

    def __init__(self, options):
        self.options = options
        self.auth_url = options.url + "/auth/v1"
        self.app_url = options.app_url
        self.tag = uuid.uuid4().hex[:8]
        self.admin = SyncGoTrueAdminAPI(
            url=self.auth_url, headers={"apikey": options.service, "Authorization": "Bearer " + options.service},
            http_client=patient_http())
        self.service_headers = {"apikey": options.service, "Authorization": "Bearer " + options.service}

    def client(self):
        return SyncGoTrueClient(
            url=self.auth_url, headers={"apikey": self.options.anon}, auto_refresh_token=False, persist_session=False,
            http_client=patient_http())

    def address(self, name):
        return f"gt-{self.tag}-{name}@example.com"

    def confirmed_user(self, name, **extra):
        """A new account made by the admin API, its address confirmed, with the password."""
        made = self.admin.create_user({"email": self.address(name), "password": PASSWORD, "email_confirm": True, **extra})
        assert made.user.email == self.address(name) and made.user.email_confirmed_at is not None, made.user
        return made.user

    def signed_in(self, email, password=PASSWORD):
        """A client holding a session of `email`, signed in by password."""
        c = self.client()
        answer = c.sign_in_with_password({"email": email, "password": password})
        assert answer.user.email == email and answer.session.access_token, answer
        return c, answer

    # Mail from the SMTP sink.

    def seen(self, address):
        box = mailbox.Maildir(self.options.maildir, factory=None, create=False)
        return {key for key, m in box.items() if address.lower() in (m["To"] or "").lower()}

    def mail_match(self, address, before, pattern):
        """The first group of `pattern` in a message to `address` that was not in `before`."""
        for _ in range(300):
            box = mailbox.Maildir(self.options.maildir, factory=None, create=False)
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

    # Links followed as a browser follows them: no apikey, no redirect followed.

    def follow(self, link):
        """GETs the verify link (its path and query, on this server: the link names the
        server's public URL); the Location's part before `#` and the fragment's values."""
        parts = urlsplit(link)
        assert parts.path.endswith("/auth/v1/verify"), link
        answer = httpx.get(self.auth_url + "/verify?" + parts.query)
        assert answer.status_code == 303, (link, answer.status_code, answer.text)
        location = answer.headers["location"]
        landing, _, fragment = location.partition("#")
        return landing, dict(parse_qsl(fragment)), location

    def signed_in_by_link(self, link, kind):
        """Follows `link`, which must land on the app with a session of type `kind`; the values."""
        landing, values, location = self.follow(link)
        assert landing == self.app_url, location
        assert values["token_type"] == "bearer" and values["type"] == kind, location
        assert values["access_token"] and values["refresh_token"], location
        return values

    def used_up(self, link):
        """A link used before: the app is told `otp_expired` in the fragment."""
        landing, values, location = self.follow(link)
        assert "#error=access_denied&error_code=otp_expired" in location, location
        assert values["error"] == "access_denied" and values["error_code"] == "otp_expired", location
        assert "access_token" not in values, location


def refused(call, code, status=None, message=None):
    try:
        call()
    except AuthApiError as error:
        assert error.code == code, f"expected {code}, got {error.code} ({error.status}: {error.message})"
        assert status is None or error.status == status, f"expected {status}, got {error.status} ({error.message})"
        assert message is None or error.message == message, f"expected {message!r}, got {error.message!r}"
        return error
    raise AssertionError(f"expected {code}, the call went through")


def payload_of(token):
    """A JWT's payload, decoded without any check (what an app reads after a refresh)."""
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def verified_claims(run, c, token=None):
    """The client's get_claims, checked to have taken its JWKS path (an ES256 token with a
    `kid`; for HS256 or no `kid` it would only ask GET /user), and the same token verified
    here with PyJWT against the published keys."""
    answer = c.get_claims(token)
    assert answer is not None
    header, claims = answer["headers"], answer["claims"]
    assert header["alg"] == "ES256" and header["kid"], header
    token = token or c.get_session().access_token
    keys = httpx.get(run.auth_url + "/.well-known/jwks.json", headers={"apikey": run.options.anon}).json()["keys"]
    key = next(k for k in keys if k.get("kid") == header["kid"])
    aud = claims["aud"]
    assert aud and isinstance(aud, (str, list)), claims
    ours = jwt.decode(token, jwt.PyJWK(key).key, algorithms=["ES256"], audience=aud)
    assert ours == payload_of(token), (ours, payload_of(token))
    assert ours["sub"] == claims["sub"] and ours["sid"] == claims["sid"]
    return claims


# The steps, in order.


def list_users_with_and_without_page_arguments(run):
    made = [run.confirmed_user(f"listed{n}") for n in range(3)]
    everyone = run.admin.list_users()  # sends ?page=&per_page=
    assert len(everyone) >= 3, everyone
    assert {u.id for u in made} <= {u.id for u in everyone}, [u.email for u in everyone]
    two = run.admin.list_users(page=1, per_page=2)
    assert len(two) == 2, [u.email for u in two]
    raw = httpx.get(run.auth_url + "/admin/users?page=&per_page=", headers=run.service_headers)
    assert raw.status_code == 200, raw.text
    assert len(raw.json()["users"]) == len(everyone), raw.text


def get_claims_verified_with_the_jwks(run):
    address = run.address("claims")
    c = run.client()
    signed_up = c.sign_up({"email": address, "password": PASSWORD, "options": {"data": {"favorite_color": "teal"}}})
    user = signed_up.user
    claims = verified_claims(run, c)
    assert claims["role"] == "authenticated", claims
    assert claims["email"] == address and claims["phone"] == "", claims
    assert claims["app_metadata"] == {"provider": "email", "providers": ["email"]}, claims
    # GoTrue's sign-up writes the email identity's keys after the data.
    written = {"favorite_color": "teal", "sub": user.id, "email": address, "email_verified": False, "phone_verified": False}
    assert user.user_metadata == written, user.user_metadata
    assert claims["user_metadata"] == written, claims
    assert c.get_user().user.user_metadata == written
    assert claims["session_id"] == claims["sid"], claims
    assert claims["aal"] == "aal1" and claims["is_anonymous"] is False, claims
    assert claims["sub"] == user.id, claims

    # get_claims verifies the signature rather than trusting the payload: a payload raised to
    # service_role under the original signature is refused by the client itself.
    token = c.get_session().access_token
    head, body, signature = token.split(".")
    forged = dict(payload_of(token), role="service_role")
    forged_body = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
    try:
        run.client().get_claims(f"{head}.{forged_body}.{signature}")
        raise AssertionError("a forged payload passed get_claims")
    except AuthInvalidJwtError as error:
        assert error.message == "Invalid JWT signature", error.message

    guest = run.client()
    guest.sign_in_anonymously()
    anonymous = verified_claims(run, guest)
    assert anonymous["role"] == "authenticated" and anonymous["is_anonymous"] is True, anonymous
    assert anonymous["email"] == "", anonymous


def admin_create_and_update_with_metadata(run):
    address = run.address("meta")
    made = run.admin.create_user({
        "email": address, "password": PASSWORD,
        "user_metadata": {"profile_image": "https://img.example.com/a.png", "favorite_color": "teal"},
        "app_metadata": {"roles": ["editor"]},
    }).user
    # GoTrue answers with exactly what was set (issue 63): nothing beside it.
    assert made.user_metadata == {"profile_image": "https://img.example.com/a.png", "favorite_color": "teal"}, made.user_metadata
    assert made.app_metadata["roles"] == ["editor"] and made.app_metadata["provider"] == "email", made.app_metadata

    # A top-level merge: keys given replace theirs, the others stay.
    updated = run.admin.update_user_by_id(made.id, {
        "user_metadata": {"favorite_color": "green"}, "app_metadata": {"roles": ["admin"], "tier": 2}}).user
    assert updated.user_metadata == {"profile_image": "https://img.example.com/a.png", "favorite_color": "green"}, updated.user_metadata
    assert updated.app_metadata["roles"] == ["admin"] and updated.app_metadata["tier"] == 2, updated.app_metadata
    assert updated.app_metadata["provider"] == "email" and updated.app_metadata["providers"] == ["email"], updated.app_metadata

    # A key set to null goes.
    removed = run.admin.update_user_by_id(made.id, {"user_metadata": {"profile_image": None}}).user
    assert removed.user_metadata == {"favorite_color": "green"}, removed.user_metadata
    fetched = run.admin.get_user_by_id(made.id).user
    assert fetched.user_metadata == removed.user_metadata, (fetched.user_metadata, removed.user_metadata)
    assert fetched.app_metadata == removed.app_metadata, (fetched.app_metadata, removed.app_metadata)
    assert fetched.app_metadata["roles"] == ["admin"] and fetched.app_metadata["tier"] == 2, fetched.app_metadata

    # At most 4096 bytes of JSON per object: an update over it changes nothing; a creation over
    # it makes no account (the same address is free afterwards).
    big = "x" * 5000
    refused(lambda: run.admin.update_user_by_id(made.id, {"user_metadata": {"blob": big}}), "validation_failed", 400)
    refused(lambda: run.admin.update_user_by_id(made.id, {"app_metadata": {"blob": big}}), "validation_failed", 400)
    unchanged = run.admin.get_user_by_id(made.id).user
    assert unchanged.user_metadata == removed.user_metadata and unchanged.app_metadata == removed.app_metadata, unchanged
    oversized = run.address("oversized")
    refused(lambda: run.admin.create_user({"email": oversized, "password": PASSWORD, "user_metadata": {"blob": big}}),
            "validation_failed", 400)
    plain = run.admin.create_user({"email": oversized, "password": PASSWORD}).user
    assert plain.email == oversized and plain.user_metadata == {}, plain

    # Exactly what was set, as supabase-py's own admin tests compare it (issue 63): an account
    # made with nothing has nothing, a name key is the key that was sent, and a key naming what
    # the server keeps (the address's state) shows the truth, whatever was written.
    yellow = run.admin.update_user_by_id(plain.id, {"user_metadata": {"favorite_color": "yellow"}}).user
    assert yellow.user_metadata == {"favorite_color": "yellow"}, yellow.user_metadata
    named = run.admin.create_user({"email": run.address("named"), "password": PASSWORD, "user_metadata": {"full_name": "Dee Example"}}).user
    assert named.user_metadata == {"full_name": "Dee Example"}, named.user_metadata
    assert run.admin.get_user_by_id(named.id).user.user_metadata == {"full_name": "Dee Example"}
    claimed = run.admin.update_user_by_id(plain.id, {"user_metadata": {"email_verified": True}}).user
    assert claimed.user_metadata == {"favorite_color": "yellow", "email_verified": False}, claimed.user_metadata

    # The server owns provider and providers.
    kept = run.admin.update_user_by_id(made.id, {"app_metadata": {"provider": "google"}}).user
    assert kept.app_metadata["provider"] == "email" and kept.app_metadata["providers"] == ["email"], kept.app_metadata
    assert kept.app_metadata["roles"] == ["admin"], kept.app_metadata


def update_user_with_data(run):
    user = run.confirmed_user("data")
    c, _ = run.signed_in(user.email)
    updated = c.update_user({"data": {"favorite_color": "blue", "nested": {"a": 1}}}).user
    assert updated.user_metadata["favorite_color"] == "blue" and updated.user_metadata["nested"] == {"a": 1}, updated.user_metadata
    fetched = c.get_user().user
    assert fetched.user_metadata["favorite_color"] == "blue" and fetched.user_metadata["nested"] == {"a": 1}, fetched.user_metadata

    # A holder cannot write app_metadata (GoTrue refuses it with 403 not_admin; a server that
    # ignores the key instead must leave it unwritten).
    token = c.get_session().access_token
    raw = httpx.put(run.auth_url + "/user", json={"app_metadata": {"roles": ["admin"]}},
                    headers={"apikey": run.options.anon, "Authorization": "Bearer " + token})
    if raw.status_code == 200:
        assert "roles" not in raw.json()["app_metadata"], raw.text
    else:
        assert raw.status_code == 403 and raw.json()["error_code"] == "not_admin", raw.text
    after = c.get_user().user
    assert after.app_metadata == {"provider": "email", "providers": ["email"]}, after.app_metadata

    refreshed = c.refresh_session().session
    claims = payload_of(refreshed.access_token)
    assert claims["user_metadata"]["favorite_color"] == "blue" and claims["user_metadata"]["nested"] == {"a": 1}, claims
    assert "roles" not in claims["app_metadata"], claims

    me = httpx.get(run.options.url + "/v1/me", headers={"Authorization": "Bearer " + refreshed.access_token})
    assert me.status_code == 200, me.text
    native = me.json()["user"]
    assert native["id"] == user.id and native["user_metadata"]["favorite_color"] == "blue", me.text
    assert native["user_metadata"]["nested"] == {"a": 1} and isinstance(native["app_metadata"], dict), me.text


def admin_email_change_and_email_confirm(run):
    user = run.admin.create_user({"email": run.address("before"), "password": PASSWORD}).user
    assert user.email == run.address("before") and user.email_confirmed_at is None, user
    other = run.confirmed_user("taken")
    first, second = user.email, run.address("after")
    # A reset link made for the old address ends with it.
    stale = run.admin.generate_link({"type": "recovery", "email": first}).properties.hashed_token
    moved = run.admin.update_user_by_id(user.id, {"email": second}).user
    refused(lambda: run.client().verify_otp({"type": "recovery", "token_hash": stale}), "otp_expired", 403)
    assert moved.email == second and moved.email_confirmed_at is None, moved
    assert run.signed_in(second)[1].user.id == user.id
    refused(lambda: run.client().sign_in_with_password({"email": first, "password": PASSWORD}), "invalid_credentials", 400)
    confirmed = run.admin.update_user_by_id(user.id, {"email_confirm": True}).user
    assert confirmed.email == second and confirmed.email_confirmed_at is not None, confirmed
    refused(lambda: run.admin.update_user_by_id(user.id, {"email": other.email}), "email_exists", 422)
    assert run.admin.get_user_by_id(user.id).user.email == second


def invite_user_by_email(run):
    address = run.address("invited")
    before = run.seen(address)
    invited = run.admin.invite_user_by_email(address, {"data": {"team": "blue"}, "redirect_to": run.app_url}).user
    assert invited.email == address and invited.email_confirmed_at is None and invited.invited_at is not None, invited
    assert invited.user_metadata == {"team": "blue"}, invited.user_metadata
    # The invitation is the preset's magic-link mail (docs/supabase-compat.md); its link's token
    # is what GoTrue's invite link carries, followed here as `type=invite`.
    mailed = run.mail_match(address, before, r"[?&]token=([A-Za-z0-9_-]+)")
    link = run.options.url + "/auth/v1/verify?" + urlencode({"token": mailed, "type": "invite", "redirect_to": run.app_url})
    values = run.signed_in_by_link(link, "invite")
    landed = run.client().get_user(values["access_token"]).user
    assert landed.id == invited.id and landed.email == address and landed.email_confirmed_at is not None, landed
    run.used_up(link)
    refused(lambda: run.admin.invite_user_by_email(address), "email_exists", 422)


def generated(run, params):
    """generate_link, with what every answer must hold checked."""
    kind = params["type"]
    answer = run.admin.generate_link(params)
    properties = answer.properties
    assert "/auth/v1/verify?" in properties.action_link, properties
    query = parse_qs(urlsplit(properties.action_link).query)
    assert query["type"] == [LINK_TYPE.get(kind, kind)], properties.action_link
    assert query["token"] == [properties.hashed_token], properties.action_link
    # A magic link's code signs in as the link does; the other links have none.
    if kind in ("magiclink", "invite"):
        assert re.fullmatch(r"[0-9]{6}", properties.email_otp), properties.email_otp
    else:
        assert properties.email_otp == "", properties.email_otp
    assert properties.verification_type == kind, properties
    redirect = params.get("options", {}).get("redirect_to")
    if redirect:
        assert properties.redirect_to == redirect and query["redirect_to"] == [redirect], properties
    assert answer.user.email == params["email"], answer.user
    return answer


def generate_link_for_every_type(run):
    common = {"redirect_to": run.app_url}

    # signup: an unconfirmed account with the password and the data; the link confirms it and
    # keeps the password.
    address = run.address("gen-signup")
    signup = generated(run, {"type": "signup", "email": address, "password": PASSWORD,
                             "options": {**common, "data": {"favorite_color": "amber"}}})
    assert signup.user.email_confirmed_at is None and signup.user.user_metadata == {"favorite_color": "amber"}, signup.user
    values = run.signed_in_by_link(signup.properties.action_link, "signup")
    assert run.client().get_user(values["access_token"]).user.id == signup.user.id
    assert run.admin.get_user_by_id(signup.user.id).user.email_confirmed_at is not None
    assert run.signed_in(address)[1].user.id == signup.user.id
    run.used_up(signup.properties.action_link)
    refused(lambda: run.admin.generate_link({"type": "signup", "email": address, "password": PASSWORD}), "email_exists", 422)

    # signup for an unverified account that was there already (its password anyone may have set):
    # the link is the owner's first proof, which ends that password.
    address = run.address("gen-signup-existing")
    earlier = run.client().sign_up({"email": address, "password": PASSWORD}).user
    answer = run.admin.generate_link({"type": "signup", "email": address, "password": "Other-Horse-47-battery", "options": common})
    assert answer.user.id == earlier.id and answer.properties.verification_type == "signup", answer
    assert re.fullmatch(r"[0-9]{6}", answer.properties.email_otp), answer.properties
    values = run.signed_in_by_link(answer.properties.action_link, "signup")
    assert run.client().get_user(values["access_token"]).user.email_confirmed_at is not None
    refused(lambda: run.client().sign_in_with_password({"email": address, "password": PASSWORD}), "invalid_credentials", 400)
    run.used_up(answer.properties.action_link)

    # invite: a new address; the link opens a session and confirms it.
    address = run.address("gen-invite")
    invite = generated(run, {"type": "invite", "email": address, "options": common})
    assert invite.user.invited_at is not None and invite.user.email_confirmed_at is None, invite.user
    values = run.signed_in_by_link(invite.properties.action_link, "invite")
    landed = run.client().get_user(values["access_token"]).user
    assert landed.id == invite.user.id and landed.email_confirmed_at is not None, landed
    run.used_up(invite.properties.action_link)

    # magiclink for an account: the hashed token through verify_otp (no redirect asked for).
    existing = run.confirmed_user("gen-magic")
    magic = generated(run, {"type": "magiclink", "email": existing.email})
    c = run.client()
    opened = c.verify_otp({"type": "magiclink", "token_hash": magic.properties.hashed_token})
    assert opened.user.id == existing.id and opened.session.access_token, opened
    run.used_up(magic.properties.action_link)

    # magiclink for an address without an account: GoTrue makes it a sign-up link.
    address = run.address("gen-magic-new")
    answer = run.admin.generate_link({"type": "magiclink", "email": address, "options": common})
    properties = answer.properties
    assert properties.verification_type == "signup" and answer.user.email == address, properties
    query = parse_qs(urlsplit(properties.action_link).query)
    assert query["type"] == ["signup"] and query["token"] == [properties.hashed_token], properties.action_link
    assert re.fullmatch(r"[0-9]{6}", properties.email_otp) and properties.redirect_to == run.app_url, properties
    values = run.signed_in_by_link(properties.action_link, "signup")
    landed = run.client().get_user(values["access_token"]).user
    assert landed.id == answer.user.id and landed.email == address and landed.email_confirmed_at is not None, landed
    run.used_up(properties.action_link)

    # recovery: a session through verify_otp, whose new password needs no current one.
    existing = run.confirmed_user("gen-recovery")
    recovery = generated(run, {"type": "recovery", "email": existing.email, "options": common})
    c = run.client()
    opened = c.verify_otp({"type": "recovery", "token_hash": recovery.properties.hashed_token})
    assert opened.user.id == existing.id and opened.session.access_token, opened
    new_password = "Recovered-Horse-46-battery"
    c.update_user({"password": new_password})
    assert run.signed_in(existing.email, new_password)[1].user.id == existing.id
    refused(lambda: run.client().sign_in_with_password({"email": existing.email, "password": PASSWORD}), "invalid_credentials", 400)
    run.used_up(recovery.properties.action_link)

    # email_change_new: the new inbox's link moves the address and proves it.
    existing = run.confirmed_user("gen-change-new")
    moved_to = run.address("gen-changed-new")
    change = generated(run, {"type": "email_change_new", "email": existing.email, "new_email": moved_to, "options": common})
    assert change.user.id == existing.id and change.user.new_email == moved_to, change.user
    values = run.signed_in_by_link(change.properties.action_link, "email_change")
    landed = run.client().get_user(values["access_token"]).user
    assert landed.id == existing.id and landed.email == moved_to and landed.email_confirmed_at is not None, landed
    assert run.signed_in(moved_to)[1].user.id == existing.id
    run.used_up(change.properties.action_link)

    # email_change_current: the current inbox's link moves the address, unproved.
    existing = run.confirmed_user("gen-change-current")
    moved_to = run.address("gen-changed-current")
    change = generated(run, {"type": "email_change_current", "email": existing.email, "new_email": moved_to, "options": common})
    assert change.user.id == existing.id and change.user.new_email == moved_to, change.user
    values = run.signed_in_by_link(change.properties.action_link, "email_change")
    now = run.admin.get_user_by_id(existing.id).user
    assert now.email == moved_to and now.email_confirmed_at is None, now
    run.used_up(change.properties.action_link)

    # Recovery and email changes need an account; an email change a free address.
    nobody = run.address("gen-nobody")
    refused(lambda: run.admin.generate_link({"type": "recovery", "email": nobody}), "user_not_found", 404)
    refused(lambda: run.admin.generate_link({"type": "email_change_new", "email": nobody, "new_email": run.address("gen-nowhere")}),
            "user_not_found", 404)
    refused(lambda: run.admin.generate_link({"type": "email_change_current", "email": now.email, "new_email": landed.email}),
            "email_exists", 422)


def admin_factors_list_and_delete(run):
    user = run.confirmed_user("factors")
    c, _ = run.signed_in(user.email)
    enrolled = c.mfa.enroll({"factor_type": "totp", "friendly_name": "phone"})
    totp = pyotp.TOTP(enrolled.totp.secret)
    challenge = c.mfa.challenge({"factor_id": enrolled.id})
    verified = c.mfa.verify({"factor_id": enrolled.id, "challenge_id": challenge.id, "code": totp.now()})
    assert verified.access_token and verified.user.id == user.id
    factors = run.admin.mfa.list_factors({"user_id": user.id})
    assert [f.id for f in factors] == [enrolled.id], factors
    factor = factors[0]
    assert factor.factor_type == "totp" and factor.status == "verified" and factor.friendly_name == "phone", factor
    deleted = run.admin.mfa.delete_factor({"id": enrolled.id, "user_id": user.id})
    assert deleted.id == enrolled.id, deleted
    assert run.admin.mfa.list_factors({"user_id": user.id}) == []
    refused(lambda: run.admin.mfa.delete_factor({"id": enrolled.id, "user_id": user.id}), "mfa_factor_not_found", 404)


def an_unknown_path_answers_gotrues_error_shape(run):
    def check_legacy(answer):
        assert answer.status_code == 404, (answer.status_code, answer.text)
        body = answer.json()
        assert body["code"] == 404 and body["error_code"] == "not_found" and isinstance(body["msg"], str), body
        assert answer.headers["x-sb-error-code"] == "not_found", answer.headers

    check_legacy(httpx.get(run.auth_url + "/no-such-route", headers={"apikey": run.options.anon}))
    versioned = httpx.get(run.auth_url + "/no-such-route",
                          headers={"apikey": run.options.anon, "X-Supabase-Api-Version": "2024-01-01"})
    assert versioned.status_code == 404, versioned.text
    body = versioned.json()
    assert body["code"] == "not_found" and isinstance(body["msg"], str) and "error_code" not in body, body
    assert versioned.headers["X-Supabase-Api-Version"] == "2024-01-01", versioned.headers
    assert versioned.headers["x-sb-error-code"] == "not_found", versioned.headers
    check_legacy(httpx.post(run.auth_url + "/admin/no-such", headers=run.service_headers, json={}))


def identity_data_email_verified_follows_the_address(run):
    c = run.client()
    user = c.sign_up({"email": run.address("identity"), "password": PASSWORD}).user
    assert user.email_confirmed_at is None, user
    assert user.identities[0].identity_data["email_verified"] is False, user.identities
    assert user.user_metadata["email_verified"] is False, user.user_metadata
    run.admin.update_user_by_id(user.id, {"email_confirm": True})
    after = run.admin.get_user_by_id(user.id).user
    assert after.email_confirmed_at is not None, after
    assert after.identities[0].identity_data["email_verified"] is True, after.identities
    assert after.user_metadata["email_verified"] is True, after.user_metadata


def a_password_change_without_proof_answers_gotrues_code(run):
    user = run.confirmed_user("reauth")
    c, _ = run.signed_in(user.email)
    refused(lambda: c.update_user({"password": "Another-Horse-43-battery"}), "reauthentication_needed", 400,
            "Password update requires reauthentication")
    assert run.signed_in(user.email)[1].user.id == user.id


def oauth_clients_map_onto_the_providers_clients(run):
    oauth = run.admin.oauth
    redirect_uris = ["https://dash.example.com/cb"]
    # A dict, not CreateOAuthClientParams: the client sends it as it is (the model has no
    # token_endpoint_auth_method, used below).
    made = oauth.create_client({"client_name": "Dashboard", "redirect_uris": redirect_uris, "scope": "openid email"}).client
    assert str(uuid.UUID(made.client_id)) == made.client_id, made.client_id
    assert made.client_secret and made.client_secret.startswith("ghs_"), made
    assert made.client_type == "confidential" and made.token_endpoint_auth_method == "client_secret_basic", made
    assert made.registration_type == "manual" and made.redirect_uris == redirect_uris, made
    assert made.grant_types == ["authorization_code", "refresh_token"] and made.response_types == ["code"], made
    assert made.client_name == "Dashboard" and made.scope == "openid email", made

    listed = [c for c in oauth.list_clients().clients if c.client_id == made.client_id]
    assert len(listed) == 1 and listed[0].client_secret is None and listed[0].client_name == "Dashboard", listed
    fetched = oauth.get_client(made.client_id).client
    assert fetched.client_id == made.client_id and fetched.client_name == "Dashboard" and fetched.client_secret is None, fetched
    # update_client: the name and the redirect URIs; a field it cannot change is refused.
    updated = oauth.update_client(made.client_id, {"client_name": "Dashboard 2", "redirect_uris": ["https://dash.example.com/cb2"]}).client
    assert updated.client_name == "Dashboard 2" and updated.redirect_uris == ["https://dash.example.com/cb2"], updated
    assert oauth.get_client(made.client_id).client.client_name == "Dashboard 2"
    refused(lambda: oauth.update_client(made.client_id, {"scope": "openid"}), "validation_failed", 400)
    refused(lambda: oauth.update_client(made.client_id, {"redirect_uris": ["http://evil.example.com/cb"]}), "validation_failed", 400)
    regenerated = oauth.regenerate_client_secret(made.client_id).client
    assert regenerated.client_id == made.client_id, regenerated
    assert regenerated.client_secret.startswith("ghs_") and regenerated.client_secret != made.client_secret, regenerated
    oauth.delete_client(made.client_id)
    refused(lambda: oauth.get_client(made.client_id), "oauth_client_not_found", 404)

    public = oauth.create_client({"client_name": "Mobile", "redirect_uris": ["https://mobile.example.com/cb"],
                                  "token_endpoint_auth_method": "none"}).client
    assert public.client_type == "public" and public.token_endpoint_auth_method == "none", public
    assert public.client_secret is None, public
    oauth.delete_client(public.client_id)


def row_level_security_reads_gatehouses_claims(run):
    options = run.options
    schema = f"rls_{run.tag}"

    def psql(sql, **variables):
        """Runs `sql` (a script on standard input); the rows it printed, unaligned."""
        command = [options.psql, options.pg_url, "-v", "ON_ERROR_STOP=1", "-X", "-q", "-A", "-t"]
        for name, value in variables.items():
            command += ["-v", f"{name}={value}"]
        done = subprocess.run(command, input=sql, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"psql failed ({done.returncode}): {done.stderr}"
        return [line for line in done.stdout.splitlines() if line]

    def people(name):
        c = run.client()
        user = c.sign_up({"email": run.address(name), "password": PASSWORD}).user
        return user, verified_claims(run, c)

    x, x_claims = people("rls-x")
    y, y_claims = people("rls-y")
    claim = "current_setting('request.jwt.claims', true)::json"
    psql(f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'authenticated') THEN
                CREATE ROLE authenticated NOLOGIN;
            END IF;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
        END $$;
        CREATE SCHEMA {schema};
        CREATE TABLE {schema}.notes (owner uuid, email text, body text);
        ALTER TABLE {schema}.notes ENABLE ROW LEVEL SECURITY;
        CREATE POLICY own_notes ON {schema}.notes FOR SELECT TO authenticated USING (
            owner = ({claim}->>'sub')::uuid
            AND {claim}->>'role' = 'authenticated'
            AND email = {claim}->>'email');
        GRANT USAGE ON SCHEMA {schema} TO authenticated;
        GRANT SELECT ON {schema}.notes TO authenticated;
        INSERT INTO {schema}.notes VALUES ('{x.id}', '{x.email}', 'x note'), ('{y.id}', '{y.email}', 'y note');
    """)

    def visible(claims):
        return psql(f"""
            BEGIN;
            SET LOCAL ROLE authenticated;
            SELECT set_config('request.jwt.claims', :'claims', true) AS applied \\gset
            SELECT body FROM {schema}.notes ORDER BY body;
            COMMIT;
        """, claims=json.dumps(claims))

    try:
        assert visible(x_claims) == ["x note"], visible(x_claims)
        assert visible(y_claims) == ["y note"], visible(y_claims)
        assert visible(dict(x_claims, role="anon")) == [], "anon saw rows"
    finally:
        psql(f"DROP SCHEMA IF EXISTS {schema} CASCADE;")


STEPS = [
    ("list_users with and without page arguments", list_users_with_and_without_page_arguments),
    ("get_claims verified with the JWKS", get_claims_verified_with_the_jwks),
    ("admin create and update with user_metadata and app_metadata", admin_create_and_update_with_metadata),
    ("update_user with data", update_user_with_data),
    ("admin email change and email_confirm", admin_email_change_and_email_confirm),
    ("invite_user_by_email", invite_user_by_email),
    ("generate_link for every type, each link used", generate_link_for_every_type),
    ("admin factors: list and delete", admin_factors_list_and_delete),
    ("an unknown path answers GoTrue's error shape", an_unknown_path_answers_gotrues_error_shape),
    ("identity_data.email_verified follows the address", identity_data_email_verified_follows_the_address),
    ("a password change without proof answers GoTrue's code", a_password_change_without_proof_answers_gotrues_code),
    ("oauth clients map onto the provider's clients", oauth_clients_map_onto_the_providers_clients),
    ("row-level security reads Gatehouse's claims", row_level_security_reads_gatehouses_claims),
]


def main():
    parser = argparse.ArgumentParser()
    for name in ("url", "anon", "service", "maildir", "app-url"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--pg-url")
    parser.add_argument("--psql")
    options = parser.parse_args()
    run = Run(options)
    for name, step in STEPS:
        if step is row_level_security_reads_gatehouses_claims and not (options.pg_url and options.psql):
            print("skip: row-level security", flush=True)
            continue
        step(run)
        print("ok:", name, flush=True)
    print("ALL OK", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as failure:  # noqa: BLE001 — the test reads this line
        print("FAILED:", type(failure).__name__, failure, flush=True)
        raise
