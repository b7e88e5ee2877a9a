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
to import from) is listed as skipped: every statement of the store's runs in the tests. Also
findings: paging by OFFSET (it reads every row it skips) in a statement on the store's schema,
and a foreign key that no index leads (deleting the row it points at reads the referencing table
whole to cascade), and a partial index that no statement's plan reads (the statement it was made
for goes another way: SQLite took users_anonymous, every account, for the cleanup's unproved phone
sign-ups beside their partial index). A statement in ALLOWED reads a growing table whole on
purpose, for the reason given there.

--drop INDEX (repeatable) is the proof that the check sees what it claims: it runs the check
again with each named index dropped and fails unless every drop brings a finding on both
databases.

--unordered-sweeps is the same proof for the sweeps (SQLStore.sweep), whose batches must take
rows in an index's order: each logged sweep, ordered instead by its age plus 0 (which no index
holds), must be found sorted on both databases.

Usage: check.py --binary GATEHOUSE --statements FILE [--postgres URL] [--strict] [--drop INDEX]... [--unordered-sweeps]
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
# Statements that read a growing table whole on purpose, and why. Each is matched on its SQL with
# its whitespace squeezed; a change to one is checked again.
ALLOWED = {
    # The store's own.
    "SELECT COUNT(*) AS n FROM users":
        "GoTrue's `GET /admin/users` total, an exact count as GoTrue's own; an operator's call",
    "SELECT DISTINCT CASE WHEN password_hash LIKE '$firebase-scrypt$%' THEN substr(password_hash, 1, 33) ELSE substr(password_hash, 1, 7) "
    "END AS scheme FROM users WHERE substr(password_hash, 1, 10) <> '$argon2id$' AND (password_hash LIKE '$2%' OR password_hash LIKE "
    "'$firebase-scrypt$%')":
        "the census of imported hash schemes reads the partial index users_imported_hashes whole: only accounts whose hash is "
        "not Argon2id (imported, each replaced at its next sign-in), not every account",
    "SELECT status, COUNT(*) AS n, CAST(SUM(CASE WHEN attempts > 1 OR (status = 'pending' AND attempts > 0) THEN 1 ELSE 0 END) "
    "AS BIGINT) AS retried FROM outbox GROUP BY status":
        "the console's mail totals, counted over the whole outbox on an operator's page",
    # The tests' own checks on real tables (the store never sends them).
    "SELECT user_id FROM identities GROUP BY user_id HAVING count(*) <> 1": "PostgresRestartTests' invariant",
    "SELECT user_id FROM events WHERE type = 'user.created' GROUP BY user_id HAVING count(*) <> 1": "PostgresRestartTests' invariant",
    "SELECT user_id FROM idempotency_keys GROUP BY user_id HAVING count(*) <> 1": "PostgresRestartTests' invariant",
    "SELECT key FROM rate_limits": "ConcurrentLimitTests reads every window it made",
    "SELECT email FROM users": "UpgradeSafetyTests reads its one account",
    "SELECT COUNT(*) AS n, SUM(revoked_at IS NOT NULL) AS revoked FROM sessions": "SharedSessionTests counts the sessions it made",
    "SELECT COUNT(*) AS n, SUM(rotated_at IS NULL) AS live FROM refresh_tokens": "SharedSessionTests counts the chain it made",
    "UPDATE users SET email = NULL": "UpgradeSafetyTests' migration that fails half-way",
}
# gatehouse-bench load's report of the rows it wrote (LoaderTests runs it), one count per table.
ALLOWED.update({f"SELECT COUNT(*) AS n FROM {table}": "gatehouse-bench load's report of what it wrote" for table in (
    "identities", "sessions", "refresh_tokens", "audit_log", "events", "passkeys", "mfa_factors", "usage_records", "credit_ledger",
    "subscriptions", "stripe_customers", "plan_grants", "oauth_consents", "rate_limits")})
# LoaderTests checks that the loader wrote each table a server appends to in the order of its times.
ALLOWED.update({
    f"SELECT COUNT(*) AS n FROM (SELECT {time} AS at, LAG({time}) OVER (ORDER BY {order}) AS before FROM {table}) AS t WHERE at < before":
    "LoaderTests reads the loaded tables whole for their order"
    for table, time, orders in (("audit_log", "created_at", ("seq",)), ("events", "created_at", ("seq",)),
                                ("sessions", "created_at", ("rowid", "ctid")), ("refresh_tokens", "issued_at", ("rowid", "ctid")))
    for order in orders})
# SQLite's sorts of an ORDER BY's last terms only, within each run of equal leading terms.
PARTIAL_SORT = re.compile(r"FOR (RIGHT PART|LAST (TERM|\d+ TERMS)) OF ORDER BY")
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


def postgres_findings(binary, admin_url, entries, psql, drop=None):
    name = f"plans_{os.getpid()}"
    parts = urllib.parse.urlsplit(admin_url)
    url = urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", admin_url, "-c", f"CREATE DATABASE {name}"], check=True,
                   capture_output=True, text=True)
    try:
        migrate(binary, url)
        if drop:
            subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", f"DROP INDEX {drop}"], check=True,
                           capture_output=True, text=True)
        leading = leading_columns(psql, url)
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
        findings, skipped, used = [], [], set()
        for index, entry in enumerate(entries):
            plan = plans.get(index)
            if plan is None:
                # A test's own statement (a probe table, Supabase's schema to import from, a
                # value of the wrong type on purpose): the store's statements all run.
                skipped.append(("postgres", entry["sql"]))
                continue
            for problem in scans(plan[0]["Plan"], under_limit=False, leading=leading):
                findings.append(("postgres", entry["sql"], problem))
            if is_sweep(entry["sql"]) and "Sort" in node_types(plan[0]["Plan"]):
                findings.append(("postgres", entry["sql"], SWEEP_SORTED))
            used |= set(index_names(plan[0]["Plan"]))
        findings += postgres_unindexed_keys(psql, url)
        partial = catalog(psql, url, "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                                     "WHERE i.indpred IS NOT NULL AND NOT i.indisunique")
        findings += [unread_partial("postgres", name) for (name,) in partial if name not in used]
        return findings, skipped
    finally:
        subprocess.run([psql, "-X", "-q", admin_url, "-c", f"DROP DATABASE IF EXISTS {name}"], capture_output=True, text=True)


def postgres_unindexed_keys(psql, url):
    """Foreign keys with no index led by their column: deleting the row they point at (an
    account, a session) reads the whole referencing table to cascade, in a statement the store
    never sends itself."""
    rows = catalog(psql, url,
                   "SELECT c.conrelid::regclass::text, a.attname, c.confrelid::regclass::text FROM pg_constraint c "
                   "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] WHERE c.contype = 'f' "
                   "AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid AND i.indkey[0] = c.conkey[1])")
    return [unindexed_key("postgres", *row) for row in rows if row[0] not in BOUNDED]


def unread_partial(dialect, index):
    return (dialect, f"INDEX {index}", f"the partial index {index} is read by no statement's plan: the statement it was made for "
                                       "reads another index or the table (or no test runs it)")


def catalog(psql, url, sql):
    """The rows of a catalog query, each a list of its columns as text."""
    done = subprocess.run([psql, "-X", "-q", "-A", "-t", "-F", "|", url, "-c", sql], check=True, capture_output=True, text=True)
    return [line.split("|") for line in done.stdout.splitlines() if line]


def unindexed_key(dialect, table, column, referenced):
    return (dialect, f"FOREIGN KEY {table} ({column}) REFERENCES {referenced}",
            f"no index on {table} led by {column}: a {referenced} row deleted reads {table} whole")


def leading_columns(psql, url):
    """Each plain index's first column (None for an expression): an Index Cond on a later column
    alone still reads the whole index."""
    rows = catalog(psql, url,
                   "SELECT c.relname, COALESCE(a.attname, '') FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                   "LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
                   "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'")
    return {index: column or None for index, column in rows}


# A sweep's batch (SQLStore.sweep: `… (SELECT … ORDER BY age LIMIT ?…) RETURNING age AS swept`)
# takes the oldest rows in the order of an index on their age. Sorted instead, each batch reads
# every row past the cut-off (42 % of a year of audit rows at a 90-day retention) to take 500,
# whatever index narrows its condition.
SWEEP_SORTED = "a sweep's batch sorted: its ORDER BY is no index's order, so each batch reads every row past its cut-off"


SWEEP_ORDER = re.compile(r"ORDER BY (\w+) LIMIT")


def is_sweep(sql):
    return re.search(r"\bRETURNING \w+ AS swept\b", sql) is not None


def index_names(node):
    """Every index a plan tree reads."""
    if node.get("Index Name"):
        yield node["Index Name"]
    for child in node.get("Plans", []):
        yield from index_names(child)


def node_types(node):
    """Every node type in a plan tree."""
    yield node.get("Node Type", "")
    for child in node.get("Plans", []):
        yield from node_types(child)


def scans(node, under_limit, leading):
    """Reads of growing tables that no index condition narrows, in a plan tree."""
    kind = node.get("Node Type", "")
    table = node.get("Relation Name")
    # A Sort reads all it is given before the Limit above it takes the first rows: what it reads
    # is not limited (a sweep's ORDER BY that no index serves sorts every old row for one batch).
    limited = (under_limit or kind == "Limit") and kind != "Sort"
    if table and table not in BOUNDED and not table.startswith("pg_"):
        filtered = f" (Filter: {node['Filter']})" if node.get("Filter") else ""
        if kind == "Seq Scan":
            yield f"Seq Scan on {table}" + filtered
        elif kind in ("Index Scan", "Index Only Scan", "Index Scan Backward", "Bitmap Index Scan"):
            index = node.get("Index Name")
            condition = node.get("Index Cond")
            first = leading.get(index)
            if condition is None and not limited:
                yield f"{kind} on {table} using {index} read whole" + filtered
            elif condition is None and node.get("Filter"):
                # In order under a LIMIT, testing each row: it stops at the limit only when rows
                # match, and reads the whole index when few do (a search).
                yield f"{kind} on {table} using {index} under a LIMIT, every row tested ({node['Filter']}): read whole when few match"
            elif condition is not None and first and not re.search(rf"\b{re.escape(first)}\b", condition) and not limited:
                yield f"{kind} on {table} using {index} read whole: its condition ({condition}) is not on its first column, {first}"
    for child in node.get("Plans", []):
        yield from scans(child, limited, leading)


# --- SQLite ------------------------------------------------------------------------------------


def filtered(sql, table):
    """Whether the statement's WHERE tests rows of `table` read by a SCAN: the statement has a
    WHERE of its own (not only in a subquery) and `table` is what its outer FROM reads."""
    outer = re.sub(r"\((?:[^()]|\([^()]*\))*\)", "()", sql)  # subqueries (two levels) folded away
    return re.search(rf"\bFROM\s+{table}\b", outer, re.IGNORECASE) is not None and re.search(r"\bWHERE\b", outer, re.IGNORECASE) is not None


def sqlite_findings(binary, entries, drop=None):
    import sqlite3

    directory = tempfile.mkdtemp(prefix="gatehouse-plans-")
    try:
        path = os.path.join(directory, "plans.sqlite")
        migrate(binary, f"sqlite://{path}")
        db = sqlite3.connect(path)
        if drop:
            db.execute(f"DROP INDEX {drop}")
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        # Partial indexes: a scan of one under a LIMIT reads only the rows its WHERE names.
        partial = {row[0] for row in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'")}
        findings, skipped, used = [], [], set()
        for entry in entries:
            try:
                rows = db.execute(f"EXPLAIN QUERY PLAN {entry['sql']}", [None] * len(entry["kinds"])).fetchall()
            except sqlite3.Error:
                skipped.append(("sqlite", entry["sql"]))
                continue
            used |= {match.group(1) for row in rows for match in [re.search(r"USING (?:COVERING )?INDEX (\w+)", row[-1])] if match}
            limited = re.search(r"\bLIMIT\b", entry["sql"], re.IGNORECASE) is not None
            # A scan in the order asked (no sort) under a LIMIT stops at the limit, as a Limit over
            # an ordered index scan does on PostgreSQL. A sort of the ORDER BY's last terms alone
            # (ties of an index's order) stops there too; a sort of the whole ORDER BY, a GROUP BY
            # or a DISTINCT reads every row first.
            ordered = limited and not any("TEMP B-TREE" in row[-1] and not PARTIAL_SORT.search(row[-1]) for row in rows)
            if is_sweep(entry["sql"]) and any("TEMP B-TREE" in row[-1] for row in rows):
                findings.append(("sqlite", entry["sql"], SWEEP_SORTED))
            for row in rows:
                detail = row[-1]
                match = re.match(r"SCAN (\w+)", detail)
                if not match or match.group(1) not in tables or match.group(1) in BOUNDED:
                    continue
                if " USING " not in detail and not ordered:
                    findings.append(("sqlite", entry["sql"], detail))
                elif not ordered and "INTEGER PRIMARY KEY" not in detail:
                    # No LIMIT, or one after a sort (a TEMP B-TREE) that reads every row first.
                    findings.append(("sqlite", entry["sql"], f"{detail} (read whole: {'sorted before its LIMIT' if limited else 'no LIMIT'})"))
                elif filtered(entry["sql"], match.group(1)) and not any(f" USING {kind}INDEX {index} " in f"{detail} "
                                                                        for index in partial for kind in ("", "COVERING ")):
                    # In order under a LIMIT, testing each row of the table against its WHERE:
                    # read whole when few rows match (a search).
                    findings.append(("sqlite", entry["sql"], f"{detail} under a LIMIT, every row tested: read whole when few match"))
        # Unique partial indexes are constraints (one active signing key, one own Stripe
        # customer): what they are for is the write they refuse, not a read.
        findings += [unread_partial("sqlite", name) for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %' AND sql NOT LIKE 'CREATE UNIQUE %'")
            if name not in used]
        for table in sorted(tables - BOUNDED):
            led = {info[2] for index in db.execute(f"PRAGMA index_list('{table}')") for info in
                   db.execute(f"PRAGMA index_info('{index[1]}')") if info[0] == 0}
            # A rowid table's INTEGER PRIMARY KEY is the rowid itself, in no index_list.
            led |= {column[1] for column in db.execute(f"PRAGMA table_info('{table}')")
                    if column[5] == 1 and column[2].upper() == "INTEGER"}
            for key in db.execute(f"PRAGMA foreign_key_list('{table}')"):
                if key[1] == 0 and key[3] not in led:
                    findings.append(unindexed_key("sqlite", table, key[3], key[2]))
        return findings, skipped
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def offsets(entries):
    """Paging by OFFSET, in any statement: it reads every row it skips."""
    return [(entry["dialect"], entry["sql"], "paged by OFFSET (keyset paging reads only the page)")
            for entry in entries if re.search(r"\bOFFSET\b", entry["sql"], re.IGNORECASE)]


def check(args, by_dialect, drop=None):
    """(findings, skipped) over both databases, with `drop` dropped first."""
    findings, skipped = sqlite_findings(args.binary, by_dialect["sqlite"], drop)
    if by_dialect["postgres"]:
        found, unexplained = postgres_findings(args.binary, args.postgres, by_dialect["postgres"], args.psql, drop)
        findings += found
        skipped += unexplained
    # Paging by OFFSET in the store's statements (the Supabase import's reads of Supabase's own
    # tables, skipped above, have no index on their order for a keyset to walk).
    ran = [entry for entry in by_dialect["sqlite"] + by_dialect["postgres"] if (entry["dialect"], entry["sql"]) not in set(skipped)]
    findings += offsets(ran)
    allowed = [finding for finding in findings if squeezed(finding[1]) in ALLOWED]
    return [finding for finding in findings if finding not in allowed], skipped, allowed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--statements", required=True)
    parser.add_argument("--postgres", default=os.environ.get("GATEHOUSE_TEST_POSTGRES_URL"))
    parser.add_argument("--psql", default=shutil.which("psql"))
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--drop", action="append", default=[], metavar="INDEX")
    parser.add_argument("--unordered-sweeps", action="store_true",
                        help="also check every logged sweep again ordered by an expression no index holds: each must be found")
    args = parser.parse_args()
    entries = statements(args.statements)
    by_dialect = {dialect: [entry for entry in entries if entry["dialect"] == dialect] for dialect in ("sqlite", "postgres")}
    print(f"statements: {len(by_dialect['sqlite'])} SQLite, {len(by_dialect['postgres'])} PostgreSQL")
    if by_dialect["postgres"] and (not args.postgres or not args.psql):
        raise SystemExit("PostgreSQL statements were logged but no --postgres URL or psql was given")
    findings, skipped, allowed = check(args, by_dialect)
    for dialect, sql in sorted(set(skipped)):
        print(f"skipped ({dialect}, does not run on the schema: a test's own statement): {' '.join(sql.split())[:160]}")
    for dialect, sql, problem in sorted(set(allowed)):
        print(f"allowed ({dialect}: {ALLOWED[squeezed(sql)]}): {problem}")
    for dialect, sql, problem in sorted(set(findings)):
        print(f"{dialect}: {problem}\n    {' '.join(sql.split())[:400]}")
    print(f"findings: {len(set(findings))}")
    failed = bool(args.strict and findings)
    # The proof: each index the hot paths need, dropped, is seen on both databases.
    for index in args.drop:
        found = check(args, by_dialect, drop=index)[0]
        seen = {dialect for dialect, _, _ in set(found) - set(findings)}
        wanted = {dialect for dialect in ("sqlite", "postgres") if by_dialect[dialect]}
        print(f"dropped {index}: {len(set(found) - set(findings))} new findings ({', '.join(sorted(seen)) or 'none'})")
        if seen != wanted:
            print(f"error: with {index} dropped the check found nothing new on {', '.join(sorted(wanted - seen))}")
            failed = True
    # The proof for the sweeps: each, ordered by `age + 0` (its age, which no index holds), is
    # found sorted on both databases.
    if args.unordered_sweeps:
        unordered = {dialect: [dict(entry, sql=SWEEP_ORDER.sub(r"ORDER BY \1 + 0 LIMIT", entry["sql"])) for entry in listed
                               if is_sweep(entry["sql"])] for dialect, listed in by_dialect.items()}
        found, unrun, _ = check(args, unordered)
        caught = {(dialect, sql) for dialect, sql, problem in found if problem == SWEEP_SORTED}
        missed = [(dialect, entry["sql"]) for dialect, listed in unordered.items() for entry in listed
                  if (dialect, entry["sql"]) not in caught and (dialect, entry["sql"]) not in set(unrun)]
        print(f"sweeps unordered: {len(caught)} of {len(caught) + len(missed)} found sorted")
        for dialect, sql in missed:
            print(f"error: unordered, this sweep was not found sorted on {dialect}: {' '.join(sql.split())[:200]}")
        failed = failed or bool(missed) or not caught
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
