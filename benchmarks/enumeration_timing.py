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
    parser.add_argument("--flow", choices=["forgot", "magic", "login"], default="forgot")
    parser.add_argument("--gap-ms", type=float, default=50,
                        help="pause between requests, so the worker's composition of one does not overlap the next")
    options = parser.parse_args()
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
    for name, values in (("known", known), ("unknown", unknown)):
        values = sorted(values)
        print(f"{name:8} n={len(values)} median={statistics.median(values):.2f} ms "
              f"p90={values[int(len(values) * 0.9)]:.2f} ms mean={statistics.mean(values):.2f} ms")
    print(f"flow {options.flow}: Mann-Whitney z = {mann_whitney_z(known, unknown):.2f} (|z| < 1.96: no difference at 5%)")


if __name__ == "__main__":
    main()
