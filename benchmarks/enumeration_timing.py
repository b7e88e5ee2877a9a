#!/usr/bin/env python3
"""Is the answer time the same for known and unknown addresses (strict enumeration protection)?

Usage: GATEHOUSE_IP_LIMITS=off gatehouse serve, then
benchmarks/enumeration_timing.py --base URL --flow forgot|magic|login.

Starts nothing itself: point it at a running Gatehouse (GATEHOUSE_IP_LIMITS=off, a strict preset
such as `default`) with --base. Signs up N accounts, then sends N requests for those and N for
addresses with no account, in random order, each to a fresh address (forgot and magic links allow
one a minute per address; login locks an address after 5 failures), and prints the latency
distribution of each group and a Mann-Whitney U z-score.

- forgot: POST /v1/auth/password/forgot (202 either way)
- magic:  POST /v1/auth/magic-link (202 either way)
- login:  POST /v1/auth/login with a wrong password (401 either way; an unknown address is
          hashed against a dummy hash so it costs the same)

Phone numbers (issue 58), against a server started with the preset this script writes
(`--write-phone-preset FILE`: Hannah's with the SMS limits out of the way, so that only the
answers' timing is measured) and the dev outbox, where the codes are read:

- phone-code:   POST /v1/auth/phone/code (202 either way)
- phone-verify: POST /v1/auth/phone/verify with a wrong code, a code live for the known numbers
                (400 invalid_code either way)
- phone-add:    POST /v1/me/phone by a signed-in account (202 either way; whether another account
                has the number is said only at the proof)
- auth-phone-signup: POST /auth/v1/signup {phone, password} (the same answer either way; a taken
                number gets no account and no SMS). Needs the server's anon key
                (GATEHOUSE_SUPABASE_ANON_KEY) passed as --anon-key; the preset has passwords on.
"""
import argparse
import json
import math
import random
import statistics
import time
import urllib.request


def post(base, path, body):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request) as response:
            status = response.status
            response.read()
    except urllib.error.HTTPError as error:
        status = error.code
    return status, (time.perf_counter() - started) * 1000


def get(base, path):
    with urllib.request.urlopen(base + path) as response:
        return json.loads(response.read())


def sms_code(base, number):
    """The code of the newest SMS to `number` in the dev outbox."""
    for _ in range(200):
        # Many codes go out in one second on a release build: look past the default 50.
        for message in get(base, "/dev/outbox?limit=500")["messages"]:
            if message["kind"] == "sms" and message["to"] == number:
                return message["text"].rsplit("#", 1)[1].strip()
        time.sleep(0.05)
    raise AssertionError(f"no SMS to {number}")


def phone_sign_in(base, number):
    """Signs `number` in (or up) by its code; the session's access token."""
    status, _ = post(base, "/v1/auth/phone/code", {"phone": number})
    assert status == 202, status
    request = urllib.request.Request(base + "/v1/auth/phone/verify", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"phone": number, "code": sms_code(base, number)}).encode())
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())["session"]["access_token"]


def phone_preset():
    """Hannah's preset (a file of one's own is read over `default`) with the SMS limits out of the way."""
    import os
    hannah = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Server", "Sources", "GatehouseServer", "Resources",
                          "presets", "hannah.json")
    with open(hannah) as file:
        preset = json.load(file)
    preset["name"] = "hannah-timing"
    preset.setdefault("sign_in_methods", {})["email_password"] = True  # /auth/v1's phone sign-up with a password
    preset.setdefault("sms", {}).update({
        "per_client_per_hour": 1000000, "per_network_per_hour": 1000000, "per_range_per_hour": 1000000,
        "per_number_per_minute": 1000, "per_number_per_day": 100000, "daily_budget": 1000000, "captcha_after_sends": None})
    return preset


def report(flow, known, unknown):
    """Each group's latency distribution, and whether they differ."""
    for name, values in (("known", known), ("unknown", unknown)):
        values = sorted(values)
        print(f"{name:8} n={len(values)} median={statistics.median(values):.2f} ms "
              f"p90={values[int(len(values) * 0.9)]:.2f} ms mean={statistics.mean(values):.2f} ms")
    print(f"flow {flow}: Mann-Whitney z = {mann_whitney_z(known, unknown):.2f} (|z| < 1.96: no difference at 5%)")


def mann_whitney_z(a, b):
    ranked = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    rank_sum_a = sum(i + 1 for i, (_, group) in enumerate(ranked) if group == 0)
    n1, n2 = len(a), len(b)
    u = rank_sum_a - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    sd = math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    return (u - mean) / sd


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--flow", choices=["forgot", "magic", "login", "phone-code", "phone-verify", "phone-add", "auth-phone-signup"], default="forgot")
    parser.add_argument("--anon-key", help="the server's GATEHOUSE_SUPABASE_ANON_KEY (auth-phone-signup)")
    parser.add_argument("--write-phone-preset", help="write the phone flows' preset to this file and stop")
    parser.add_argument("--gap-ms", type=float, default=50,
                        help="pause between requests, so the worker's composition of one does not overlap the next")
    options = parser.parse_args()
    if options.write_phone_preset:
        with open(options.write_phone_preset, "w") as file:
            json.dump(phone_preset(), file)
        return
    if options.flow.startswith("phone-") or options.flow == "auth-phone-signup":
        return phone(options)
    run = int(time.time())
    for i in range(options.n):
        status, _ = post(options.base, "/v1/auth/signup", {"email": f"known{i}.{run}@example.com", "password": "correct horse battery"})
        assert status == 201, status
    known, unknown = [], []
    plan = [(known, f"known{i}.{run}@example.com") for i in range(options.n)]
    plan += [(unknown, f"nobody{i}.{run}@example.com") for i in range(options.n)]
    random.shuffle(plan)
    time.sleep(2)
    path, body, expected = {
        "forgot": ("/v1/auth/password/forgot", lambda a: {"email": a}, 202),
        "magic": ("/v1/auth/magic-link", lambda a: {"email": a}, 202),
        "login": ("/v1/auth/login", lambda a: {"email": a, "password": "not the password"}, 401),
    }[options.flow]
    for group, address in plan:
        status, ms = post(options.base, path, body(address))
        assert status == expected, status
        group.append(ms)
        time.sleep(options.gap_ms / 1000)
    report(options.flow, known, unknown)


def phone(options):
    """The phone flows: known numbers have an account (signed up by code first), unknown ones none."""
    run = int(time.time()) % 5000
    known_numbers = [f"+1212555{(run + i) % 10000:04d}" for i in range(options.n)]
    unknown_numbers = [f"+1646555{(run + i) % 10000:04d}" for i in range(options.n)]
    for number in known_numbers:
        phone_sign_in(options.base, number)
    token = phone_sign_in(options.base, "+13125550199") if options.flow == "phone-add" else None
    if options.flow == "phone-verify":
        for number in known_numbers:  # a live code for each known number
            assert post(options.base, "/v1/auth/phone/code", {"phone": number})[0] == 202
    known, unknown = [], []
    plan = [(known, number) for number in known_numbers] + [(unknown, number) for number in unknown_numbers]
    random.shuffle(plan)
    time.sleep(2)
    for group, number in plan:
        if options.flow == "phone-code":
            status, ms = post(options.base, "/v1/auth/phone/code", {"phone": number})
            assert status == 202, status
        elif options.flow == "phone-verify":
            status, ms = post(options.base, "/v1/auth/phone/verify", {"phone": number, "code": "000000"})
            assert status == 400, status
        elif options.flow == "auth-phone-signup":
            request = urllib.request.Request(options.base + "/auth/v1/signup", method="POST",
                                             data=json.dumps({"phone": number, "password": "a phone sign-up's passphrase"}).encode(),
                                             headers={"Content-Type": "application/json", "apikey": options.anon_key,
                                                      "Authorization": f"Bearer {options.anon_key}"})
            started = time.perf_counter()
            with urllib.request.urlopen(request) as response:
                status = response.status
                response.read()
            ms = (time.perf_counter() - started) * 1000
            assert status == 200, status
        else:
            request = urllib.request.Request(options.base + "/v1/me/phone", method="POST",
                                             data=json.dumps({"phone": number}).encode(),
                                             headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
            started = time.perf_counter()
            with urllib.request.urlopen(request) as response:
                status = response.status
            ms = (time.perf_counter() - started) * 1000
            assert status == 202, status
        group.append(ms)
        time.sleep(options.gap_ms / 1000)
    report(options.flow, known, unknown)


if __name__ == "__main__":
    main()
