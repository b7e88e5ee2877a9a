#!/usr/bin/env python3
"""Every batch of a retention sweep with nothing else running, on PostgreSQL (issue 65): how long
each took, how many rows it changed and how many pages it read, per kind of sweep, each build in
turn on a fresh copy of one loaded database.

With nobody else using the database a sweep's batches grow by their time up to their most
(`BatchSizing`), so an idle sweep is where a batch is largest: in step 26 single batches clearing
old sessions' addresses took 125 to 215 ms there. `slow_statements.py` sees only the batches over the
log's threshold; this script logs every statement of the copy's database (`log_min_duration_statement`
0, and `auto_explain` with `log_analyze` and `log_buffers` but no timing of the plans' nodes, for
each batch's rows and buffers), set on the copy only (`ALTER DATABASE … SET`).

For each NAME=BINARY, in the order given (name them so each build runs early and late):
  1. `CREATE DATABASE … TEMPLATE TEMPLATE STRATEGY FILE_COPY` (the loaded database, untouched);
     with --cold, then a `CHECKPOINT`, `sync` and the kernel's page cache dropped, so that what
     the sweep touches is read from the disk (PostgreSQL's own buffers are not emptied);
  2. a server of BINARY on the copy with the Handz preset's retention at --days days, whose sweep
     starts with it; it runs until it logs its "retention sweep" line (at most --timeout s);
  3. the log's part written meanwhile is read: each sweep batch's time (its `execute`), its rows
     (the top plan node's actual rows) and its buffers read and hit, paired by the backend's pid,
     and the checkpoints' starts and ends (`log_checkpoints`, on by default since PostgreSQL 15),
     each batch over 50 ms with the checkpoint event nearest to it;
  4. the copy is dropped.
The cluster's WAL written from the server's start to the sweep's end (`pg_stat_wal`: bytes, records
and full-page images; the cluster's own counters, so nothing else may write meanwhile) and its
`max_wal_size` and `wal_compression` are kept with each run. Every --sample seconds (10) meanwhile
the WAL's position and what autovacuum's workers run are read: each run keeps the readings, and the
WAL's rate and share in the intervals that began with a worker running and in those without one
(autovacuum cleaning up after the sweep's deletes writes WAL the sweep's pace cannot hold back).
It prints, per run and kind of sweep that changed rows, the batches, rows, p50/p99/longest ms, the
batches over 50 and 100 ms, the largest batch and the slowest time a row, and writes every kind to
--out.

Usage: idle_sweep.py --base postgres://postgres@127.0.0.1:55432 --template scale_1000000
           --log /work/pg/server.log --out FILE [--days 90] [--timeout 900] [--cold] [--sample 10]
           NAME=GATEHOUSE ...
The cluster's `log_line_prefix` must begin with `%m [%p]` (time, pid), as Debian's does.
"""
import argparse
import json
import os
import re
import shutil
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
import run  # noqa: E402  (server_with_retention)
import slow_statements  # noqa: E402  (entries, is_sweep)

CHECKPOINT = re.compile(r"^(\S+ \S+) UTC \[\d+\] LOG:  checkpoint (starting|complete): (.*)$")
ACTUAL_ROWS = re.compile(r"actual rows=(\d+)")
BUFFERS = re.compile(r"Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?")
COPY = "idle_sweep_copy"


def psql(base, *commands):
    arguments = ["psql", f"{base}/postgres", "-qAtX", "-v", "ON_ERROR_STOP=1"]
    for command in commands:
        arguments += ["-c", command]
    subprocess.run(arguments, check=True)


def fresh_copy(base, template):
    # FILE_COPY copies the files and checkpoints around it; PostgreSQL 15's default (WAL_LOG)
    # writes the whole copy into the log (11 GB at 1M accounts: 18 checkpoints before each run).
    psql(base, f"DROP DATABASE IF EXISTS {COPY}", f"CREATE DATABASE {COPY} TEMPLATE {template} STRATEGY FILE_COPY")
    settings = {"log_min_duration_statement": "0", "session_preload_libraries": "'auto_explain'",
                "auto_explain.log_min_duration": "0", "auto_explain.log_analyze": "on",
                "auto_explain.log_buffers": "on", "auto_explain.log_timing": "off"}
    psql(base, "LOAD 'auto_explain'", *[f"ALTER DATABASE {COPY} SET {name} = {value}" for name, value in settings.items()])


def query(url, sql):
    """The rows `sql` answers on `url`, each a list of its columns as text."""
    out = subprocess.run(["psql", url, "-qAtX", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def wal_now(base):
    """The cluster's WAL written so far (`pg_stat_wal`, PostgreSQL 14 and later) and the two
    settings that decide how often it checkpoints and how large a full-page image is."""
    row = query(f"{base}/postgres", "SELECT wal_bytes, wal_records, wal_fpi, current_setting('max_wal_size'), "
                                    "current_setting('wal_compression') FROM pg_stat_wal")[0]
    return {"bytes": int(row[0]), "records": int(row[1]), "fpi": int(row[2]), "max_wal_size": row[3], "wal_compression": row[4]}


class WALSampler:
    """Reads the cluster's WAL position (`pg_current_wal_lsn()`) and what autovacuum's workers
    run (`pg_stat_activity`: `VACUUM public.audit_log`, …) every `interval` seconds on a thread of
    its own, from its start until it is stopped."""

    SQL = ("SELECT pg_current_wal_lsn() - '0/0', coalesce(string_agg(query, '|' ORDER BY query), '') "
           "FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'")

    def __init__(self, base, interval):
        self.url, self.interval = f"{base}/postgres", interval
        self.readings, self.stopping = [], threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while True:
            try:
                position, workers = (query(self.url, self.SQL)[0] + [""])[:2]
            except subprocess.CalledProcessError:
                # A reading missed (the cluster busy or restarting): the interval spans two.
                position = None
            if position is not None:
                self.readings.append({"at": round(time.time(), 1), "wal_bytes": int(position),
                                      "autovacuum": [work.removeprefix("autovacuum: ") for work in workers.split("|") if work]})
            if self.stopping.wait(self.interval):
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *failure):
        self.stopping.set()
        self.thread.join()

    def summary(self):
        """The WAL's rate in MiB/s and its share, over the intervals that began with an autovacuum
        worker running and over those that began without one, and what the workers ran."""
        spans = {True: [0, 0.0], False: [0, 0.0]}
        for before, after in zip(self.readings, self.readings[1:]):
            span = spans[bool(before["autovacuum"])]
            span[0] += after["wal_bytes"] - before["wal_bytes"]
            span[1] += after["at"] - before["at"]
        total = spans[True][0] + spans[False][0]

        def side(running):
            written, took = spans[running]
            return {"seconds": round(took, 1), "mib_per_second": round(written / 1_048_576 / took, 2) if took else None,
                    "share_of_wal": round(written / total, 3) if total else None}
        return {"interval_s": self.interval, "with_autovacuum": side(True), "without_autovacuum": side(False),
                "autovacuum_ran": sorted({work for reading in self.readings for work in reading["autovacuum"]})}


def seconds(at):
    """Seconds of the day of a log line's time (`2026-12-04 20:50:38.133`)."""
    clock = at.split(" ")[1]
    hours, minutes, rest = clock.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


def batches(log, start, end, checkpoints=None):
    """Each sweep batch in the log's part: its statement's first 60 characters, ms, rows,
    buffers, and the checkpoint event nearest to it (a checkpoint's start, after which a page's
    first change writes the whole page to the WAL, or its end, after its sync), with the seconds
    from the batch's start to it. A batch's plan (auto_explain, logged as its executor ends)
    comes before its statement's duration on the same backend. `checkpoints`, a list, gets each
    checkpoint event: its time, `starting` or `complete`, and the rest of its line."""
    plans = {}  # pid -> (rows, hit, read) of the last sweep plan
    found = []
    checkpoints = [] if checkpoints is None else checkpoints

    def note(line):
        checkpoint = CHECKPOINT.match(line)
        if checkpoint:
            checkpoints.append({"at": checkpoint.group(1), "event": checkpoint.group(2), "detail": checkpoint.group(3)[:120]})

    for entry in slow_statements.entries(log, start, end, other=note):
        if not slow_statements.is_sweep(entry["text"]):
            continue
        if entry["kind"] == "plan":
            text = " ".join(entry["plan"])
            rows = ACTUAL_ROWS.search(text)
            # The top node's buffers include its children's: the first line is the whole.
            buffers = BUFFERS.search(text)
            hit, read = (int(buffers.group(1) or 0), int(buffers.group(2) or 0)) if buffers else (0, 0)
            plans[entry["pid"]] = (int(rows.group(1)) if rows else None, hit, read)
        elif entry["phase"] == "execute":
            rows, hit, read = plans.pop(entry["pid"], (None, 0, 0))
            found.append({"at": entry["at"], "ms": entry["ms"], "rows": rows, "hit": hit, "read": read,
                          "statement": " ".join(entry["text"].split())[:60]})
    for batch in found:
        # The statement began `ms` before its line; the nearest checkpoint event is the one least
        # far from that span (0 within it), given from the batch's start.
        began, ended = seconds(batch["at"]) - batch["ms"] / 1000, seconds(batch["at"])
        nearest = min(checkpoints, default=None,
                      key=lambda point: max(0.0, began - seconds(point["at"]), seconds(point["at"]) - ended))
        batch["checkpoint"] = f"{nearest['event']} {seconds(nearest['at']) - began:+.2f} s" if nearest else None
    return found


def summary(found):
    kinds = {}
    for batch in found:
        kinds.setdefault(batch["statement"], []).append(batch)
    result = {}
    for kind, group in kinds.items():
        times = sorted(batch["ms"] for batch in group)
        rows = [batch["rows"] or 0 for batch in group]
        per_row = [batch["ms"] / batch["rows"] for batch in group if batch["rows"]]
        slowest = max(group, key=lambda batch: batch["ms"])
        result[kind] = {
            "batches": len(group), "rows": sum(rows),
            "p50_ms": round(statistics.median(times), 2),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2),
            "longest_ms": round(times[-1], 2), "over_50_ms": sum(1 for t in times if t > 50),
            "over_100_ms": sum(1 for t in times if t > 100), "largest_batch": max(rows),
            "slowest_ms_per_row": round(max(per_row), 3) if per_row else None,
            "slowest_batch": {key: slowest[key] for key in ("at", "ms", "rows", "hit", "read", "checkpoint")},
            "over_50_ms_batches": [{key: batch[key] for key in ("at", "ms", "rows", "read", "checkpoint")}
                                   for batch in group if batch["ms"] > 50],
            "pages_read": sum(batch["read"] for batch in group),
        }
    return dict(sorted(result.items(), key=lambda item: -item[1]["longest_ms"]))


def empty_page_cache():
    """Writes out dirty pages and empties the kernel's page cache (root only)."""
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as handle:
        handle.write("3\n")


def drop_caches(base):
    """Writes out the cluster's dirty pages and empties the kernel's page cache, so that the sweep
    reads what it touches from the disk (root only)."""
    psql(base, "CHECKPOINT")
    empty_page_cache()


def one_run(name, binary, args):
    fresh_copy(args.base, args.template)
    if args.cold:
        drop_caches(args.base)
    url = f"{args.base}/{COPY}?sslmode=disable"
    run_dir = tempfile.mkdtemp(prefix=f"gatehouse-idle-sweep-{name}-")
    start = os.path.getsize(args.log)
    server = run.server_with_retention(binary, url, run_dir, args.days)
    wal_before = wal_now(args.base)
    began = time.monotonic()
    ended = None
    with WALSampler(args.base, args.sample) as sampler:
        try:
            server.start()
            while time.monotonic() - began < args.timeout and server.process.poll() is None:
                with open(os.path.join(run_dir, "server.err")) as handle:
                    # The whole line: it ends with how long the sweep rested for what (`rested_for_*`).
                    ended = next((line.strip() for line in handle if '"msg":"retention sweep' in line), None)
                if ended:
                    break
                time.sleep(0.2)
        finally:
            server.stop()
    took = round(time.monotonic() - began, 1)
    wal_after = wal_now(args.base)
    wal = {key: wal_after[key] - wal_before[key] for key in ("bytes", "records", "fpi")}
    wal.update({key: wal_after[key] for key in ("max_wal_size", "wal_compression")})
    time.sleep(1)
    checkpoints = []
    found = batches(args.log, start, os.path.getsize(args.log), checkpoints)
    psql(args.base, f"DROP DATABASE IF EXISTS {COPY}")
    shutil.rmtree(run_dir, ignore_errors=True)
    return {"name": name, "binary": binary, "seconds": took, "sweep_log": ended, "checkpoints": checkpoints,
            "wal": wal, "wal_samples": sampler.summary(), "wal_readings": sampler.readings, "kinds": summary(found)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the cluster's URL without a database")
    parser.add_argument("--template", required=True, help="the loaded database each run copies")
    parser.add_argument("--log", required=True, help="the cluster's log file")
    parser.add_argument("--out", required=True)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--cold", action="store_true", help="empty the page cache before each server starts (root)")
    parser.add_argument("--sample", type=float, default=10, help="seconds between two readings of the WAL and autovacuum")
    parser.add_argument("builds", nargs="+", metavar="NAME=GATEHOUSE")
    args = parser.parse_args()
    runs = []
    for build in args.builds:
        name, binary = build.split("=", 1)
        harness.log(f"{name}: a sweep with nothing else running on a copy of {args.template}")
        result = one_run(name, binary, args)
        runs.append(result)
        begun = [point for point in result["checkpoints"] if point["event"] == "starting"]
        by_wal = sum(1 for point in begun if point["detail"].startswith("wal"))
        print(f"{name}: {result['seconds']} s{'' if result['sweep_log'] else ', the sweep did not end'}, "
              f"{len(begun)} checkpoints begun ({by_wal} by the WAL's size); WAL {result['wal']['bytes'] / 1_048_576:.0f} MiB, "
              f"{result['wal']['fpi']} full-page images (max_wal_size {result['wal']['max_wal_size']}, "
              f"wal_compression {result['wal']['wal_compression']})")
        samples = result["wal_samples"]
        print(f"  WAL with autovacuum running: {samples['with_autovacuum']}; without: {samples['without_autovacuum']}")
        for kind, row in result["kinds"].items():
            if not row["rows"]:
                continue  # in the JSON only
            print(f"  {kind}: {row['batches']} batches, {row['rows']} rows, p50 {row['p50_ms']} p99 {row['p99_ms']} "
                  f"longest {row['longest_ms']} ms, over 50 ms {row['over_50_ms']}, over 100 ms {row['over_100_ms']}, "
                  f"largest {row['largest_batch']}, slowest {row['slowest_ms_per_row']} ms a row")
            for batch in row["over_50_ms_batches"]:
                print(f"    {batch['ms']} ms at {batch['at']}: {batch['rows']} rows, {batch['read']} pages read, "
                      f"the nearest checkpoint event: {batch['checkpoint']} from its start")
        with open(args.out, "w") as handle:
            json.dump({"template": args.template, "days": args.days, "cold": args.cold, "runs": runs}, handle, indent=1)


if __name__ == "__main__":
    main()
