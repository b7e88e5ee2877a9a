#!/usr/bin/env python3
"""How many times a request calls the runtime's costly entry points, per route (issue 61).

  count_calls.py --binary PATH --workdir DIR --out FILE [--routes "jwks me check"] [--seconds 4]
                 [--connections 16] [--settings 'KEY=VALUE ...']

Timings on this shared 2-core host move by 10-20 % between runs; call counts do not. This puts
`perf probe` uprobes on the Swift runtime's and libc's entry points a request's awaits, copies and
allocations go through (`swift_task_switch`, `swift_task_alloc`, `swift_task_create`,
`swift_job_run`, a cancellation handler added, a task-local pushed, `swift_retain`, `malloc`)
and counts the server's system calls and context switches,
starts one `gatehouse serve` on a new SQLite file (the harness's settings and accounts), loads
each route for `seconds` under `perf stat` on the server, and prints each probe's calls per
request beside the first route's. Needs root (uprobes). The probes are removed afterwards.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROBES = [
    ("libswift_Concurrency.so", "swift_task_switch"),
    ("libswift_Concurrency.so", "swift_task_alloc"),
    ("libswift_Concurrency.so", "swift_task_create"),
    ("libswift_Concurrency.so", "swift_job_run"),
    ("libswift_Concurrency.so", "swift_task_addCancellationHandler"),
    ("libswift_Concurrency.so", "swift_task_localValuePush"),
    ("libswiftCore.so", "swift_retain"),
    ("libswiftCore.so", "swift_allocObject"),
    ("libc.so.6", "malloc"),
]

# Kernel events counted beside the probes: system calls and the scheduler's switches.
KERNEL_EVENTS = [("raw_syscalls:sys_enter", "syscalls"), ("context-switches", "context switches")]


def library(binary, name):
    """The path `binary` loads `name` from (ldd)."""
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == name and len(parts) >= 3:
            return parts[2]
    raise SystemExit(f"{binary} does not load {name}")


def add_probes(binary):
    events = []
    for name, symbol in PROBES:
        path = library(binary, name)
        group = "probe_" + name.split(".so")[0].replace(".", "_").replace("-", "_")
        subprocess.run(["perf", "probe", "-q", "-x", path, "--add", symbol], capture_output=True, text=True)
        events.append((f"{group}:{symbol}", symbol))
    listed = subprocess.run(["perf", "probe", "-l"], capture_output=True, text=True).stdout
    missing = [event for event, _ in events if event not in listed]
    if missing:
        raise SystemExit(f"uprobes not added (root and a kernel with uprobes are needed): {missing}")
    return events + KERNEL_EVENTS


def remove_probes(events):
    for event, _ in events:
        if event.startswith("probe_"):
            subprocess.run(["perf", "probe", "-q", "--del", event], capture_output=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.RouteBench.add_arguments(parser, seconds=4, connections=16)
    args = parser.parse_args()
    bench = harness.RouteBench(args)
    routes, server = bench.routes, bench.server
    events = add_probes(args.binary)
    names = dict(events)
    report = {"machine": harness.machine_info(), "git": harness.git_info(), "binary": harness.file_info(args.binary),
              "settings": args.settings.split(), "seconds": args.seconds, "connections": bench.connections, "routes": {}}
    try:
        bench.start()
        for route in routes:
            stat_path = os.path.join(args.workdir, f"{route}.stat")
            stat = subprocess.Popen(["perf", "stat", "-x", ",", "-o", stat_path, "-p", str(server.process.pid)]
                                    + [arg for event, _ in events for arg in ("-e", event)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            raw = bench.load(route, args.seconds, f"count-{route}")
            stat.send_signal(2)
            stat.wait(30)
            counts = {}
            with open(stat_path) as handle:
                for line in handle:
                    fields = line.strip().split(",")
                    if len(fields) > 2 and fields[2] in names:
                        counts[names[fields[2]]] = int(fields[0]) if fields[0].isdigit() else 0
            expected = harness.EXPECTED[route][1]
            unexpected = {status: n for status, n in raw["statuses"].items() if int(status) not in expected}
            if unexpected:
                raise SystemExit(f"{route}: unexpected answers {unexpected}")
            # perf stat ends a moment after wrk: the requests wrk counted are the ones the counts cover.
            report["routes"][route] = {"requests": raw["requests"],
                                       "per_request": {symbol: round(counts.get(symbol, 0) / raw["requests"], 2) for _, symbol in events}}
    finally:
        server.stop()
        remove_probes(events)
    with open(args.out, "w") as handle:
        json.dump(report, handle, indent=2)
    first = routes[0]
    print("| call | " + " | ".join(routes) + " | " + " | ".join(f"{route} − {first}" for route in routes[1:]) + " |")
    print("|---|" + "---:|" * (2 * len(routes) - 1))
    for _, symbol in events:
        values = [report["routes"][route]["per_request"][symbol] for route in routes]
        print(f"| `{symbol}` | " + " | ".join(f"{value:.2f}" for value in values) + " | "
              + " | ".join(f"{value - values[0]:+.2f}" for value in values[1:]) + " |")


if __name__ == "__main__":
    main()
