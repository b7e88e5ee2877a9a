#!/usr/bin/env python3
"""A server restarted on a loaded database under a login load (issue 65): what its first seconds
cost, builds in turns.

For each NAME=GATEHOUSE in turn, on the same SQLite FILE or PostgreSQL URL (loaded by
`gatehouse-bench load` and served once before, so that its expired rows are gone): runs --before
if given (a shell command, such as restarting PostgreSQL and dropping the page cache for a cold
start), starts the server with a retention no loaded row is older than (so its start-up sweep
has nothing of the year to delete), runs the login load from its start for 2 x --window seconds,
and records
  - the logins' p99 in the load's first window and in its second, from the server's own request
    log (the time each login took in the server, ending in that window);
  - each thread's CPU, sampled every 0.25 s: the server's start-up work shows as threads busy
    beside the logins' (NIO's blocking pool, `SGLTN-TP-*`, runs SQLite's reads; on PostgreSQL
    the reads are the database's, and the column reads 0).
The server is restarted, not copied to: a fresh copy of a file of gigabytes leaves the kernel
writing it back while the server's first commits wait on their fsyncs.

Usage: BENCH_SERVER_ENV="GATEHOUSE_SECRET_KEY=…" benchmarks/scale/restart.py (--file FILE | --url URL)
           [--before COMMAND] [--window 30] [--results DIR] NAME=GATEHOUSE ...
Give the names in an order that puts each build early and late (old new new old).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wrk"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import run  # noqa: E402  (server_with_retention, percentile)


def threads(pid):
    """CPU seconds of each thread of `pid`: {tid: (name, seconds)}."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[tid] = (stat[stat.index("(") + 1:stat.rindex(")")], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return found


def one_run(binary, url, window, workdir, label):
    # A retention no row of the loaded year is older than: the start-up sweep deletes none of it.
    server = run.server_with_retention(binary, url, workdir, run.CONTROL_RETENTION_DAYS)
    samples, stop = [], threading.Event()
    server.start()
    started = time.monotonic()

    def sample():
        last = threads(server.process.pid)
        while not stop.wait(0.25):
            now = threads(server.process.pid)
            busy = {}
            for tid, (name, seconds) in now.items():
                busy[name] = busy.get(name, 0.0) + seconds - last.get(tid, (name, 0.0))[1]
            samples.append((time.monotonic() - started, busy))
            last = now

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        wrk = {"scenarios": {}}
        harness.load(server, wrk, argparse.Namespace(seconds=2 * window, hash="none", warmup=0), ["login"], 2, 64, workdir, label)
    finally:
        stop.set()
        sampler.join()
        server.stop()
    with open(os.path.join(workdir, "server.err")) as handle:
        logins = [json.loads(line) for line in handle if '"msg":"request"' in line and "/login" in line]
    load_start = min(entry["ts"] - float(entry["duration_ms"]) / 1000 for entry in logins)

    def p99(low, high):
        times = [float(entry["duration_ms"]) for entry in logins if low <= entry["ts"] - load_start < high]
        return {"p99_ms": round(run.percentile(times, 0.99), 1), "logins": len(times)} if times else None

    by_thread = {}
    for at, busy in samples:
        if at < 15:
            for name, seconds in busy.items():
                by_thread[name] = by_thread.get(name, 0.0) + seconds
    row = wrk["scenarios"]["login"]
    return {"label": label, "requests_per_second": row["requests_per_second"], "p99_ms": row["latency_ms"]["p99"],
            "first_window": p99(0, window), "second_window": p99(window, 2 * window + 5),
            "cpu_first_15_s_by_thread": {name: round(seconds, 2) for name, seconds in sorted(by_thread.items()) if seconds >= 0.05},
            "reads_cpu_first_15_s": round(sum(seconds for name, seconds in by_thread.items() if name.startswith("SGLTN-TP")), 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--file", help="a loaded SQLite file")
    where.add_argument("--url", help="a loaded PostgreSQL database's URL")
    parser.add_argument("--before", help="a shell command run before each start (e.g. restarting PostgreSQL)")
    parser.add_argument("--window", type=int, default=30)
    parser.add_argument("--results", default=os.path.join(HERE, "..", "results"))
    parser.add_argument("runs", nargs="+", help="NAME=GATEHOUSE")
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    url = args.url or f"sqlite://{os.path.abspath(args.file)}"
    runs = []
    for index, spec in enumerate(args.runs):
        name, binary = spec.split("=", 1)
        workdir = tempfile.mkdtemp(prefix=f"gatehouse-restart-{name}-")
        if args.before:
            subprocess.run(args.before, shell=True, check=True)
        row = one_run(binary, url, args.window, workdir, f"{name} #{index + 1}")
        row["name"] = name
        runs.append(row)
        print(json.dumps(row), flush=True)
    out = os.path.join(args.results, f"restart-{stamp}-{'postgres' if args.url else 'sqlite'}.json")
    where = {"url": args.url} if args.url else {"file": os.path.abspath(args.file)}
    with open(out, "w") as handle:
        json.dump({**where, "before": args.before, "window_s": args.window, "runs": runs}, handle, indent=2)
    for name in dict.fromkeys(row["name"] for row in runs):
        mine = [row for row in runs if row["name"] == name]
        first = [row["first_window"]["p99_ms"] / row["second_window"]["p99_ms"] for row in mine]
        print(f"{name}: first window's p99 over the second's, mean {statistics.mean(first):.2f} ({', '.join(f'{v:.2f}' for v in first)}); "
              f"reads' CPU in the first 15 s {', '.join(str(row['reads_cpu_first_15_s']) for row in mine)} s")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
