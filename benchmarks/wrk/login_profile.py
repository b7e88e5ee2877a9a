#!/usr/bin/env python3
"""What a password login costs beyond its hash (issue 61: a login costs at most 1.1 hashes of CPU).

  login_profile.py --binary PATH --workdir DIR --out FILE [--rounds 3] [--seconds 30] [--record 12]
                   [--connections 64] [--settings 'KEY=VALUE ...'] [--database-url URL]

Starts one `gatehouse serve` on a new SQLite file (or on `--database-url`'s database) at Keycloak's
hash cost (Argon2id, 7 MiB, t=5, p=1; `--settings` replaces it), signs up one account per
connection, and in each round loads `POST /v1/auth/login` with wrk for `seconds` while `perf record
-F 999 -g` samples the server for `record` seconds from the middle of the load. A sample is the
hash's when any frame of its stack is in the Argon2id code (Gatehouse's own kernel,
`gatehouse_argon2id`, libsodium's or the reference library's); every other sample of the server's is
work beyond the hash. A login's CPU in hashes is then 1 + beyond ÷ hash. Prints each round's figure
and the frames most often on the stacks beyond the hash, and writes them to `out`. Needs root (perf)
and wrk.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

KEYCLOAK_COST = "GATEHOUSE_ARGON2_MEMORY_KIB=7168 GATEHOUSE_ARGON2_ITERATIONS=5 GATEHOUSE_ARGON2_PARALLELISM=1"

# A frame of the hash: Gatehouse's Argon2id (its kernels are `compress*`), libsodium's, the
# reference build's.
HASH_FRAME = re.compile(r"gatehouse_argon2|compress|argon2|blake2|Argon2Implementation", re.IGNORECASE)


def samples(data):
    """(thread name, [frame symbols, innermost first]) for each sample of `data`."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym"], capture_output=True, text=True, check=True).stdout
    for block in out.split("\n\n"):
        lines = [line.strip() for line in block.strip().splitlines() if line.strip()]
        if lines:
            yield lines[0].split()[0], [line.split(None, 1)[1] if " " in line else line for line in lines[1:]]


def classify(data):
    hash_samples, beyond = 0, 0
    threads, frames = collections.Counter(), collections.Counter()
    for thread, stack in samples(data):
        if any(HASH_FRAME.search(frame) for frame in stack):
            hash_samples += 1
            continue
        beyond += 1
        threads[thread] += 1
        for frame in set(stack):
            frames[frame] += 1
    return hash_samples, beyond, threads, frames


def demangle(names):
    result = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names), capture_output=True, text=True)
    lines = result.stdout.splitlines() if result.returncode == 0 else []
    return lines if len(lines) == len(names) else names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--record", type=int, default=12)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--settings", default=KEYCLOAK_COST)
    parser.add_argument("--database-url", help="the server's database (default: a new SQLite file in the workdir)")
    args = parser.parse_args()
    if args.record + 4 > args.seconds:
        raise SystemExit("--record must leave at least 4 s of the load around it")
    os.makedirs(args.workdir)
    threads = min(2, args.connections)
    connections = args.connections - args.connections % threads
    database = args.database_url or f"sqlite://{args.workdir}/bench.sqlite"
    server = harness.Server(args.binary, database, args.workdir, args.settings.split())
    accounts_file = os.path.join(args.workdir, "accounts.lua")
    report = {"machine": harness.machine_info(), "git": harness.git_info(), "binary": harness.file_info(args.binary),
              "database": database.split(":", 1)[0], "settings": args.settings.split(), "seconds": args.seconds, "record_seconds": args.record,
              "connections": connections, "rounds": []}
    total_frames = collections.Counter()
    try:
        server.start()
        harness.write_accounts(accounts_file, harness.seed(server.port, connections, harness.random_tag()))
        for index in range(args.rounds + 1):
            label = "warmup" if index == 0 else f"round-{index}"
            seconds = 4 if index == 0 else args.seconds
            running = harness.start_wrk("login", "login.lua", server.port, threads, connections, seconds, accounts_file,
                                        args.workdir, label)
            profiler = None
            if index > 0:
                time.sleep((args.seconds - args.record) / 2)
                data = os.path.join(args.workdir, f"{label}.data")
                profiler = harness.start_profiler(server.process.pid, data, args.record)
                profiler.wait()
            raw = harness.finish_wrk(*running, label, seconds)
            unexpected = {status: n for status, n in raw["statuses"].items() if int(status) not in harness.EXPECTED["login"][1]}
            if unexpected:
                raise SystemExit(f"{label}: unexpected answers {unexpected}")
            if profiler is None:
                continue
            hash_samples, beyond, by_thread, frames = classify(data)
            if hash_samples == 0:
                raise SystemExit(f"{label}: no sample was in the hash; is the server hashing with Argon2id?")
            total_frames.update(frames)
            per_second = round(raw["requests"] / (raw["duration_us"] / 1e6), 1) if raw.get("duration_us") else 0
            row = {"logins_per_second": per_second, "hash_samples": hash_samples, "beyond_samples": beyond,
                   "login_in_hashes": round(1 + beyond / hash_samples, 4), "beyond_by_thread": dict(by_thread.most_common())}
            report["rounds"].append(row)
            print(f"{label}: {per_second} logins/s; {hash_samples} samples in the hash, {beyond} beyond it: "
                  f"a login costs {row['login_in_hashes']:.4f} hashes")
    finally:
        server.stop()
    top = total_frames.most_common(60)
    report["beyond_frames"] = [{"samples": count, "frame": name} for (_, count), name in zip(top, demangle([name for name, _ in top]))]
    with open(args.out, "w") as handle:
        json.dump(report, handle, indent=2)
    figures = [row["login_in_hashes"] for row in report["rounds"]]
    print(f"a login costs {min(figures):.4f}–{max(figures):.4f} hashes over {len(figures)} rounds; wrote {args.out}")


if __name__ == "__main__":
    main()
