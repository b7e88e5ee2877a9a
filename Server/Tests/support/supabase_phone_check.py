"""Supabase's own Python auth client, unchanged, signing in with a phone number against a live
Gatehouse's /auth/v1 (issue 43): sign_in_with_otp({"phone"}), verify_otp(type "sms"),
update_user({"phone"}) and verify_otp(type "phone_change"). The SMS is read from the dev outbox
(GET /dev/outbox, kind "sms"). Each step prints one line; the first failure exits non-zero.

Usage: supabase_phone_check.py --url http://127.0.0.1:PORT --anon KEY --library supabase_auth|gotrue
"""
import argparse
import importlib
import sys
import time

import httpx


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
    for name in ("url", "anon", "library"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--resend", action="store_true", help="only the resend steps (a preset with 3 sends a minute per number)")
    options = parser.parse_args()
    lib = importlib.import_module(options.library)
    errors = importlib.import_module(options.library + ".errors")
    auth_url = options.url + "/auth/v1"

    def client():
        return lib.SyncGoTrueClient(
            url=auth_url, headers={"apikey": options.anon}, auto_refresh_token=False, persist_session=False,
            http_client=patient_http(options.library))

    def step(name):
        print("ok:", name, flush=True)

    def code_for(number, after=None):
        """The code of the newest SMS to `number` in the dev outbox (its last line is `@host #code`),
        passing over the message `after` names (an id, or a set of ids already seen)."""
        seen = after if isinstance(after, set) else {after}
        for _ in range(200):
            messages = httpx.get(options.url + "/dev/outbox").json()["messages"]
            for message in messages:
                if message["kind"] == "sms" and message["to"] == number and message["id"] not in seen:
                    return message["id"], message["text"].rsplit("#", 1)[1].strip()
            time.sleep(0.05)
        raise AssertionError(f"no SMS to {number}")

    if options.resend:
        resend(options, client, code_for, errors, step)
        print("ALL OK", flush=True)
        return

    first, second = "+14155550142", "+14155550143"
    auth = client()

    settings = httpx.get(auth_url + "/settings", headers={"apikey": options.anon}).json()
    assert settings["external"]["phone"] is True, settings
    step("settings offer phone")

    answer = auth.sign_in_with_otp({"phone": "(415) 555-0142"})
    assert answer.user is None and answer.session is None, answer
    sent, code = code_for(first)
    try:
        auth.verify_otp({"phone": first, "token": "000000" if code != "000000" else "111111", "type": "sms"})
        raise AssertionError("a wrong code went through")
    except errors.AuthApiError as error:
        assert error.code == "otp_expired" and error.status == 403, (error.code, error.status, error.message)
    signed = auth.verify_otp({"phone": first, "token": code, "type": "sms"})
    assert signed.session is not None and signed.session.access_token, signed
    user = signed.user
    assert user.phone == "14155550142" and user.phone_confirmed_at is not None, user
    assert [identity.provider for identity in (user.identities or [])] == ["phone"], user.identities
    assert user.app_metadata.get("provider") == "phone", user.app_metadata
    step("sign in with an SMS code")

    again = client()
    # Not across a minute's boundary: the per-number limit counts in clock-aligned minutes.
    while time.time() % 60 > 55:
        time.sleep(0.2)
    again.sign_in_with_otp({"phone": "+14155550144"})
    try:
        again.sign_in_with_otp({"phone": "+14155550144"})
        raise AssertionError("a second send within the minute went through")
    except errors.AuthApiError as error:
        assert error.status == 429 and error.code == "over_request_rate_limit", (error.code, error.status)
    step("one send a minute per number")

    updated = auth.update_user({"phone": second})
    assert updated.user.phone == "14155550142", updated.user
    _, change = code_for(second)
    changed = auth.verify_otp({"phone": second, "token": change, "type": "phone_change"})
    assert changed.user.phone == "14155550143" and changed.user.id == user.id, changed.user
    assert auth.get_user(changed.session.access_token).user.phone == "14155550143"
    step("change the number with phone_change")

    # A number and a password (the preset has passwords): no session until the code proves it.
    number, password = "+14155550145", "Correct-Horse-42-battery"
    made = client().sign_up({"phone": number, "password": password, "options": {"data": {"plan_note": "trial"}}})
    assert made.session is None and made.user.phone == "14155550145" and made.user.phone_confirmed_at is None, made
    # user_metadata is what was set (issue 63), here and once the number is proved.
    assert made.user.user_metadata == {"plan_note": "trial"}, made.user.user_metadata
    try:
        client().sign_in_with_password({"phone": number, "password": password})
        raise AssertionError("an unproved number signed in")
    except errors.AuthApiError as error:
        assert error.code == "invalid_credentials", (error.code, error.status)
    _, confirm = code_for(number)
    confirmed = client().verify_otp({"phone": number, "token": confirm, "type": "sms"})
    assert confirmed.session is not None and confirmed.user.id == made.user.id and confirmed.user.phone_confirmed_at, confirmed
    assert confirmed.user.user_metadata == {"plan_note": "trial"}, confirmed.user.user_metadata
    again = client().sign_in_with_password({"phone": number, "password": password})
    assert again.session is not None and again.user.id == made.user.id, again
    step("sign up with a number and a password")

    try:
        auth.sign_in_with_otp({"phone": "+44 20 7946 0958"})
        raise AssertionError("a number of another country went through")
    except errors.AuthApiError as error:
        assert error.status == 400 and error.code == "validation_failed", (error.code, error.status)
    step("refusals in GoTrue's words")
    print("ALL OK", flush=True)


def resend(options, client, code_for, errors, step):
    """`resend` with `sms` and `phone_change`: the newest code works, the one before it no more."""
    number, password = "+14155550146", "Correct-Horse-42-battery"
    made = client().sign_up({"phone": number, "password": password})
    assert made.session is None and made.user.phone_confirmed_at is None, made
    first_id, first = code_for(number)
    client().resend({"type": "sms", "phone": number})
    _, second = code_for(number, after=first_id)
    if second != first:
        try:
            client().verify_otp({"phone": number, "token": first, "type": "sms"})
            raise AssertionError("the code the resend replaced went through")
        except errors.AuthApiError as error:
            assert error.code == "otp_expired" and error.status == 403, (error.code, error.status)
    confirmed = client().verify_otp({"phone": number, "token": second, "type": "sms"})
    assert confirmed.session is not None and confirmed.user.id == made.user.id and confirmed.user.phone_confirmed_at, confirmed
    # The sign-up's code again: the password stays.
    signed = client().sign_in_with_password({"phone": number, "password": password})
    assert signed.user.id == made.user.id, signed
    # A proved number has no sign-up code to resend: nothing is sent, the answer the same.
    client().resend({"type": "sms", "phone": number})
    time.sleep(0.5)
    messages = [m for m in httpx.get(options.url + "/dev/outbox").json()["messages"] if m["kind"] == "sms" and m["to"] == number]
    assert len(messages) == 2, messages
    step("resend a sign-up's code")

    auth = client()
    auth.set_session(signed.session.access_token, signed.session.refresh_token)
    moved = "+14155550147"
    auth.update_user({"phone": moved})
    change_id, change = code_for(moved)
    client().resend({"type": "phone_change", "phone": moved})
    again_id, again = code_for(moved, after=change_id)
    # Two sends so far; the per-number limits (3 a minute, 5 a day) refuse one of the next four,
    # however slowly they go. Only a live change is resent (a resend that texts nothing spends
    # nothing, issue 58), so this runs while the change is pending.
    refusal, seen, newest = None, {change_id, again_id}, again
    for _ in range(4):
        try:
            client().resend({"type": "phone_change", "phone": moved})
        except errors.AuthApiError as error:
            refusal = error
            break
        # Each code as it comes (two sent in one second may list in either order).
        new_id, newest = code_for(moved, after=seen)
        seen.add(new_id)
    assert refusal is not None, "every send over the per-number limits went through"
    assert refusal.status == 429 and refusal.code == "over_request_rate_limit", (refusal.code, refusal.status)
    # The newest code confirms the change.
    changed = client().verify_otp({"phone": moved, "token": newest, "type": "phone_change"})
    assert changed.user.phone == "14155550147" and changed.user.id == made.user.id, changed.user
    # A number no change is pending for gets nothing.
    client().resend({"type": "phone_change", "phone": "+14155550148"})
    time.sleep(0.5)
    assert not [m for m in httpx.get(options.url + "/dev/outbox").json()["messages"] if m["to"] == "+14155550148"]
    step("resend a number change's code")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 - the test prints whatever failed
        print("FAILED:", repr(error), flush=True)
        sys.exit(1)
