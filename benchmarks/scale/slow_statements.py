#!/usr/bin/env python3
"""PostgreSQL's slow statements over a part of its log (issue 65): how long each kind of
statement took at most, and every sweep batch over the threshold with the plan it ran.

The cluster logs with `log_min_duration_statement` (a `duration: … ms  execute NAME: SQL` line per
slow statement) and, for the plans, `auto_explain` loaded with `auto_explain.log_min_duration` at
the same threshold and `auto_explain.log_analyze` off (a `duration: … ms  plan:` entry whose
indented lines are the query's text and its plan; no statement is instrumented for that). Only
the log's lines from byte FROM (to byte TO) are read: a run notes the log's size before it starts.

A sweep's batch is a statement whose inner select ends in `FOR UPDATE SKIP LOCKED` (SQLStore.sweep:
`key IN (SELECT …)` before step 15, `ctid = ANY(ARRAY(SELECT …))` since);
its plan is summarised by the scan that finds its rows (`Index Scan using audit_log_created`,
`Seq Scan on audit_log`…).

Usage: slow_statements.py --log FILE --from BYTE [--to BYTE] [--between HH:MM:SS HH:MM:SS] --out FILE
"""
import argparse
import json
import re

ENTRY = re.compile(r"^(\S+ \S+) UTC \[(\d+)\] LOG:  duration: ([\d.]+) ms  (.*)$")
STATEMENT = re.compile(r"^(?:(parse|bind|execute) [^:]+|statement): (.*)$")
SCAN = re.compile(r"((?:Seq Scan on|Index Scan using|Index Only Scan using|Index Scan Backward using|Bitmap Heap Scan on) \S+)")


def lines(path, start, end):
    """The log's lines from byte `start` to byte `end` (its end when 0), read one at a time: a
    loader's statements make the log gigabytes long."""
    with open(path, "rb") as handle:
        handle.seek(start)
        position = start
        for raw in handle:
            if end and position >= end:
                return
            position += len(raw)
            yield raw.decode("utf-8", "replace").rstrip("\r\n")


def entries(path, start, end, other=None):
    """(at, pid, ms, kind, phase, text, plan lines) for each logged duration: kind is "statement"
    or "plan"; a plan's text is its query's, read from the lines after it. Each other line that
    is not a plan's goes to `other` (a checkpoint's, say), in the log's order."""
    current = None
    for line in lines(path, start, end):
        match = ENTRY.match(line)
        if match:
            if current:
                yield current
            at, pid, ms, rest = match.group(1), match.group(2), float(match.group(3)), match.group(4)
            if rest == "plan:":
                current = {"at": at, "pid": pid, "ms": ms, "kind": "plan", "phase": None, "text": "", "plan": []}
            else:
                statement = STATEMENT.match(rest)
                phase, text = (statement.group(1) or "simple", statement.group(2)) if statement else (None, rest)
                current = {"at": at, "pid": pid, "ms": ms, "kind": "statement", "phase": phase, "text": text, "plan": []}
        elif current and current["kind"] == "plan" and line.startswith(("\t", " ")):
            stripped = line.strip()
            if stripped.startswith("Query Text: "):
                current["text"] = stripped[len("Query Text: "):]
            else:
                current["plan"].append(stripped)
        else:
            if current:
                yield current
                current = None
            if other:
                other(line)
    if current:
        yield current


def is_sweep(text):
    return "FOR UPDATE SKIP LOCKED" in text and re.search(r"(?: IN \(| = ANY\(ARRAY\()SELECT ", text) is not None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", required=True)
    parser.add_argument("--from", dest="start", type=int, required=True)
    parser.add_argument("--to", dest="end", type=int, default=0)
    parser.add_argument("--between", nargs=2, metavar=("FIRST", "LAST"), help="only entries logged between these times of day")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    by_statement, sweeps, plans = {}, [], {}
    for entry in entries(args.log, args.start, args.end):
        clock = entry["at"].split(" ")[1][:8]  # HH:MM:SS, as --between is given
        if args.between and not (args.between[0] <= clock <= args.between[1]):
            continue
        key = " ".join(entry["text"].split())[:60]
        if entry["kind"] == "plan":
            if is_sweep(entry["text"]):
                scans = sorted(set(SCAN.findall(" ".join(entry["plan"]))))
                summary = f"{key} | {', '.join(scans) or '?'}"
                plans.setdefault(summary, {"count": 0, "longest_ms": 0.0})
                plans[summary]["count"] += 1
                plans[summary]["longest_ms"] = max(plans[summary]["longest_ms"], entry["ms"])
            continue
        kept = by_statement.setdefault(key, {"count": 0, "longest_ms": 0.0})
        kept["count"] += 1
        kept["longest_ms"] = max(kept["longest_ms"], entry["ms"])
        if is_sweep(entry["text"]):
            sweeps.append({"at": entry["at"], "ms": entry["ms"], "phase": entry["phase"], "statement": key})
    report = {
        "what": f"PostgreSQL's statements over log_min_duration_statement in {args.log} from byte {args.start}"
                + (f" to {args.end}" if args.end else "") + (f", {args.between[0]}-{args.between[1]}" if args.between else ""),
        "by_statement": dict(sorted(by_statement.items(), key=lambda item: -item[1]["count"])),
        "sweep_batches_over_the_threshold": sweeps,
        "sweep_plans_over_the_threshold": plans,
    }
    with open(args.out, "w") as handle:
        json.dump(report, handle, indent=1)
    longest = max((sweep["ms"] for sweep in sweeps), default=0)
    print(f"sweep batches over the threshold: {len(sweeps)}, longest {longest} ms; plans: {json.dumps(plans)}")


if __name__ == "__main__":
    main()
