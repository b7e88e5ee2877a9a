#!/usr/bin/env python3
"""Where a route's server CPU goes beside the static route's, per request (issue 61).

  profile_routes.py --binary PATH --workdir DIR --out FILE [--routes "jwks me check"]
                    [--rounds 3] [--seconds 6] [--connections 64] [--settings 'KEY=VALUE ...']

Starts one `gatehouse serve` on a new SQLite file (the harness's settings and accounts), then
loads each route in turn, the order rotated each round, recording the server with
`perf record -F 999 -e cpu-clock -g` for each slice. Each sample is about a millisecond of the
server's CPU, so a part's samples ÷ the route's requests is its CPU per request. The parts are
the Swift module a symbol's mangled name starts with (`$s<length><module>`), or its shared
object when it is not Swift (the kernel, libc, libswiftCore, Foundation, …).

Writes FILE (JSON: each route's requests, CPU ms per request from /proc and from the samples,
µs per request of each part and symbol, and each Gatehouse function's inclusive µs per request:
itself and what it called, as far as the sampled stack shows) and prints, per part, each route's
µs per request and its difference from the first route's, then the symbols that differ most, then
Gatehouse's functions by inclusive cost.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SWIFT_MODULE = re.compile(r"\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)")


def part_of(symbol, dso):
    """The Swift module of a mangled symbol, else its shared object's name."""
    match = SWIFT_MODULE.match(symbol)
    if match:
        length = int(match.group(1))
        return match.group(2)[:length]
    return os.path.basename(dso.strip("()")) or "?"


def parts(perf_data):
    """Samples by part and by symbol, each sample counted once for its leaf frame (self time),
    and by Gatehouse function anywhere on the sample's stack (inclusive time: what the function
    and everything it called cost, as far as the stack shows it: an async function's stack ends
    where it was last resumed)."""
    script = subprocess.run(["perf", "script", "-i", perf_data, "-F", "ip,sym,dso", "--no-demangle"],
                            capture_output=True, text=True, check=False).stdout
    counts = collections.Counter()
    symbols = collections.Counter()
    inclusive = collections.Counter()
    total = 0
    leaf_next = True
    on_stack = set()
    for line in script.splitlines() + [""]:
        if not line.strip():
            inclusive.update(on_stack)
            on_stack = set()
            leaf_next = True
            continue
        fields = line.split(None, 1)
        rest = fields[1] if len(fields) > 1 else ""
        dso = rest[rest.rfind("(") :] if "(" in rest else ""
        symbol = rest[: rest.rfind("(")].strip() if "(" in rest else rest
        symbol = re.sub(r"\+0x[0-9a-f]+$", "", symbol)
        part = part_of(symbol, dso)
        if part.startswith("Gatehouse"):
            on_stack.add(symbol)
        if leaf_next:
            counts[part] += 1
            symbols[symbol or dso] += 1
            total += 1
            leaf_next = False
    return total, counts, symbols, inclusive


def demangled(names):
    """`swift demangle --simplified` of each name (unchanged when it is not Swift's)."""
    result = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names), capture_output=True, text=True, check=False)
    lines = result.stdout.splitlines()
    return lines if len(lines) == len(names) else names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.RouteBench.add_arguments(parser, seconds=6, connections=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bench = harness.RouteBench(args)
    routes, server, connections = bench.routes, bench.server, bench.connections
    totals = {route: {"requests": 0, "cpu_seconds": 0.0, "samples": 0, "parts": collections.Counter(), "symbols": collections.Counter(),
                     "inclusive": collections.Counter()}
              for route in routes}
    try:
        bench.start()
        for round_index in range(args.rounds):
            shift = round_index % len(routes)
            for route in routes[shift:] + routes[:shift]:
                label = f"{route}-r{round_index + 1}"
                data = os.path.join(args.workdir, f"{label}.data")
                profiler = harness.start_profiler(server.process.pid, data, args.seconds)
                result = harness.run_scenario(server, label, bench.scripts[route], bench.threads, connections, args.seconds + 1,
                                              bench.accounts_file, args.workdir)
                profiler.wait(60)
                if result["unexpected_total"]:
                    raise SystemExit(f"{route}: unexpected answers or socket errors: {result['statuses']} {result['socket_errors']}")
                samples, counts, symbols, inclusive = parts(data)
                # The profile covers `seconds` of the slice's `seconds + 1`: its requests, pro rata.
                requests = result["requests"] * args.seconds / result["seconds"]
                row = totals[route]
                row["requests"] += requests
                row["cpu_seconds"] += result["server"]["cpu_seconds"] * args.seconds / result["seconds"]
                row["samples"] += samples
                row["parts"].update(counts)
                row["symbols"].update(symbols)
                row["inclusive"].update(inclusive)
    finally:
        server.stop()
    period_us = 1_000_000 / 999
    report = {"machine": harness.machine_info(), "git": harness.git_info(), "binary": harness.file_info(args.binary),
              "settings": args.settings.split(), "rounds": args.rounds, "seconds": args.seconds, "connections": connections,
              "routes": {}}
    for route, row in totals.items():
        report["routes"][route] = {
            "requests": round(row["requests"]),
            "cpu_ms_per_request": round(row["cpu_seconds"] / row["requests"] * 1000, 4),
            "sampled_ms_per_request": round(row["samples"] * period_us / row["requests"] / 1000, 4),
            "us_per_request": {part: round(count * period_us / row["requests"], 2) for part, count in row["parts"].most_common()},
            "symbols_us_per_request": {symbol: round(count * period_us / row["requests"], 2)
                                       for symbol, count in row["symbols"].most_common() if count * period_us / row["requests"] >= 0.2},
            "gatehouse_inclusive_us_per_request": {symbol: round(count * period_us / row["requests"], 2)
                                                   for symbol, count in row["inclusive"].most_common()
                                                   if count * period_us / row["requests"] >= 0.5},
        }
    with open(args.out, "w") as out:
        json.dump(report, out, indent=2)
    first = routes[0]
    names = sorted({part for row in report["routes"].values() for part in row["us_per_request"]},
                   key=lambda part: -max(row["us_per_request"].get(part, 0) for row in report["routes"].values()))
    print("| part | " + " | ".join(f"{route} µs" for route in routes) + " | " + " | ".join(f"{route} − {first}" for route in routes[1:]) + " |")
    print("|---|" + "---:|" * (2 * len(routes) - 1))
    for part in names:
        values = [report["routes"][route]["us_per_request"].get(part, 0) for route in routes]
        if max(values) < 1:
            continue
        print(f"| {part} | " + " | ".join(f"{value:.1f}" for value in values) + " | "
              + " | ".join(f"{value - values[0]:+.1f}" for value in values[1:]) + " |")
    # The symbols whose cost a request differs most from the first route's.
    symbols = sorted({symbol for row in report["routes"].values() for symbol in row["symbols_us_per_request"]})
    table = {symbol: [report["routes"][route]["symbols_us_per_request"].get(symbol, 0) for route in routes] for symbol in symbols}
    ranked = sorted(symbols, key=lambda symbol: -max(abs(value - table[symbol][0]) for value in table[symbol][1:]))[:40]
    print()
    print("| symbol | " + " | ".join(f"{route} µs" for route in routes) + " |")
    print("|---|" + "---:|" * len(routes))
    for symbol, name in zip(ranked, demangled(ranked)):
        print(f"| `{name[:110]}` | " + " | ".join(f"{value:.1f}" for value in table[symbol]) + " |")
    # Gatehouse's own functions by inclusive cost: where in its code a route's work sits.
    frames = sorted({symbol for row in report["routes"].values() for symbol in row["gatehouse_inclusive_us_per_request"]})
    table = {symbol: [report["routes"][route]["gatehouse_inclusive_us_per_request"].get(symbol, 0) for route in routes] for symbol in frames}
    ranked = sorted(frames, key=lambda symbol: -max(table[symbol]))[:30]
    print()
    print("| Gatehouse function, inclusive | " + " | ".join(f"{route} µs" for route in routes) + " |")
    print("|---|" + "---:|" * len(routes))
    for symbol, name in zip(ranked, demangled(ranked)):
        print(f"| `{name[:110]}` | " + " | ".join(f"{value:.1f}" for value in table[symbol]) + " |")
    for route in routes:
        row = report["routes"][route]
        print(f"{route}: {row['requests']:,} requests, {row['cpu_ms_per_request']} CPU ms a request (/proc), "
              f"{row['sampled_ms_per_request']} sampled")


if __name__ == "__main__":
    main()
