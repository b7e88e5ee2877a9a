#!/usr/bin/env python3
"""The plan check (issue 65): every statement the store sent during a run, explained on each
database, and every scan of a table that grows with accounts or time reported.

The store writes each distinct statement it sends (its SQL and its parameters' kinds, never a
value) to the file GATEHOUSE_STATEMENT_LOG names. This script makes an empty database of each
kind with `gatehouse migrate`, then:

  - PostgreSQL: PREPAREs each statement with its parameters' types and EXPLAINs its generic plan
    (plan_cache_mode = force_generic_plan) with sequential scans disabled, so that the planner
    takes any index that can serve the statement whatever the table's size. What remains is what
    no index serves: a Seq Scan, or an index read whole (an Index Scan with no Index Cond) outside
    a Limit, on a growing table.
  - SQLite: EXPLAIN QUERY PLAN for each statement: a SCAN of a growing table without an index, or
    a SCAN through an index (read whole) in a statement without LIMIT (a scan in the order asked,
    with no sort, under a LIMIT stops there and is not reported).

A statement that does not run on the schema at all (a test's own probe table, Supabase's schema
to import from) is listed as skipped: every statement of the store's runs in the tests.

Usage: check.py --binary GATEHOUSE --statements FILE [--postgres URL] [--strict]
Prints one line per finding; with --strict exits 1 when there is any.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

# Tables whose rows do not grow with accounts or with time: the server's secrets and keys, and
# the OpenID clients an operator registers.
BOUNDED = {"server_secrets", "signing_keys", "oauth_clients", "schema_migrations", "gatehouse_migrations"}
POSTGRES_TYPES = {"integer": "int8", "real": "float8", "text": "text", "blob": "bytea", "null": "unknown"}
STATEMENT = re.compile(r"^\s*(SELECT|UPDATE|DELETE|WITH|INSERT)\b", re.IGNORECASE)
MIGRATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Sources", "GatehouseStore", "Migrations")


def squeezed(text):
    return " ".join(text.split())


def migration_text():
    """Every migration file, its whitespace squeezed: a statement found in one ran once, while the
    schema was being built (a backfill), and is not the store's to explain."""
    texts = []
    for dialect in ("sqlite", "postgres"):
        folder = os.path.join(MIGRATIONS, dialect)
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name)) as handle:
                texts.append(squeezed(handle.read()))
    return "\n".join(texts)


def statements(path):
    migrations = migration_text()
    seen = {}
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            if not STATEMENT.match(entry["sql"]) or squeezed(entry["sql"]) in migrations:
                continue
            seen[(entry["dialect"], entry["sql"], tuple(entry["kinds"]))] = entry
    return list(seen.values())


def numbered(sql):
    """`?` placeholders as `$1`, `$2`…, outside quoted text, as the store sends them."""
    out, index, quote = [], 0, None
    for character in sql:
        if quote:
            if character == quote:
                quote = None
        elif character in "'\"":
            quote = character
        elif character == "?":
            index += 1
            out.append(f"${index}")
            continue
        out.append(character)
    return "".join(out)


def migrate(binary, url):
    env = {key: value for key, value in os.environ.items() if not key.startswith("GATEHOUSE_")}
    env.update(GATEHOUSE_DATABASE_URL=url)
    done = subprocess.run([binary, "migrate"], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"gatehouse migrate failed for {url}:\n{done.stdout}\n{done.stderr}")


def growing(tables):
    return [table for table in tables if table not in BOUNDED]


# --- PostgreSQL --------------------------------------------------------------------------------


def postgres_findings(binary, admin_url, entries, psql):
    name = f"plans_{os.getpid()}"
    parts = urllib.parse.urlsplit(admin_url)
    url = urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", admin_url, "-c", f"CREATE DATABASE {name}"], check=True,
                   capture_output=True, text=True)
    try:
        migrate(binary, url)
        script = ["SET enable_seqscan = off;", "SET plan_cache_mode = force_generic_plan;"]
        for index, entry in enumerate(entries):
            types = ", ".join(POSTGRES_TYPES[kind] for kind in entry["kinds"])
            arguments = ", ".join("NULL" for _ in entry["kinds"])
            script += [f"\\echo @@@ {index}",
                       f"PREPARE p{index}{f' ({types})' if types else ''} AS {numbered(entry['sql'])};",
                       f"EXPLAIN (FORMAT JSON) EXECUTE p{index}{f'({arguments})' if arguments else ''};",
                       f"DEALLOCATE p{index};"]
        done = subprocess.run([psql, "-X", "-q", "-A", "-t", url], input="\n".join(script) + "\n", capture_output=True, text=True,
                              timeout=600)
        plans = {}
        current, lines = None, []
        for line in done.stdout.splitlines() + ["@@@ end"]:
            if line.startswith("@@@ "):
                if current is not None and lines:
                    plans[current] = json.loads("\n".join(lines))
                current = None if line == "@@@ end" else int(line.split()[1])
                lines = []
            elif current is not None:
                lines.append(line)
        findings, skipped = [], []
        for index, entry in enumerate(entries):
            plan = plans.get(index)
            if plan is None:
                # A test's own statement (a probe table, Supabase's schema to import from, a
                # value of the wrong type on purpose): the store's statements all run.
                skipped.append(("postgres", entry["sql"]))
                continue
            for problem in scans(plan[0]["Plan"], under_limit=False):
                findings.append(("postgres", entry["sql"], problem))
        return findings, skipped
    finally:
        subprocess.run([psql, "-X", "-q", admin_url, "-c", f"DROP DATABASE IF EXISTS {name}"], capture_output=True, text=True)


def scans(node, under_limit):
    """Reads of growing tables that no index condition narrows, in a plan tree."""
    kind = node.get("Node Type", "")
    table = node.get("Relation Name")
    limited = under_limit or kind == "Limit"
    if table and table not in BOUNDED and not table.startswith("pg_"):
        if kind == "Seq Scan":
            yield f"Seq Scan on {table}" + (f" (Filter: {node['Filter']})" if node.get("Filter") else "")
        elif kind in ("Index Scan", "Index Only Scan", "Index Scan Backward") and "Index Cond" not in node and not limited:
            yield f"{kind} on {table} using {node.get('Index Name')} read whole" + (f" (Filter: {node['Filter']})" if node.get("Filter") else "")
    for child in node.get("Plans", []):
        yield from scans(child, limited)


# --- SQLite ------------------------------------------------------------------------------------


def sqlite_findings(binary, entries):
    import sqlite3

    directory = tempfile.mkdtemp(prefix="gatehouse-plans-")
    try:
        path = os.path.join(directory, "plans.sqlite")
        migrate(binary, f"sqlite://{path}")
        db = sqlite3.connect(path)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        findings, skipped = [], []
        for entry in entries:
            try:
                rows = db.execute(f"EXPLAIN QUERY PLAN {entry['sql']}", [None] * len(entry["kinds"])).fetchall()
            except sqlite3.Error:
                skipped.append(("sqlite", entry["sql"]))
                continue
            limited = re.search(r"\bLIMIT\b", entry["sql"], re.IGNORECASE) is not None
            # A scan in the order asked (no sort) under a LIMIT stops at the limit, as a Limit over
            # an ordered index scan does on PostgreSQL.
            ordered = limited and not any("TEMP B-TREE" in row[-1] for row in rows)
            for row in rows:
                detail = row[-1]
                match = re.match(r"SCAN (\w+)", detail)
                if not match or match.group(1) not in tables or match.group(1) in BOUNDED:
                    continue
                if " USING " not in detail and not ordered:
                    findings.append(("sqlite", entry["sql"], detail))
                elif not limited and "INTEGER PRIMARY KEY" not in detail:
                    findings.append(("sqlite", entry["sql"], f"{detail} (read whole: no LIMIT)"))
        return findings, skipped
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--statements", required=True)
    parser.add_argument("--postgres", default=os.environ.get("GATEHOUSE_TEST_POSTGRES_URL"))
    parser.add_argument("--psql", default=shutil.which("psql"))
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args()
    entries = statements(args.statements)
    by_dialect = {dialect: [entry for entry in entries if entry["dialect"] == dialect] for dialect in ("sqlite", "postgres")}
    print(f"statements: {len(by_dialect['sqlite'])} SQLite, {len(by_dialect['postgres'])} PostgreSQL")
    findings, skipped = sqlite_findings(args.binary, by_dialect["sqlite"])
    if by_dialect["postgres"]:
        if not args.postgres or not args.psql:
            raise SystemExit("PostgreSQL statements were logged but no --postgres URL or psql was given")
        found, unexplained = postgres_findings(args.binary, args.postgres, by_dialect["postgres"], args.psql)
        findings += found
        skipped += unexplained
    for dialect, sql in sorted(set(skipped)):
        print(f"skipped ({dialect}, does not run on the schema: a test's own statement): {' '.join(sql.split())[:160]}")
    for dialect, sql, problem in sorted(set(findings)):
        print(f"{dialect}: {problem}\n    {' '.join(sql.split())[:400]}")
    print(f"findings: {len(set(findings))}")
    return 1 if args.strict and findings else 0


if __name__ == "__main__":
    sys.exit(main())
