#!/usr/bin/env python3
"""The console's filtered user lists (by provider, by plan) under scan budgets, in turns.

Each turn starts the server on one loaded SQLite file (no copy; the retention at a century, so
no sweep runs) with `GATEHOUSE_CONSOLE_SCAN_MILLISECONDS` at the turn's budget, signs in to the
console, asks each filtered page 10 times uncounted, then `--requests` times, and records the
p50, p90, p99 and worst time of each page and how many accounts each answer says it looked at.
A filtered page tests accounts 200 at a time until its page fills or its budget is spent, so its
time is the budget plus the host's jitter, and the budget trades its time against the accounts a
click covers (BENCHMARKS.md, issue 65, step 20). With `--busy N`, N processes spin on the CPU
through each turn's counted requests, to see the pages on a host that runs slow (step 21).

    python3 benchmarks/scale/console_filters.py --binary BIN --file scale_1000000.sqlite \\
        --budgets 30,20,30,20 --requests 300 --out RESULT.json
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wrk"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import run  # noqa: E402  (server_with_retention, Console, percentile)

PAGES = {"by provider (apple)": "/admin/users?provider=apple", "by plan (pro)": "/admin/users?plan=pro"}


def spinners(count):
    """`count` processes that spin on the CPU until they are killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def turn(binary, path, budget, requests, workdir, busy=0):
    """One server with `budget` ms of scan a page, and `busy` spinning processes while it is
    measured; each page's figures."""
    run_dir = tempfile.mkdtemp(prefix=f"budget-{budget}-", dir=workdir)
    server = run.server_with_retention(binary, f"sqlite://{path}", run_dir, run.CONTROL_RETENTION_DAYS)
    server.settings.append(f"GATEHOUSE_CONSOLE_SCAN_MILLISECONDS={budget}")
    server.start()
    try:
        time.sleep(5)
        console = run.Console(server.port)
        figures = {}
        for name, page in PAGES.items():
            console.timed(page, 10)
            times, looked = [], []
            spinning = spinners(busy)
            try:
                for _ in range(requests):
                    started = time.perf_counter()
                    status, _, text = console.request("GET", page, cookie=console.cookie)
                    times.append((time.perf_counter() - started) * 1000)
                    if status != 200:
                        raise RuntimeError(f"GET {page}: {status}")
                    found = re.search(r"looked at (\d+) accounts", text)
                    looked.append(int(found.group(1)) if found else 0)
            finally:
                for process in spinning:
                    process.kill()
                    process.wait()
            figures[name] = {
                "p50_ms": round(run.percentile(times, 0.5), 1), "p90_ms": round(run.percentile(times, 0.9), 1),
                "p99_ms": round(run.percentile(times, 0.99), 1), "worst_ms": round(max(times), 1),
                "accounts_looked_at_mean": round(sum(looked) / len(looked)), "requests": requests,
            }
            harness.log(f"budget {budget} ms, {name}: {figures[name]}")
        return {"budget_ms": budget, "busy_processes": busy, "pages": figures}
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--file", required=True, help="a loaded SQLite file (gatehouse-bench load)")
    parser.add_argument("--budgets", default="30,20,30,20", help="ms, one turn each, in this order")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU while each turn is measured")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="gatehouse-console-filters-")
    result = {"machine": harness.machine_info(), "git": harness.git_info(), "file": os.path.basename(args.file), "turns": []}
    for budget in [int(text) for text in args.budgets.split(",")]:
        result["turns"].append(turn(args.binary, os.path.abspath(args.file), budget, args.requests, workdir, args.busy))
        with open(args.out, "w") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
