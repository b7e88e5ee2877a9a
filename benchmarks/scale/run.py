#!/usr/bin/env python3
"""Cost as the data grows (issue 65): the hot paths and the operators' lists on databases of
10k, 100k and 1M accounts, side by side in one run.

For each database and size it:
  1. makes an empty database (a SQLite file, or a PostgreSQL database on the server that
     GATEHOUSE_TEST_POSTGRES_URL names) and fills it with `gatehouse-bench load URL N`, recording
     the load's time, rows and size;
  2. starts `gatehouse serve` on it (benchmarks/wrk/harness.py's Server: the Handz preset, IP
     limits off), signs up one account per connection through HTTP and loads login, refresh,
     GET /v1/me, the entitlement check and a credit spend with wrk (harness.py's scenarios),
     recording the server's CPU per request and the p99;
  3. times the operators' lists through the admin API, one request at a time: the first page of
     users, ten pages deep by cursor, a search by email prefix, the audit trail (whole and of one
     account) and the event feed (from the start and from its end), p50 and p99 of each.

Usage: benchmarks/scale/run.py --binary GATEHOUSE --bench GATEHOUSE_BENCH --out FILE
                               [--sizes 10000,100000] [--databases sqlite,postgres] [--seconds 10]
The figures go to FILE as JSON and a table to standard output.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wrk"))
import harness  # noqa: E402  (benchmarks/wrk/harness.py: the server, the seeding and the wrk scenarios)

SCENARIOS = ["login", "refresh", "me", "check", "spend"]


def fresh_database(kind, workdir, name):
    """A URL of an empty database, and how to drop it."""
    if kind == "sqlite":
        path = os.path.join(workdir, f"{name}.sqlite")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        return f"sqlite://{path}", lambda: None
    admin = os.environ["GATEHOUSE_TEST_POSTGRES_URL"]
    psql = os.environ.get("BENCH_PSQL") or shutil.which("psql")
    subprocess.run([psql, "-X", "-q", admin, "-c", f"DROP DATABASE IF EXISTS {name}"], check=True, capture_output=True)
    subprocess.run([psql, "-X", "-q", admin, "-c", f"CREATE DATABASE {name}"], check=True, capture_output=True)
    parts = urllib.parse.urlsplit(admin)
    url = urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    return url, lambda: subprocess.run([psql, "-X", "-q", admin, "-c", f"DROP DATABASE IF EXISTS {name}"], capture_output=True)


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def timed(port, path, count):
    """p50 and p99 (ms) of `count` sequential GETs of `path` with the admin key, and the last answer."""
    times, answer = [], None
    for _ in range(count):
        started = time.perf_counter()
        status, answer = harness.call(port, "GET", path, token=harness.ADMIN_KEY)
        times.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {answer}")
    return {"p50_ms": round(percentile(times, 0.5), 2), "p99_ms": round(percentile(times, 0.99), 2), "requests": count}, answer


def console(port, count):
    """The operators' lists, each timed on its own."""
    results = {}
    results["users, first page"], first = timed(port, "/admin/v1/users?limit=50", count)
    cursor, path = first.get("next_cursor"), None
    for _ in range(10):  # ten pages deep by cursor
        if not cursor:
            break
        path = f"/admin/v1/users?limit=50&before={urllib.parse.quote(cursor)}"
        cursor = harness.call(port, "GET", path, token=harness.ADMIN_KEY)[1].get("next_cursor")
    if path:
        results["users, page 11 by cursor"], _ = timed(port, path, count)
    results["users, search by email prefix"], _ = timed(port, "/admin/v1/users?q=load12&limit=50", count)
    results["audit trail, first page"], audit = timed(port, "/admin/v1/audit?limit=100", count)
    someone = next((entry.get("user_id") for entry in audit.get("events", audit.get("entries", [])) if entry.get("user_id")), None)
    if someone:
        results["audit trail of one account"], _ = timed(port, f"/admin/v1/audit?user_id={someone}&limit=100", count)
    results["event feed from the start"], feed = timed(port, "/admin/v1/events?limit=100", count)
    # The feed's end: follow it by cursor until a page comes back short (at most 50 pages), then
    # time reading from the last cursor (a backend that keeps up reads there).
    cursor = feed.get("next_cursor")
    for _ in range(50):
        if not cursor:
            break
        page = harness.call(port, "GET", f"/admin/v1/events?after={urllib.parse.quote(str(cursor))}&limit=100", token=harness.ADMIN_KEY)[1]
        if len(page.get("events", [])) < 100:
            break
        cursor = page.get("next_cursor")
    if cursor:
        results["event feed, 50 pages in"], _ = timed(port, f"/admin/v1/events?after={urllib.parse.quote(str(cursor))}&limit=100", count)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--console-requests", type=int, default=200)
    args = parser.parse_args()
    harness.raise_file_limit()
    workdir = tempfile.mkdtemp(prefix="gatehouse-scale-")
    run = {"machine": harness.machine_info(), "git": harness.git_info(), "argon2": harness.argon2_settings(), "parts": []}
    # One verification's CPU at the server's cost, to take out of a login's (the hash does not
    # grow with the data; what is around it may).
    timing = json.loads(subprocess.run([args.bench, "hash"], capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    run["verify_cpu_ms"] = timing["implementations"][timing["server_uses"]]["verify_cpu_ms_p50"]
    harness.log(f"one verification: {run['verify_cpu_ms']} ms of CPU")
    try:
        for kind in args.databases.split(","):
            for size in [int(text) for text in args.sizes.split(",")]:
                label = f"{kind}-{size}"
                harness.log(f"{label}: loading {size} accounts")
                url, drop = fresh_database(kind, workdir, f"scale_{size}")
                loaded = subprocess.run([args.bench, "load", url, str(size)], capture_output=True, text=True, check=True)
                part = {"database": kind, "accounts": size, "load": json.loads(loaded.stdout.strip().splitlines()[-1])}
                harness.log(f"{label}: loaded in {part['load']['seconds']} s, {part['load']['database_mib']} MiB")
                part_dir = os.path.join(workdir, label)
                os.makedirs(part_dir, exist_ok=True)
                server = harness.Server(args.binary, url, part_dir)
                try:
                    server.start()
                    part["console"] = console(server.port, args.console_requests)
                    wrk = {"scenarios": {}}
                    options = argparse.Namespace(seconds=args.seconds, hash="none", warmup=1)
                    threads = 2
                    harness.load(server, wrk, options, SCENARIOS, threads, args.connections - args.connections % threads, part_dir, label)
                    part["scenarios"] = {
                        name: {"requests_per_second": row.get("requests_per_second"),
                               "cpu_ms_per_request": round(row["server"]["cpu_seconds"] / row["requests"] * 1000, 3),
                               "p99_ms": row.get("latency_ms", {}).get("p99"), "statuses": row.get("statuses")}
                        for name, row in wrk["scenarios"].items() if row.get("requests")}
                    part["rss_mib"] = harness.mib(harness.proc_status(server.process.pid, "VmRSS"))
                finally:
                    server.stop()
                    drop()
                run["parts"].append(part)
                with open(args.out, "w") as handle:
                    json.dump(run, handle, indent=2)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(run)


def report(run):
    parts = run["parts"]
    print(f"Server CPU ms per request (p99 ms); login without one verification ({run['verify_cpu_ms']} ms):")
    print("| database | accounts | load s | MiB | " + " | ".join(f"{name} CPU ms (p99 ms)" for name in SCENARIOS) + " | RSS MiB |")
    print("|---|---:|---:|---:|" + "---:|" * len(SCENARIOS) + "---:|")
    for part in parts:
        cells = []
        for name in SCENARIOS:
            row = part.get("scenarios", {}).get(name)
            cpu = row and (round(row["cpu_ms_per_request"] - run["verify_cpu_ms"], 3) if name == "login" else row["cpu_ms_per_request"])
            cells.append(f"{cpu} ({row['p99_ms']})" if row else "-")
        print(f"| {part['database']} | {part['accounts']:,} | {part['load']['seconds']} | {part['load']['database_mib']} | "
              + " | ".join(cells) + f" | {part.get('rss_mib')} |")
    print()
    routes = sorted({route for part in parts for route in part.get("console", {})})
    print("| database | accounts | " + " | ".join(f"{route} p99 ms" for route in routes) + " |")
    print("|---|---:|" + "---:|" * len(routes))
    for part in parts:
        print(f"| {part['database']} | {part['accounts']:,} | "
              + " | ".join(str(part.get("console", {}).get(route, {}).get("p99_ms", "-")) for route in routes) + " |")


if __name__ == "__main__":
    main()
