#!/usr/bin/env python3
"""The retention sweep under a login load (issue 65), run several times in turns on copies of one
loaded file, so that builds compare by more than one run each.

One run of `run.py --sweep-days` on a fresh copy of a loaded file spends most of its time on the
server's first start-up work (at 1M accounts on SQLite, 340-470 s of expired rows and the year's
oldest audit rows), and its two login loads are its whole evidence. This script:
  1. with --prepare BINARY, starts that server once on MASTER/scale_N.sqlite (a file loaded by
     `gatehouse-bench load`, its report beside it) and waits until its start-up work is over, so
     that each run starts from a file that work has already been done on;
  1b. gives the master's free pages back (the server gives back at most 50,000 a sweep, and a
     run's control would spend its load doing it);
  2. for each NAME=BINARY in turn, copies MASTER's file and report into a work directory, runs
     run.py on the copy (the hot paths, then the sweep at --sweep-days under the login load, each
     load --seconds long), keeps its JSON as RESULTS/scale-STAMP-1m-sqlite-sweep-NAME.json (1m for 1M accounts) and
     deletes the copy (run.py's sweep changes it);
  3. prints each run's login alone and beside the sweep, and per name the ratios' mean and range.

Usage: benchmarks/scale/sweep_turns.py --master DIR --bench GATEHOUSE_BENCH [--prepare GATEHOUSE]
           [--size 1000000] [--seconds 30] [--sweep-days 90] [--sweep-warmup 30] [--work DIR] NAME=GATEHOUSE ...
Give the names in an order that puts each build early and late (base pace pace base), so that a
host that drifts during the runs weighs on both.
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wrk"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import run  # noqa: E402  (until_idle)


def prepare(binary, master, size):
    """Runs the server once on the master file until its start-up work is over."""
    workdir = tempfile.mkdtemp(prefix="gatehouse-sweep-prepare-")
    server = harness.Server(binary, f"sqlite://{os.path.join(master, f'scale_{size}.sqlite')}", workdir)
    try:
        server.start()
        seconds = run.until_idle(server.process.pid)
        harness.log(f"start-up work on the master: {seconds} s")
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def give_back_free_pages(master, size):
    """Gives the master's free pages back to the file system, so that no run's server spends its
    first seconds doing so (each sweep gives back at most 50,000): the control then sweeps and
    reclaims nothing, and the sweep's own reclaim comes after what it deletes."""
    path = os.path.join(master, f"scale_{size}.sqlite")
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        if free:
            # The pragma gives back one page a step, and Python's module steps a statement that
            # answers no columns once: one page per call, in one transaction.
            connection.execute("BEGIN")
            for _ in range(free):
                connection.execute("PRAGMA incremental_vacuum")
            connection.execute("COMMIT")
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            left = connection.execute("PRAGMA freelist_count").fetchone()[0]
            harness.log(f"the master's free pages given back: {free - left} of {free}")
    finally:
        connection.close()


def one_run(args, name, binary):
    """One run of run.py on a fresh copy of the master; answers its result file's path."""
    work = args.work or tempfile.mkdtemp(prefix="gatehouse-sweep-turn-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        for suffix in ("", ".load.json"):
            shutil.copyfile(os.path.join(args.master, f"scale_{args.size}.sqlite{suffix}"), os.path.join(work, f"scale_{args.size}.sqlite{suffix}"))
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        size = f"{args.size // 1_000_000}m" if args.size % 1_000_000 == 0 else f"{args.size // 1000}k"
        out = os.path.join(args.results, f"scale-{stamp}-{size}-sqlite-sweep-{name}.json")
        subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--binary", binary, "--bench", args.bench, "--out", out,
                        "--sizes", str(args.size), "--databases", "sqlite", "--console-requests", "5",
                        "--sweep-days", str(args.sweep_days), "--sweep-warmup", str(args.sweep_warmup), "--sessions", "0",
                        "--seconds", str(args.seconds), "--reuse", work],
                       check=True, stdout=subprocess.DEVNULL)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summary(path):
    with open(path) as handle:
        part = json.load(handle)["parts"][0]
    alone, sweep = part["scenarios"]["login"], part["sweep"]
    control = sweep.get("control", {})
    return {"alone_rps": alone["requests_per_second"], "alone_p99_ms": alone["p99_ms"],
            "beside_rps": sweep["login_requests_per_second"], "beside_p99_ms": sweep["login_p99_ms"],
            "ratio": sweep.get("p99_ratio"), "writer_waits": sweep["pool_waits_during_load"],
            "control_rps": control.get("login_requests_per_second"), "control_p99_ms": control.get("login_p99_ms"),
            "ratio_to_control": sweep.get("p99_ratio_to_control"),
            "sweep_outlasted_load": sweep["sweep_outlasted_load"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--master", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--prepare")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--sweep-days", type=int, default=90)
    parser.add_argument("--sweep-warmup", type=int, default=30, help="run.py's: seconds of logins not recorded before each load")
    parser.add_argument("--work")
    parser.add_argument("--results", default=os.path.join(HERE, "..", "results"))
    parser.add_argument("runs", nargs="+", help="NAME=GATEHOUSE")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare, args.master, args.size)
    give_back_free_pages(args.master, args.size)
    ratios = {}
    for spec in args.runs:
        name, binary = spec.split("=", 1)
        path = one_run(args, name, binary)
        row = summary(path)
        print(f"{name}: {os.path.basename(path)} {json.dumps(row)}", flush=True)
        for key in ("ratio", "ratio_to_control"):
            if row[key]:
                ratios.setdefault((name, key), []).append(row[key])
    for (name, key), values in ratios.items():
        print(f"{name}: {key} mean {statistics.mean(values):.2f}, range {min(values)}-{max(values)}, {len(values)} runs")


if __name__ == "__main__":
    main()
