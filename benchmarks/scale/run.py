#!/usr/bin/env python3
"""Cost as the data grows (issue 65): the hot paths and the operators' lists on databases of
10k, 100k and 1M accounts, side by side in one run.

For each database and size it:
  1. makes an empty database (a SQLite file, or a PostgreSQL database on the server that
     GATEHOUSE_TEST_POSTGRES_URL names) and fills it with `gatehouse-bench load URL N`, recording
     the load's time, rows and size;
  2. starts `gatehouse serve` on it (benchmarks/wrk/harness.py's Server: the Handz preset, IP
     limits off), waits until its start-up work is over (its first retention sweep and the census
     of hash schemes read the tables: measured once the process is quiet for two seconds), then
     (after the lists of 3) signs up one account per connection through HTTP and loads login,
     refresh, GET /v1/me, the entitlement check and a credit spend with wrk (harness.py's
     scenarios), recording the server's CPU per request and the p99; then starts it again with a
     preset that signs in by magic link (Handz's does not) and loads `POST /v1/auth/magic-link`
     for the loaded accounts' addresses (magic_link.lua), recorded beside the others;
  3. times the operators' lists through the admin API, one request at a time: the first page of
     users, ten pages deep by cursor, a search by email prefix and one by a letter every account
     shares, the audit trail (whole and of one account) and the event feed (from the start and
     from its end), p50 and p99 of each; then the console's pages the same way, signed in with
     the admin key: the overview (and, apart, how long its background count took to show),
     users (all, by provider, by plan state), one account, the audit trail, the events and the
     mail;
  4. with --sessions N, signs N loaded accounts in (one session each, /v1/me read once with
     each) and records the server's RSS with them;
  4b. with --nodes N, on PostgreSQL, starts N nodes on the same database behind nginx
     (Server/Tests/cluster/run.py --serve --database-url), waits until their start-up work is
     over, and loads the same scenarios through nginx (benchmarks/wrk/harness.py cluster): the
     nodes' CPU per request (summed) and the p99, beside one node's;
  5. with --sweep-days D, restarts the server with the preset's retention at D days, so that its
     retention sweep (which runs at start, in batches) deletes the audit rows and ended sessions
     older than that, and runs the login load meanwhile: its p99 beside the load's alone, the
     rows the sweep deleted, how long it took, and whether it was still running when the load
     ended (a load that outlived the sweep compares less than it claims), and how long statements
     waited for a connection meanwhile (on SQLite, for the writer a sweep's batch holds), and
     housekeeping's rests during the load by their reason (from /metrics).
     Before it, the control: the same fresh start and load with a retention nothing is older
     than. The load alone of step 3 ran on a server already warm (its start-up work over, the
     console's pages and a warm-up read), the load beside the sweep on one just started, so the
     control says what a fresh start alone costs; both ratios are reported. Both loads follow
     --sweep-warmup seconds of logins not recorded (the sweep running meanwhile), so the load
     beside the sweep is one that continues, as the issue asks, not a server's first seconds.

Usage: benchmarks/scale/run.py --binary GATEHOUSE --bench GATEHOUSE_BENCH --out FILE
                               [--sizes 10000,100000] [--databases sqlite,postgres] [--seconds 10]
                               [--sweep-days 90 [--sweep-warmup 30]] [--sessions 10000] [--nodes 3] [--reuse DIR]
The figures go to FILE as JSON and a table to standard output.
"""
import argparse
import http.client
import json
import os
import re
import secrets
import threading
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wrk"))
import harness  # noqa: E402  (benchmarks/wrk/harness.py: the server, the seeding and the wrk scenarios)

SCENARIOS = ["login", "refresh", "me", "check", "spend"]
# A magic-link request is loaded on a server of its own: the harness's preset (Handz) signs in
# without magic links. The default preset does; the run's copy of it lets an address ask again at
# once and all day (its throttle's rows are still read and written at each request), so that a
# run at 10k, which asks for more links than there are accounts, measures accepted requests as
# one at 1M does, not the refusals of an address asked for twice within a minute.
MAGIC_LINK_PRESET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Server", "Sources", "GatehouseServer",
                                 "Resources", "presets", "default.json")


def fresh_database(kind, workdir, name):
    """A URL of an empty database, and how to drop it."""
    if kind == "sqlite":
        path = os.path.join(workdir, f"{name}.sqlite")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        return f"sqlite://{path}", lambda: None
    admin = os.environ["GATEHOUSE_TEST_POSTGRES_URL"]
    psql = os.environ.get("BENCH_PSQL") or shutil.which("psql")
    subprocess.run([psql, "-X", "-q", admin, "-c", f"DROP DATABASE IF EXISTS {name}"], check=True, capture_output=True)
    subprocess.run([psql, "-X", "-q", admin, "-c", f"CREATE DATABASE {name}"], check=True, capture_output=True)
    parts = urllib.parse.urlsplit(admin)
    url = urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    return url, lambda: subprocess.run([psql, "-X", "-q", admin, "-c", f"DROP DATABASE IF EXISTS {name}"], capture_output=True)


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def timed(port, path, count):
    """p50, p99 and the slowest (ms) of `count` sequential GETs of `path` with the admin key, and the
    last answer. The p99 of 200 is the third slowest: the slowest is kept beside it, for a first
    request that reads from a cold cache (step 23)."""
    times, answer = [], None
    for _ in range(count):
        started = time.perf_counter()
        status, answer = harness.call(port, "GET", path, token=harness.ADMIN_KEY)
        times.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {answer}")
    return figures(times), answer


def figures(times):
    return {"p50_ms": round(percentile(times, 0.5), 2), "p99_ms": round(percentile(times, 0.99), 2),
            "max_ms": round(max(times), 2), "requests": len(times)}


def until_idle(pids, limit=1800):
    """Seconds until the server (a cluster: each of its nodes) spends under 2 % of a core for two
    seconds running."""
    pids = pids if isinstance(pids, list) else [pids]
    started = time.perf_counter()
    last = sum(harness.cpu_seconds(pid) for pid in pids)
    quiet = 0
    while time.perf_counter() - started < limit and quiet < 4:
        time.sleep(0.5)
        now = sum(harness.cpu_seconds(pid) for pid in pids)
        quiet = quiet + 1 if now - last < 0.01 * len(pids) else 0
        last = now
    return round(time.perf_counter() - started, 1)


def console(port, count):
    """The operators' lists, each timed on its own."""
    results = {}
    results["users, first page"], first = timed(port, "/admin/v1/users?limit=50", count)
    cursor, path = first.get("next_cursor"), None
    for _ in range(10):  # ten pages deep by cursor
        if not cursor:
            break
        path = f"/admin/v1/users?limit=50&before={urllib.parse.quote(cursor)}"
        cursor = harness.call(port, "GET", path, token=harness.ADMIN_KEY)[1].get("next_cursor")
    if path:
        results["users, page 11 by cursor"], _ = timed(port, path, count)
    results["users, search by email prefix"], _ = timed(port, "/admin/v1/users?q=load12&limit=50", count)
    # A letter every loaded account's address and handle start with: the search's walk (step 22).
    results["users, search by one letter"], _ = timed(port, "/admin/v1/users?q=l&limit=50", count)
    results["audit trail, first page"], audit = timed(port, "/admin/v1/audit?limit=100", count)
    someone = next((entry.get("user_id") for entry in audit.get("events", audit.get("entries", [])) if entry.get("user_id")), None)
    if someone:
        results["audit trail of one account"], _ = timed(port, f"/admin/v1/audit?user_id={someone}&limit=100", count)
    results["event feed from the start"], feed = timed(port, "/admin/v1/events?limit=100", count)
    # The feed's end: follow it by cursor until a page comes back short (at most 50 pages), then
    # time reading from the last cursor (a backend that keeps up reads there).
    cursor = feed.get("next_cursor")
    for _ in range(50):
        if not cursor:
            break
        page = harness.call(port, "GET", f"/admin/v1/events?after={urllib.parse.quote(str(cursor))}&limit=100", token=harness.ADMIN_KEY)[1]
        if len(page.get("events", [])) < 100:
            break
        cursor = page.get("next_cursor")
    if cursor:
        results["event feed, 50 pages in"], _ = timed(port, f"/admin/v1/events?after={urllib.parse.quote(str(cursor))}&limit=100", count)
    return results


class Console:
    """A signed-in session of the operators' console (its sign-in form, with the admin key)."""

    def __init__(self, port):
        self.port = port
        status, headers, page = self.request("GET", "/admin")
        cookies = self.cookies(headers)
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode({"key": harness.ADMIN_KEY, "csrf_token": token})
        status, headers, _ = self.request("POST", "/admin/sign-in", form, cookies)
        if status not in (302, 303):
            raise RuntimeError(f"console sign-in: {status}")
        self.cookie = "; ".join(f"{name}={value}" for name, value in {**cookies, **self.cookies(headers)}.items())

    def request(self, method, path, body=None, cookie=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Origin": f"http://127.0.0.1:{self.port}"}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if cookie:
            headers["Cookie"] = cookie if isinstance(cookie, str) else "; ".join(f"{k}={v}" for k, v in cookie.items())
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode(errors="replace")
        connection.close()
        return response.status, response.getheaders(), text

    @staticmethod
    def cookies(headers):
        found = {}
        for name, value in headers:
            if name.lower() == "set-cookie":
                pair = value.split(";", 1)[0]
                key, _, content = pair.partition("=")
                found[key.strip()] = content
        return found

    def timed(self, path, count):
        times, text = [], ""
        for _ in range(count):
            started = time.perf_counter()
            try:
                status, _, text = self.request("GET", path, cookie=self.cookie)
            except TimeoutError:
                # Over a minute: recorded as such, and the page is not asked again.
                return {"timed_out_after_s": 60, "requests": len(times) + 1}, ""
            times.append((time.perf_counter() - started) * 1000)
            if status != 200 or 'name="key"' in text:
                raise RuntimeError(f"GET {path}: {status}")
        return figures(times), text

    def counted(self, started, limit=900):
        """Seconds from `started` until the overview shows a finished count (polled every 0.2 s)."""
        while time.perf_counter() - started < limit:
            _, _, page = self.request("GET", "/admin", cookie=self.cookie)
            if re.search(r'data-counted-at="[^"]+" data-counting="false"', page):
                return {"seconds": round(time.perf_counter() - started, 2)}
            time.sleep(0.2)
        return {"timed_out_after_s": limit}


def console_pages(port, count):
    """The console's pages, each timed on its own."""
    console = Console(port)
    results = {}
    # The overview shows the month's counts its node keeps; the first view starts the count
    # (OverviewCounts), timed here until it shows: the page's time and the count's, apart.
    started = time.perf_counter()
    results["console: overview"], _ = console.timed("/admin", count)
    results["console: overview, its background count"] = console.counted(started)
    results["console: users"], page = console.timed("/admin/users", count)
    results["console: users by provider (apple)"], _ = console.timed("/admin/users?provider=apple", count)
    results["console: users by plan (pro)"], _ = console.timed("/admin/users?plan=pro", count)
    someone = re.search(r'href="/admin/users/([^"/?]+)"', page)
    if someone:
        results["console: one account"], _ = console.timed(f"/admin/users/{someone.group(1)}", count)
    results["console: audit"], _ = console.timed("/admin/audit", count)
    results["console: events"], _ = console.timed("/admin/events", count)
    results["console: mail"], _ = console.timed("/admin/mail", count)
    return results


def sessions_memory(port, pid, size, wanted):
    """Signs `wanted` loaded accounts in through HTTP (spread over the whole table; those with a
    second factor left out), reads /v1/me once with each session, and answers the number signed
    in, the seconds it took and the server's RSS then."""
    password = os.environ.get("BENCH_LOAD_PASSWORD", "load-password-1")
    candidates = [index for index in range(size) if index % 10 >= 4 and index % 20 != 4]
    step = max(1, len(candidates) // max(1, wanted))
    chosen = candidates[::step][:wanted]

    def one(index):
        status, answer = harness.call(port, "POST", "/v1/auth/login", {"email": f"load{index}@example.com", "password": password})
        if status != 200:
            raise RuntimeError(f"login of load{index}: {status} {answer}")
        token = answer["session"]["access_token"]
        if harness.call(port, "GET", "/v1/me", token=token)[0] != 200:
            raise RuntimeError(f"/v1/me of load{index}")

    started = time.monotonic()
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(one, chosen))
    return {"sessions": len(chosen), "seconds": round(time.monotonic() - started, 1),
            "rss_mib": harness.mib(harness.proc_status(pid, "VmRSS"))}


def metrics_text(server):
    """The server's GET /metrics, as text."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    return text


def pool_waits(server):
    """How long statements waited for a connection from the server's start (SQLite: for the
    writer, which a sweep's batch holds): gatehouse_db_pool_wait_seconds, read from GET /metrics
    as how many waited and the histogram bucket (its upper bound, ms) that holds the 99th
    percentile and the longest."""
    text = metrics_text(server)
    buckets = []
    for line in text.splitlines():
        match = re.match(r'gatehouse_db_pool_wait_seconds_bucket\{.*le="([^"]+)".*\}\s+(\S+)', line)
        if match:
            buckets.append((float(match.group(1)), float(match.group(2))))
    buckets.sort()
    if not buckets or buckets[-1][1] == 0:
        return None
    total = buckets[-1][1]
    within = lambda share: next(bound for bound, count in buckets if count >= share * total)
    as_ms = lambda bound: "over 5000" if bound == float("inf") else round(bound * 1000, 1)
    return {"waits": int(total), "p99_at_most_ms": as_ms(within(0.99)), "longest_at_most_ms": as_ms(within(1.0))}


def housekeeping_rests(server):
    """Housekeeping's rests from the server's start, by what set their length (`requests`, `log`,
    `checkpointer`): gatehouse_housekeeping_rest_seconds' count and sum, read from GET /metrics."""
    text = metrics_text(server)
    rests = {}
    for line in text.splitlines():
        match = re.match(r'gatehouse_housekeeping_rest_seconds_(count|sum)\{.*reason="([^"]+)".*\}\s+(\S+)', line)
        if match:
            rests.setdefault(match.group(2), {"count": 0, "seconds": 0.0})[
                "count" if match.group(1) == "count" else "seconds"] = float(match.group(3))
    return rests


def rests_between(before, after):
    """The rests taken between two readings of housekeeping_rests, by reason."""
    return {reason: {"count": int(tally["count"] - before.get(reason, {}).get("count", 0)),
                     "seconds": round(tally["seconds"] - before.get(reason, {}).get("seconds", 0.0), 2)}
            for reason, tally in after.items()}


def server_with_retention(binary, url, run_dir, days):
    """A server (not started) on `url` with the Handz preset's retention at `days` days, logging
    each request (info) and serving /metrics, with BENCH_SERVER_ENV's secret key."""
    with open(os.path.join(HERE, "..", "..", "Server", "Sources", "GatehouseServer", "Resources", "presets", "handz.json")) as handle:
        preset = json.load(handle)
    preset["privacy"]["retention_days"] = days
    preset_path = os.path.join(run_dir, "preset.json")
    with open(preset_path, "w") as handle:
        json.dump(preset, handle)
    return harness.Server(binary, url, run_dir,
                          settings=[f"GATEHOUSE_PRESET={preset_path}", "GATEHOUSE_LOG_LEVEL=info", "GATEHOUSE_METRICS=on",
                                    f"GATEHOUSE_SECRET_KEY={harness.server_settings()['GATEHOUSE_SECRET_KEY']}"])


def fresh_login_load(args, url, part_dir, directory, label, days):
    """A server started on the file with the retention at `days` days (its sweep starts with it),
    and the login load on it: --sweep-warmup seconds not recorded, then --seconds measured."""
    run_dir = os.path.join(part_dir, directory)
    os.makedirs(run_dir, exist_ok=True)
    server = server_with_retention(args.binary, url, run_dir, days)
    ended = {}

    def watch():
        # The sweep logs one "retention sweep" line when it is done ("retention sweep stopped by
        # the shutdown" when the server stops first, "retention sweep failed" when it fails).
        while server.process and server.process.poll() is None and "at" not in ended:
            try:
                with open(os.path.join(run_dir, "server.err")) as handle:
                    for line in handle:
                        if '"msg":"retention sweep' in line and "stopped" not in line:
                            ended["at"] = time.monotonic()
                            ended["line"] = line.strip()[-600:]
            except OSError:
                pass
            time.sleep(0.05)

    started = time.monotonic()
    try:
        server.start()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        connections = args.connections - args.connections % 2
        if args.sweep_warmup:
            # The load that "continues" was running before: its first seconds on a server just
            # started are not recorded. (Up to step 18 a fresh server's logins were slower for
            # their first 30 s whatever it swept: the cleanup's query read every account, step 19.)
            harness.load(server, {"scenarios": {}}, argparse.Namespace(seconds=args.sweep_warmup, hash="none", warmup=0), ["login"], 2,
                         connections, run_dir, f"{label} warm-up (not recorded)")
        wrk = {"scenarios": {}}
        options = argparse.Namespace(seconds=args.seconds, hash="none", warmup=0)
        rests_before = housekeeping_rests(server)
        load_started = time.monotonic()
        harness.load(server, wrk, options, ["login"], 2, connections, run_dir, label)
        load_ended = time.monotonic()
        rests = rests_between(rests_before, housekeeping_rests(server))
        row = wrk["scenarios"]["login"]
        waits = pool_waits(server)
        # Wait for the sweep's end (at most two minutes) to report its length.
        while "at" not in ended and time.monotonic() - load_ended < 120 and server.process.poll() is None:
            time.sleep(0.2)
    finally:
        server.stop()
    with open(os.path.join(run_dir, "server.err")) as handle:
        stopped = next((line.strip()[-600:] for line in handle if '"msg":"retention sweep stopped by the shutdown' in line), None)
    return {
        "retention_days": days,
        "login_p99_ms": row.get("latency_ms", {}).get("p99"),
        "login_requests_per_second": row.get("requests_per_second"),
        "sweep_seconds": round(ended["at"] - started, 1) if "at" in ended else None,
        "sweep_outlasted_load": "at" in ended and ended["at"] > load_ended or "at" not in ended,
        "load_started_after_s": round(load_started - started, 1), "sweep_log": ended.get("line"),
        # A sweep the server's stop cut short says how long it ran and rested.
        "sweep_stopped_log": stopped,
        "pool_waits_during_load": waits,
        # What held housekeeping back while the load was measured (a paced sweep at 1M on
        # PostgreSQL outlasts the load: its own line comes only at its end).
        "housekeeping_rests_during_load": rests,
    }


# A retention no row of the loaded year is older than: the control's sweep deletes no audit row or
# event, but still what does not depend on it (rotated refresh tokens expired a refresh lifetime
# ago, sessions ended that long ago), which at 1M on PostgreSQL outlasts its load, paced.
CONTROL_RETENTION_DAYS = 36500


def sweep_under_load(args, url, part_dir, label, alone):
    """The retention sweep at --sweep-days, started with the server, under the login load; and
    before it the same fresh start and load with no audit rows to sweep (the control), since the load
    alone (`alone`, the hot paths' login) ran on a server already warm."""
    control = fresh_login_load(args, url, part_dir, "sweep-control", f"{label} sweep control", CONTROL_RETENTION_DAYS)
    result = fresh_login_load(args, url, part_dir, "sweep", f"{label} sweep", args.sweep_days)
    result["login_alone_p99_ms"] = alone
    result["control"] = control
    if alone and result["login_p99_ms"]:
        result["p99_ratio"] = round(result["login_p99_ms"] / alone, 2)
    if control["login_p99_ms"] and result["login_p99_ms"]:
        result["p99_ratio_to_control"] = round(result["login_p99_ms"] / control["login_p99_ms"], 2)
    return result


def cluster_load(args, url, part_dir, label, hash_file):
    """--nodes N (PostgreSQL): N nodes on the same database behind nginx
    (Server/Tests/cluster/run.py --serve --database-url), their start-up work waited for, then the
    hot paths loaded through nginx (benchmarks/wrk/harness.py cluster); the CPU counted is the
    nodes' summed (nginx's and PostgreSQL's are not)."""
    log_path = os.path.join(part_dir, "cluster.out")
    env = {key: value for key, value in os.environ.items() if not key.startswith("GATEHOUSE_")}
    env.update(GATEHOUSE_IP_LIMITS="off", GATEHOUSE_ADMIN_KEY=harness.ADMIN_KEY, BENCH_ADMIN_KEY=harness.ADMIN_KEY)
    # BENCH_SERVER_ENV's settings, as one node gets them (run.py --serve hands GATEHOUSE_* on).
    env.update(harness.server_settings())
    cluster = subprocess.Popen(
        [sys.executable, os.path.join(harness.REPO, "Server", "Tests", "cluster", "run.py"), "--serve", "--nodes", str(args.nodes),
         "--database-url", url, args.binary], stdout=open(log_path, "w"), stderr=subprocess.STDOUT, env=env)
    try:
        address, pids, deadline = None, [], time.monotonic() + 300
        while time.monotonic() < deadline and not (address and pids):
            if cluster.poll() is not None:
                raise RuntimeError(f"the cluster exited: {open(log_path).read()[-2000:]}")
            time.sleep(0.5)
            text = open(log_path).read()
            found = re.search(r"nginx \(use this\)\s+(http://\S+)", text)
            address = found and found.group(1)
            found = re.search(r"stop one node .*\((node .*)\)", text)
            pids = [int(pid) for pid in re.findall(r"node \d+: (\d+)", found.group(1))] if found else []
        if not (address and pids):
            raise RuntimeError(f"the cluster was not up within 300 s: {open(log_path).read()[-2000:]}")
        result = {"nodes": len(pids), "startup_work_s": until_idle(pids)}
        harness.log(f"{label}: {len(pids)} nodes behind {address}, idle {result['startup_work_s']} s after start")
        out = os.path.join(part_dir, "cluster.json")
        command = [sys.executable, os.path.join(HERE, "..", "wrk", "harness.py"), "cluster", "--url", address,
                   "--pids", ",".join(map(str, pids)), "--database", f"postgres-cluster-{len(pids)}", "--seconds", str(args.seconds),
                   "--connections", str(args.connections), "--scenarios", " ".join(SCENARIOS), "--warmup", "1",
                   "--hash", hash_file, "--out", out]
        subprocess.run(command, check=True, env=env)
        with open(out) as handle:
            part = json.load(handle)
        if part.get("failure"):
            raise RuntimeError(f"{label} cluster: {part['failure']}")
        result["scenarios"] = scenario_rows(part["scenarios"])
        result["rss_mib_summed"] = part.get("server_vmhwm_mib")
        return result
    finally:
        # run.py --serve stops its nodes and nginx on SIGTERM.
        harness.stop_process(cluster, 60)


def magic_link_load(args, url, part_dir, label, size, connections):
    """`POST /v1/auth/magic-link` for the loaded accounts' addresses (`magic_link.lua`, in turn),
    on a server started with a preset that signs in by magic link and lets an address ask again
    at once (MAGIC_LINK_PRESET); its scenario row."""
    workdir = os.path.join(part_dir, "magic-link")
    os.makedirs(workdir, exist_ok=True)
    with open(MAGIC_LINK_PRESET) as handle:
        preset = json.load(handle)
    preset["email"].update(request_interval_seconds=0, requests_per_day=1_000_000)
    preset_file = os.path.join(workdir, "magic-link-preset.json")
    with open(preset_file, "w") as handle:
        json.dump(preset, handle)
    settings = os.environ.get("BENCH_SERVER_ENV", "").split() + [f"GATEHOUSE_PRESET={preset_file}"]
    server = harness.Server(args.binary, url, workdir, settings)
    os.environ["WRK_MAGIC_ACCOUNTS"] = str(size)
    os.environ["WRK_MAGIC_START"] = str(secrets.randbelow(size))
    try:
        server.start()
        wrk = {"scenarios": {}}
        options = argparse.Namespace(seconds=args.seconds, hash="none", warmup=0)
        harness.load(server, wrk, options, ["magic_link"], 2, connections, workdir, f"{label}: magic links")
        return scenario_rows(wrk["scenarios"]).get("magic_link")
    finally:
        server.stop()


def scenario_rows(rows):
    """Each loaded scenario's rate, server CPU per request, p99 and answers."""
    return {name: {"requests_per_second": row.get("requests_per_second"),
                   "cpu_ms_per_request": round(row["server"]["cpu_seconds"] / row["requests"] * 1000, 3),
                   "p99_ms": row.get("latency_ms", {}).get("p99"), "statuses": row.get("statuses")}
            for name, row in rows.items() if row.get("requests")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--console-requests", type=int, default=200)
    parser.add_argument("--sweep-days", type=int, default=0, help="0: no sweep under load")
    parser.add_argument("--sweep-warmup", type=int, default=30, help="seconds of logins before the measured load beside the sweep")
    parser.add_argument("--reuse", help="a directory with databases loaded beforehand: scale_N.sqlite, or scale_N.postgres.url "
                        "(a PostgreSQL database's URL), each with its load report beside it (scale_N.sqlite.load.json, "
                        "scale_N.postgres.load.json: `gatehouse-bench load URL N > REPORT`)")
    parser.add_argument("--sessions", type=int, default=0, help="loaded accounts to sign in before reading the RSS (0: none)")
    parser.add_argument("--nodes", type=int, default=0, help="PostgreSQL: also load N nodes on the same database behind nginx "
                        "(0: one node only)")
    args = parser.parse_args()
    # One GATEHOUSE_SECRET_KEY for every server of a run: --nodes' cluster seals the signing keys
    # it makes with it, and the servers after it must read them.
    if "GATEHOUSE_SECRET_KEY" not in harness.server_settings():
        secret = secrets.token_urlsafe(48)
        os.environ["BENCH_SERVER_ENV"] = f"{os.environ.get('BENCH_SERVER_ENV', '')} GATEHOUSE_SECRET_KEY={secret}".strip()
    harness.raise_file_limit()
    workdir = tempfile.mkdtemp(prefix="gatehouse-scale-")
    run = {"machine": harness.machine_info(), "git": harness.git_info(), "argon2": harness.argon2_settings(), "parts": []}
    # One verification's CPU at the server's cost, to take out of a login's (the hash does not
    # grow with the data; what is around it may).
    timing = json.loads(subprocess.run([args.bench, "hash"], capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    run["verify_cpu_ms"] = timing["implementations"][timing["server_uses"]]["verify_cpu_ms_p50"]
    hash_file = os.path.join(workdir, "hash.json")
    with open(hash_file, "w") as handle:
        json.dump(timing, handle)
    harness.log(f"one verification: {run['verify_cpu_ms']} ms of CPU")
    try:
        for kind in args.databases.split(","):
            for size in [int(text) for text in args.sizes.split(",")]:
                label = f"{kind}-{size}"
                harness.log(f"{label}: loading {size} accounts")
                kept = args.reuse and os.path.join(args.reuse, f"scale_{size}.{kind}")
                if kept and os.path.exists(kept + ".load.json") and (kind == "postgres" and os.path.exists(kept + ".url") or os.path.exists(kept)):
                    # Loaded beforehand (gatehouse-bench load, its report beside it): measured as it is.
                    if kind == "sqlite":
                        url = f"sqlite://{kept}"
                    else:
                        with open(kept + ".url") as handle:
                            url = handle.read().strip()
                    drop = lambda: None  # noqa: E731
                    with open(kept + ".load.json") as handle:
                        load_report = json.loads(handle.read().strip().splitlines()[-1])
                    harness.log(f"{label}: using {url}, loaded beforehand")
                else:
                    url, drop = fresh_database(kind, workdir, f"scale_{size}")
                    loaded = subprocess.run([args.bench, "load", url, str(size)], capture_output=True, text=True, check=True)
                    load_report = json.loads(loaded.stdout.strip().splitlines()[-1])
                part = {"database": kind, "accounts": size, "load": load_report}
                harness.log(f"{label}: loaded in {part['load']['seconds']} s, {part['load']['database_mib']} MiB")
                part_dir = os.path.join(workdir, label)
                os.makedirs(part_dir, exist_ok=True)
                server = harness.Server(args.binary, url, part_dir)
                try:
                    server.start()
                    # Its start-up work (the first retention sweep, the census of hash schemes
                    # over every account) runs in the same process: measured only after it.
                    part["startup_work_s"] = until_idle(server.process.pid)
                    harness.log(f"{label}: idle {part['startup_work_s']} s after start")
                    part["console"] = console(server.port, args.console_requests)
                    part["console"].update(console_pages(server.port, args.console_requests))
                    wrk = {"scenarios": {}}
                    options = argparse.Namespace(seconds=args.seconds, hash="none", warmup=1)
                    threads = 2
                    harness.load(server, wrk, options, SCENARIOS, threads, args.connections - args.connections % threads, part_dir, label)
                    part["scenarios"] = scenario_rows(wrk["scenarios"])
                    part["rss_mib"] = harness.mib(harness.proc_status(server.process.pid, "VmRSS"))
                    if args.sessions:
                        part["memory"] = sessions_memory(server.port, server.process.pid, size, args.sessions)
                        harness.log(f"{label}: {part['memory']}")
                    server.stop()
                    part["scenarios"]["magic_link"] = magic_link_load(
                        args, url, part_dir, label, size, args.connections - args.connections % threads)
                    harness.log(f"{label}: magic links: {part['scenarios']['magic_link']}")
                    if args.nodes and kind == "postgres":
                        part["cluster"] = cluster_load(args, url, part_dir, label, hash_file)
                        harness.log(f"{label}: {args.nodes} nodes: {part['cluster']}")
                    if args.sweep_days:
                        part["sweep"] = sweep_under_load(args, url, part_dir, label, part["scenarios"].get("login", {}).get("p99_ms"))
                        harness.log(f"{label}: sweep under load: {part['sweep']}")
                finally:
                    server.stop()
                    drop()
                run["parts"].append(part)
                with open(args.out, "w") as handle:
                    json.dump(run, handle, indent=2)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(run)


def report(run):
    parts = run["parts"]
    for part in parts:
        if part.get("sweep"):
            print(f"sweep under login load, {part['database']} {part['accounts']:,}: {part['sweep']}")
    print(f"Server CPU ms per request (p99 ms); login without one verification ({run['verify_cpu_ms']} ms):")
    names = SCENARIOS + ["magic_link"]
    print("| database | accounts | load s | MiB | " + " | ".join(f"{name} CPU ms (p99 ms)" for name in names) + " | RSS MiB | RSS MiB with sessions signed in |")
    print("|---|---:|---:|---:|" + "---:|" * len(names) + "---:|---:|")
    def cells(scenarios):
        found = []
        for name in names:
            row = scenarios.get(name)
            cpu = row and (round(row["cpu_ms_per_request"] - run["verify_cpu_ms"], 3) if name == "login" else row["cpu_ms_per_request"])
            found.append(f"{cpu} ({row['p99_ms']})" if row else "-")
        return " | ".join(found)

    for part in parts:
        print(f"| {part['database']} | {part['accounts']:,} | {part['load']['seconds']} | {part['load']['database_mib']} | "
              + cells(part.get("scenarios", {})) + f" | {part.get('rss_mib')} | {part.get('memory', {}).get('rss_mib', '-')} ({part.get('memory', {}).get('sessions', 0):,}) |")
        if part.get("cluster"):
            cluster = part["cluster"]
            print(f"| {part['database']}, {cluster['nodes']} nodes (CPU summed) | {part['accounts']:,} | | | "
                  + cells(cluster.get("scenarios", {})) + f" | {cluster.get('rss_mib_summed')} (peak, summed) | |")
    print()
    routes = sorted({route for part in parts for route in part.get("console", {})})
    print("| database | accounts | " + " | ".join(f"{route} p99 ms" for route in routes) + " |")
    print("|---|---:|" + "---:|" * len(routes))

    def cell(figures):
        if "p99_ms" in figures:
            return str(figures["p99_ms"])
        if "seconds" in figures:  # the overview's background count: its time to show, once
            return f"{figures['seconds']} s"
        return f"over {figures['timed_out_after_s']} s" if "timed_out_after_s" in figures else "-"

    for part in parts:
        print(f"| {part['database']} | {part['accounts']:,} | "
              + " | ".join(cell(part.get("console", {}).get(route, {})) for route in routes) + " |")


if __name__ == "__main__":
    main()
