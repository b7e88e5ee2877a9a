#!/usr/bin/env python3
"""What a login (or a refresh, --scenario refresh) writes and reads on PostgreSQL at a size (issue
65): the write-ahead log's bytes, records and full-page images, and the pages read from outside
PostgreSQL's buffers, per request, in total and per index, each build in turn on a fresh copy of
one loaded database.

A login inserts a session, a refresh token and audit rows; a refresh inserts the next refresh
token. Each insert adds an entry to every index of its table: where the key is random (a UUIDv4,
a token's hash), the entry lands on a leaf page no recent insert touched. At 1M accounts those
indexes are hundreds of MB, so such a page is often outside PostgreSQL's buffers (a read), and
after each checkpoint its first change writes the whole page to the log (a full-page image, 8 KB).
Keys that begin with their time land on the few pages at one end of their index.

For each NAME=BINARY, in the order given (name them so each build runs early and late):
  1. `CREATE DATABASE … TEMPLATE TEMPLATE` (the loaded database, untouched); with --cold, then a
     `CHECKPOINT`, `sync` and the kernel's page cache dropped (as idle_sweep.py does), so that the
     requests read what they touch from the disk (use it with --warmup 0);
  2. a server of BINARY on the copy (the Handz preset, a retention no loaded row is older than, so
     no sweep deletes anything), --warmup seconds of the scenario not counted;
  3. `CHECKPOINT`, then the counters (`pg_stat_wal`, the copy's `pg_stat_database` and
     `pg_statio_user_indexes`), --seconds of the scenario (64 connections over 64 accounts it signs
     up), the counters again; the differences are divided by the requests the load counted;
  4. the copy is dropped.

With --sqlite FILE instead of --base and --template, each run copies FILE (with its `-wal`) to a
directory of its own, and the counters are the server process's own (`/proc/PID/io`): the bytes it
wrote to the disk (`write_bytes`: the WAL's frames and the checkpoints' copies of them into the
file) and read from it (`read_bytes`), and the bytes it asked to write (`wchar`). SQLite writes
each page a commit changed to its WAL whatever its key; what an index's order can save there is
the checkpoints' writes (a page changed by many commits is copied once) and the reads.

Usage: write_volume.py --base postgres://postgres@127.0.0.1:55432 --template scale_1000000
           --out FILE [--seconds 60] [--warmup 15] [--connections 64] [--cold] [--scenario refresh]
           NAME=GATEHOUSE ...
       write_volume.py --sqlite scale_100000.sqlite --out FILE [...] NAME=GATEHOUSE ...
BENCH_SERVER_ENV must give the server's GATEHOUSE_SECRET_KEY, as for run.py.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wrk"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import idle_sweep  # noqa: E402  (drop_caches, empty_page_cache)
from idle_sweep import query  # noqa: E402
import run  # noqa: E402  (server_with_retention, CONTROL_RETENTION_DAYS)

COPY = "write_volume_copy"
WAL = "SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal"
DATABASE = f"SELECT blks_read, blks_hit, xact_commit FROM pg_stat_database WHERE datname = '{COPY}'"
INDEXES = "SELECT indexrelname, idx_blks_read, idx_blks_hit FROM pg_statio_user_indexes"


def counters(url):
    wal = query(url, WAL)[0]
    database = query(url, DATABASE)[0]
    return {
        "wal_records": int(wal[0]), "wal_fpi": int(wal[1]), "wal_bytes": float(wal[2]),
        "blks_read": int(database[0]), "blks_hit": int(database[1]), "commits": int(database[2]),
        "indexes": {name: (int(read), int(hit)) for name, read, hit in query(url, INDEXES)},
    }


def process_io(pid):
    """The process's `/proc/PID/io` counters."""
    with open(f"/proc/{pid}/io") as handle:
        return {key: int(value) for key, value in (line.split(": ") for line in handle.read().splitlines())}


def counted_load(binary, url, name, args, read, before_counting=None):
    """A server of BINARY on `url`: --warmup seconds of the scenario not counted, then `read()`
    around --seconds of it. Answers the load's figures and the counters' differences by request
    (the load signs up its accounts first: their writes are counted too, beside the requests')."""
    run_dir = tempfile.mkdtemp(prefix=f"gatehouse-write-volume-{name}-")
    server = run.server_with_retention(binary, url, run_dir, run.CONTROL_RETENTION_DAYS)
    connections = args.connections - args.connections % 2
    try:
        server.start()
        if args.warmup:
            harness.load(server, {"scenarios": {}}, argparse.Namespace(seconds=args.warmup, hash="none", warmup=0), [args.scenario],
                         2, connections, run_dir, f"{name} warm-up (not counted)")
        if before_counting:
            before_counting()
        before = read(server)
        part = {"scenarios": {}}
        harness.load(server, part, argparse.Namespace(seconds=args.seconds, hash="none", warmup=0), [args.scenario], 2,
                     connections, run_dir, name)
        after = read(server)
    finally:
        server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
    load = part["scenarios"][args.scenario]
    requests = load["requests"]
    figures = {
        "name": name, "binary": binary, "scenario": args.scenario, "requests": requests, "signups": part.get("accounts"),
        "requests_per_second": load["requests_per_second"], "p50_ms": load["latency_ms"].get("p50"), "p99_ms": load["latency_ms"]["p99"],
        "statuses": load["statuses"],
    }
    return figures, before, after, requests


def one_sqlite_run(name, binary, args):
    directory = tempfile.mkdtemp(prefix=f"gatehouse-write-volume-{name}-copy-")
    copy = os.path.join(directory, "copy.sqlite")
    for suffix in ("", "-wal"):
        if os.path.exists(args.sqlite + suffix):
            shutil.copyfile(args.sqlite + suffix, copy + suffix)
    if args.cold:
        idle_sweep.empty_page_cache()
    try:
        figures, before, after, requests = counted_load(binary, f"sqlite://{copy}", name, args, lambda server: process_io(server.process.pid))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    figures["per_request"] = {key: round((after[key] - before[key]) / requests, 1) for key in ("write_bytes", "read_bytes", "wchar", "syscw")}
    return figures


def one_run(name, binary, args):
    admin = f"{args.base}/postgres"
    query(admin, f"DROP DATABASE IF EXISTS {COPY}")
    query(admin, f"CREATE DATABASE {COPY} TEMPLATE {args.template}")
    if args.cold:
        idle_sweep.drop_caches(args.base)
    url = f"{args.base}/{COPY}?sslmode=disable"
    try:
        figures, before, after, requests = counted_load(binary, url, name, args, lambda _: counters(url),
                                                        before_counting=lambda: query(url, "CHECKPOINT"))
    finally:
        query(admin, f"DROP DATABASE IF EXISTS {COPY}")
    per = lambda key: round((after[key] - before[key]) / requests, 2)  # noqa: E731
    indexes = {}
    for index, (read, hit) in after["indexes"].items():
        was = before["indexes"].get(index, (0, 0))
        touched = (read - was[0]) + (hit - was[1])
        if touched:
            indexes[index] = {"read": round((read - was[0]) / requests, 3), "touched": round(touched / requests, 2)}
    figures["per_request"] = {key: per(key) for key in ("wal_bytes", "wal_records", "wal_fpi", "blks_read", "blks_hit", "commits")}
    figures["indexes_per_request"] = dict(sorted(indexes.items(), key=lambda item: -item[1]["read"]))
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="the cluster's URL without a database")
    parser.add_argument("--template", help="the loaded database, copied for each run")
    parser.add_argument("--sqlite", help="a loaded SQLite file, copied for each run (instead of --base and --template)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--scenario", default="login", choices=["login", "refresh"], help="harness.py's scenario to count")
    parser.add_argument("--cold", action="store_true", help="empty the kernel's page cache after each copy is made (root only)")
    parser.add_argument("builds", nargs="+", help="NAME=GATEHOUSE")
    args = parser.parse_args()
    if not args.sqlite and not (args.base and args.template):
        parser.error("give --base and --template, or --sqlite")
    runs = []
    for build in args.builds:
        name, _, binary = build.partition("=")
        harness.log(f"{name}: {args.scenario} on a copy of {args.sqlite or args.template}")
        runs.append(one_sqlite_run(name, binary, args) if args.sqlite else one_run(name, binary, args))
        with open(args.out, "w") as handle:
            json.dump({"template": args.sqlite or args.template, "scenario": args.scenario, "seconds": args.seconds, "warmup": args.warmup, "cold": args.cold, "runs": runs}, handle,
                      indent=1)
    if args.sqlite:
        print(f"{args.scenario}: per request")
        print("| run | requests/s | p99 ms | bytes written | bytes read | bytes asked to write | writes |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for one in runs:
            figures = one["per_request"]
            print(f"| {one['name']} | {one['requests_per_second']} | {one['p99_ms']} | {figures['write_bytes']:,.0f} | {figures['read_bytes']:,.0f} "
                  f"| {figures['wchar']:,.0f} | {figures['syscw']} |")
        return
    print(f"{args.scenario}: per request")
    print("| run | requests/s | p99 ms | WAL bytes | records | full pages | pages read | pages read, top indexes |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for one in runs:
        figures = one["per_request"]
        top = ", ".join(f"{index} {value['read']}" for index, value in list(one["indexes_per_request"].items())[:5])
        print(f"| {one['name']} | {one['requests_per_second']} | {one['p99_ms']} | {figures['wal_bytes']:,.0f} | {figures['wal_records']} "
              f"| {figures['wal_fpi']} | {figures['blks_read']} | {top} |")


if __name__ == "__main__":
    main()
