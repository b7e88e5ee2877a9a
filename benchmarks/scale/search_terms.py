#!/usr/bin/env python3
"""The operators' search by terms that few and many accounts share, build against build.

A loaded database (`gatehouse-bench load`: every named account has the address loadN@example.com
and the handle loadN) is searched with terms that match from nothing to every account: at 1M,
`load123` matches about 1,100 addresses and as many handles, `load12` about 11,000, `load1`
about 111,000 and `l` all of them. For each round and each build (in turn, on the same
database), a server starts on it (the retention at a century, so no sweep runs), waits until
its start-up work is over, then asks each term 10 times (at most `--requests`) uncounted and
`--requests` times counted, through the admin API (`/admin/v1/users?q=TERM&limit=50`) and the
console's users page (`/admin/users?q=TERM`), one request at a time. It records the p50 and p99
of each, and the first page's ids: every build must find the same accounts in the same order (a
difference stops the run).

`--archived N` first adds N accounts made two to three years ago (addresses
archivedK@example.com, handles archivedK for K from 1 to N; no identity, session or row elsewhere), older than
every loaded account, and removes them after the run: a term such as `archived` then has matches
that none of the newest accounts share, the case in which the search's walk finds nothing and it
orders every match (docs/scaling.md, "The operators' search").

    BENCH_SERVER_ENV="GATEHOUSE_SECRET_KEY=…" python3 benchmarks/scale/search_terms.py \\
        --build before=OLD_BINARY --build after=NEW_BINARY --url sqlite:///path/scale_1000000.sqlite \\
        --rounds 2 --requests 200 --out RESULT.json
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wrk"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import run  # noqa: E402  (server_with_retention, until_idle, timed, Console, percentile)

TERMS = "nobody,load1234,load123,load12,load1,load,l"


ARCHIVED_FROM = 3 * 365 * 86_400  # seconds before now of the oldest archived account
UNARCHIVE = "DELETE FROM users WHERE handle >= 'archived' AND handle < 'archivee'"


def archive(url, count):
    """Adds `count` accounts older than any loaded one, and returns how to remove them."""
    if count <= 0:
        return lambda: None
    if url.startswith("sqlite://"):
        path = url[len("sqlite://"):].split("?")[0]
        with sqlite3.connect(path) as database:
            database.execute(
                """WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO users (id, email, email_normalized, handle, created_at, updated_at)
                SELECT lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || substr(h, 17, 4) || '-' || substr(h, 21, 12)),
                       'archived' || i || '@example.com', 'archived' || i || '@example.com', 'archived' || i, t, t
                FROM (SELECT i, printf('%032x', i) AS h, CAST(strftime('%s', 'now') AS INTEGER) - ? + (i * 7919) % 31536000 AS t FROM n)""",
                (count, ARCHIVED_FROM))

        def remove():
            with sqlite3.connect(path) as database:
                database.execute(UNARCHIVE)
        return remove
    psql = os.environ.get("BENCH_PSQL") or "psql"
    subprocess.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", f"""
        INSERT INTO users (id, email, email_normalized, handle, created_at, updated_at)
        SELECT md5('archived' || i)::uuid::text, 'archived' || i || '@example.com', 'archived' || i || '@example.com',
               'archived' || i, t, t
        FROM (SELECT i, extract(epoch FROM now())::bigint - {ARCHIVED_FROM} + (i * 7919) % 31536000 AS t
              FROM generate_series(1, {int(count)}) AS i) AS archived""",
                    # Rows made years ago are on pages long vacuumed: all visible, so an index-only
                    # scan reads no row.
                    "-c", "VACUUM (ANALYZE) users"], check=True)
    return lambda: subprocess.run([psql, "-X", "-q", url, "-c", UNARCHIVE], check=True)


def turn(label, binary, url, terms, requests, workdir):
    """One server of `binary` on `url`: each term's figures, and the ids of its first page."""
    run_dir = tempfile.mkdtemp(prefix=f"search-{label}-", dir=workdir)
    server = run.server_with_retention(binary, url, run_dir, run.CONTROL_RETENTION_DAYS)
    server.start()
    try:
        idle_after = run.until_idle(server.process.pid)
        console = run.Console(server.port)
        figures, pages = {}, {}
        for term in terms:
            api = f"/admin/v1/users?q={urllib.parse.quote(term)}&limit=50"
            run.timed(server.port, api, min(10, requests))
            figures[f"api {term}"], answer = run.timed(server.port, api, requests)
            pages[term] = [entry["user"]["id"] for entry in answer["users"]]
            page = f"/admin/users?q={urllib.parse.quote(term)}"
            console.timed(page, min(10, requests))
            figures[f"console {term}"], _ = console.timed(page, requests)
            harness.log(f"{label}, {term!r}: {len(pages[term])} shown; api {figures[f'api {term}']}; console {figures[f'console {term}']}")
        # The first pages' ids too, so that runs of one build at a time (a build whose schema the
        # other refuses) can be compared afterwards.
        return {"build": label, "binary": binary, "idle_after_s": idle_after, "figures": figures, "first_pages": pages}, pages
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", action="append", required=True, help="LABEL=BINARY, one per build, taken in turn")
    parser.add_argument("--url", required=True, help="a loaded database: sqlite:///FILE or a PostgreSQL URL")
    parser.add_argument("--terms", default=TERMS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--archived", type=int, default=0, help="accounts made years ago to add for the run (see above)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    builds = [entry.split("=", 1) for entry in args.build]
    terms = args.terms.split(",")
    workdir = tempfile.mkdtemp(prefix="gatehouse-search-terms-")
    result = {"machine": harness.machine_info(), "git": harness.git_info(), "database": args.url.split("://")[0],
              "builds": dict(builds), "archived": args.archived, "turns": []}
    remove = archive(args.url, args.archived)
    try:
        rounds(args, builds, terms, workdir, result)
    finally:
        remove()
    print(json.dumps(result["turns"], indent=1))


def rounds(args, builds, terms, workdir, result):
    """Each build in turn, `args.rounds` times; every turn's first pages must be the first's."""
    first = None
    for round_number in range(1, args.rounds + 1):
        for label, binary in builds:
            figures, pages = turn(label, binary, args.url, terms, args.requests, workdir)
            figures["round"] = round_number
            result["turns"].append(figures)
            with open(args.out, "w") as handle:
                json.dump(result, handle, indent=2)
            if first is None:
                first = (label, pages)
            elif pages != first[1]:
                differing = [term for term in terms if pages[term] != first[1][term]]
                raise SystemExit(f"{label} found other accounts than {first[0]} for {differing}")


if __name__ == "__main__":
    main()
