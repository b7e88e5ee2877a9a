#!/usr/bin/env python3
"""Prepares the passkey sign-in benchmark (run by harness.py with the test venv's Python, which
has cryptography and cbor2; not stdlib only, unlike the harness).

  passkeys.py --port PORT --rp-id RP --accounts N --assertions M --out FILE

Signs N accounts up with a passkey only (one software authenticator per account, from
Server/Tests/support/webauthn_authenticator.py, synced like iCloud Keychain passkeys, so their sign
count stays 0 and assertions may arrive in any order), then opens M discoverable sign-in
ceremonies (POST /v1/passkeys/authentication/options) and signs each challenge with one of the
accounts' passkeys in turn. FILE gets one JSON body of POST /v1/passkeys/authentication/verify
per line, each good exactly once; wrk sends them (benchmarks/wrk/passkey.lua). Prints one JSON
line with the counts and the seconds each phase took.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "Server", "Tests", "support"))
import webauthn_authenticator as soft  # noqa: E402  (the tests' authenticator, imported in-process)

WORKERS = 8


class Caller(threading.local):
    """One keep-alive connection per worker thread."""

    def __init__(self, port):
        self.port = port
        self.connection = None

    def post(self, path, body, wanted):
        for attempt in range(2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                self.connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
                response = self.connection.getresponse()
                raw = response.read()
                break
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt:
                    raise
        if response.status != wanted:
            raise RuntimeError(f"POST {path}: {response.status} {raw[:300]!r}")
        return json.loads(raw)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rp-id", required=True)
    parser.add_argument("--accounts", type=int, required=True)
    parser.add_argument("--assertions", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    origin = f"https://{args.rp_id}"  # what a native iOS app reports
    caller = Caller(args.port)
    authenticator = soft.Authenticator()
    lock = threading.Lock()  # the authenticator's device table is not thread-safe

    def sign_up(index):
        answer = caller.post("/v1/passkeys/registration/options", {}, 200)
        with lock:
            credential = authenticator.create(f"bench{index}", answer["options"], origin, {}, True)
        caller.post("/v1/passkeys/registration/verify", {"challenge_id": answer["challenge_id"], "credential": credential}, 201)

    def assertion(index):
        answer = caller.post("/v1/passkeys/authentication/options", {}, 200)
        with lock:
            credential = authenticator.get(f"bench{index % args.accounts}", answer["options"], origin, {})
        return json.dumps({"challenge_id": answer["challenge_id"], "credential": credential}, separators=(",", ":"))

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        list(pool.map(sign_up, range(args.accounts)))
        signed_up = time.monotonic()
        bodies = list(pool.map(assertion, range(args.assertions), chunksize=64))
    signed = time.monotonic()
    with open(args.out, "w") as handle:
        for body in bodies:
            handle.write(body + "\n")
    print(json.dumps({"accounts": args.accounts, "assertions": len(bodies),
                      "sign_up_seconds": round(signed_up - started, 2), "assertion_seconds": round(signed - signed_up, 2)}))


if __name__ == "__main__":
    main()
