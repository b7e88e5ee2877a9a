#!/usr/bin/env python3
"""The wrk benchmark harness's Python half (stdlib only); benchmarks/wrk/run drives it.

  harness.py hash --bench-binary PATH --out FILE
      Times one Argon2id hash with `gatehouse-bench hash` (one thread) at the server's cost: the
      production parameters, or BENCH_SERVER_ENV's GATEHOUSE_ARGON2_* settings.
  harness.py db --database sqlite|postgres --url URL --binary PATH --seconds S --connections C
                --scenarios "..." --out FILE [--hash FILE] [--database-version TEXT]
      Starts `gatehouse serve` on that database, times the first healthy answer, signs up C
      accounts, runs every scenario with wrk (benchmarks/wrk/*.lua) while watching the server's
      CPU time and memory, and writes the figures to FILE (with the Argon2 cost the server ran
      at, and the hash timing when given).
      The `ceiling` scenario loads, in one run, the static GET /.well-known/jwks.json (held in
      memory: what the framework itself serves), an unmatched path (404), GET /v1/config,
      GET /v1/me and POST /v1/entitlements/check in short slices taken in rotation over
      BENCH_CEILING_ROUNDS rounds (default 3), and gives each route's rate as a share of the
      static route's.
  harness.py cluster --url URL --pids P1,P2,... --seconds S --connections C --scenarios "..."
                     --out FILE [--hash FILE] [--database NAME] [--database-version TEXT]
      The same scenarios against a deployment already running (benchmarks/wrk/capacity starts
      Server/Tests/cluster/run.py --serve: 3 nodes on one PostgreSQL behind nginx), signing up
      and loading through URL; the CPU counted is the sum of the given processes' (the nodes':
      nginx's and PostgreSQL's are not counted).
  harness.py report --out FILE [--hash FILE] PART...
      Joins the parts with the machine's description, writes FILE and prints Markdown tables:
      each part's scenarios, the ceiling's shares, the capacity per core of CPU against
      Keycloak's published sizing, and the targets of the performance issue marked met / not
      met. Exits 1 if any scenario had unexpected answers or socket errors.
  harness.py ab --binary PATH --workdir DIR --out FILE --config NAME 'KEY=VALUE ...' --config ...
                [--rounds N] [--slices K] [--seconds S] [--connections C] [--server-cpus LIST --wrk-cpus LIST]
                [--perf-dir DIR] [--route me|check]
      GET /v1/me (or POST /v1/entitlements/check) on SQLite under configurations that differ only in the server's settings (or in
      the build: a `binary=PATH` word among a configuration's settings): each
      round a new server per configuration, loaded one at a time in short slices taken in
      rotation; prints each one's req/s and CPU per request against the first with 95 %
      intervals of the per-round differences, and writes FILE.
  harness.py rotate --binary PATH --scenarios "..." --workdir DIR --out FILE --config NAME 'KEY=VALUE ...' --config ...
                    [--rounds N] [--seconds S] [--connections C]
      Whole `db` runs on SQLite (a new server and file each) of the scenarios `ab`'s slices cannot
      repeat (refresh, spend, login), the configurations taking turns round by round; the same
      report as `ab`'s, per scenario.
"""

import argparse
import base64
import concurrent.futures
import datetime
import http.client
import json
import os
import platform
import re
import resource
import secrets
import socket
import string
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ALL_SCENARIOS = ["ceiling", "me", "refresh", "supabase_refresh", "login", "signup", "handles", "check", "spend", "jwks", "me_with_logins",
                 "connections", "passkey_options", "passkey", "client_credentials"]
# Through a deployment the harness did not start (`cluster`): no idle-connection count (nginx
# holds them), no passkeys or Supabase surface (the nodes are not configured for them).
CLUSTER_SCENARIOS = [name for name in ALL_SCENARIOS if name not in ("connections", "passkey_options", "passkey", "supabase_refresh")]
# The routes of `ceiling`, the static one first: (name, script).
CEILING_ROUTES = [("jwks", "jwks.lua"), ("notfound", "notfound.lua"), ("config", "config.lua"), ("me", "me.lua"), ("check", "check.lua")]
CEILING_ROUNDS = int(os.environ.get("BENCH_CEILING_ROUNDS", "3"))
# The server's Argon2id cost when no GATEHOUSE_ARGON2_* setting is given (Argon2Parameters()).
ARGON2_DEFAULT = {"memory_kib": 19456, "iterations": 2, "parallelism": 1}
# Keycloak's published sizing, per vCPU, at Argon2id 7 MiB / 5 iterations / parallelism 1: password
# logins and refresh-token requests per second; and the goals as multiples of them.
# Client-credentials grants are sized like refreshes (120 per vCPU); the issue sets them no goal.
KEYCLOAK_PER_VCPU = {"login": 15, "refresh": 120, "client_credentials": 120}
CAPACITY_GOALS = {"login": 3, "refresh": 10}
# The operator's key of the servers the harness starts; `cluster` is given it (BENCH_ADMIN_KEY) by
# whoever started the nodes. `client_credentials` registers its confidential client with it.
ADMIN_KEY = os.environ.get("BENCH_ADMIN_KEY") or secrets.token_urlsafe(32)
# `Basic <client_id:secret>` of the client `client_credentials` loads (set when it is registered).
MACHINE_BASIC = ""
HOST = "127.0.0.1"  # where the server listens (`cluster`: nginx's host)
BEHIND_PROXY = False  # `cluster`, when the proxy answers with an X-Request-Id of its own (common.lua)
# The `apikey` of /auth/v1 (the Supabase-compatible surface, served only when it is set).
SUPABASE_ANON_KEY = "bench-supabase-anon-key-0123456789"
CHECK_ACTION = os.environ.get("BENCH_CHECK_ACTION", "practice_saved_flow")
IDLE_CONNECTIONS = int(os.environ.get("BENCH_IDLE_CONNECTIONS", "1000"))
LOGIN_NEIGHBOURS = 8  # the concurrent logins of me_with_logins
TOKEN_MAX_AGE = 600  # seconds; access tokens live 900 s in Handz, re-sign in before that
RP_ID = "bench.gatehouse.test"  # the passkeys' relying party; answers come from its native origin
# Prepared passkey assertions per second of the `passkey` run: above what two cores verify.
PASSKEY_RATE = int(os.environ.get("BENCH_PASSKEY_RATE", "1500"))
BENCH_PYTHON = os.environ.get("BENCH_PYTHON", os.path.join(REPO, ".build-venv", "bin", "python"))


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


def mib(kib):
    return round(kib / 1024, 1) if kib is not None else None


# --- the server process -----------------------------------------------------------------------


def proc_status(pid, field):
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])  # kB
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as handle:
        text = handle.read()
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime (fields 14 and 15)


class Monitor:
    """The server's CPU time across a run, and its resident memory sampled every 50 ms. With
    several processes (a cluster's nodes): their CPU time summed, the peak of their summed
    resident memory, and the sum of their lifetime peaks (VmHWM)."""

    def __init__(self, pids):
        self.pids = [pids] if isinstance(pids, int) else list(pids)
        self.peak_rss_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while True:
            rss = sum(proc_status(pid, "VmRSS") or 0 for pid in self.pids)
            if rss:
                self.peak_rss_kib = max(self.peak_rss_kib, rss)
            if self._stop.wait(0.05):
                return

    def __enter__(self):
        self.cpu_before = sum(cpu_seconds(pid) for pid in self.pids)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.cpu_used = sum(cpu_seconds(pid) for pid in self.pids) - self.cpu_before
        hwm = [proc_status(pid, "VmHWM") for pid in self.pids]
        self.hwm_kib = sum(hwm) if all(value is not None for value in hwm) else None
        return False


def server_settings(settings=None):
    """KEY=VALUE words as a dict: `settings`, or BENCH_SERVER_ENV's when None."""
    words = os.environ.get("BENCH_SERVER_ENV", "").split() if settings is None else settings
    return dict(word.partition("=")[::2] for word in words)


def argon2_settings(settings=None):
    """The Argon2id cost the server runs at, from its GATEHOUSE_ARGON2_* settings (BENCH_SERVER_ENV's
    when `settings` is None)."""
    given = {key: value for key, value in server_settings(settings).items() if key.startswith("GATEHOUSE_ARGON2_")}
    values = dict(ARGON2_DEFAULT)
    for key, name in (("GATEHOUSE_ARGON2_MEMORY_KIB", "memory_kib"), ("GATEHOUSE_ARGON2_ITERATIONS", "iterations"),
                      ("GATEHOUSE_ARGON2_PARALLELISM", "parallelism")):
        if key in given:
            values[name] = int(given[key])
    label = f"{values['memory_kib']} KiB / {values['iterations']} / {values['parallelism']}"
    return dict(values, settings=given, label=label if given else f"default {label}")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, binary, database_url, workdir, settings=None, prefix=()):
        self.binary = binary
        self.database_url = database_url
        self.workdir = workdir
        self.settings = settings  # KEY=VALUE words; None: BENCH_SERVER_ENV's
        self.prefix = list(prefix)  # e.g. taskset -c 0
        self.process = None

    def start(self):
        """Spawns `gatehouse serve` and returns the seconds to the first GET /health 200."""
        self.port = free_port()
        env = {key: value for key, value in os.environ.items() if not key.startswith("GATEHOUSE_")}
        env.update(
            GATEHOUSE_PORT=str(self.port),
            GATEHOUSE_DATABASE_URL=self.database_url,
            GATEHOUSE_IP_LIMITS="off",
            GATEHOUSE_LOG_LEVEL="warning",
            GATEHOUSE_PRESET="handz",
            GATEHOUSE_PASSKEY_RP_ID=RP_ID,
            GATEHOUSE_ADMIN_KEY=ADMIN_KEY,
            GATEHOUSE_SUPABASE_ANON_KEY=SUPABASE_ANON_KEY,
        )
        # One setting changed for an A/B run, e.g. BENCH_SERVER_ENV="GATEHOUSE_SESSION_CACHE=off".
        env.update(server_settings(self.settings))
        self.stdout = open(os.path.join(self.workdir, "server.out"), "w")
        self.stderr = open(os.path.join(self.workdir, "server.err"), "w")
        started = time.monotonic()
        self.process = subprocess.Popen(self.prefix + [self.binary, "serve"], env=env, stdout=self.stdout, stderr=self.stderr)
        while time.monotonic() - started < 60:
            if self.process.poll() is not None:
                raise RuntimeError(f"gatehouse exited with {self.process.returncode}: {self.tail()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/health")
                status = connection.getresponse().status
                connection.close()
                if status == 200:
                    return time.monotonic() - started
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError(f"gatehouse did not answer /health within 60 s: {self.tail()}")

    @property
    def pids(self):
        return [self.process.pid]

    def tail(self):
        self.stderr.flush()
        with open(os.path.join(self.workdir, "server.err")) as handle:
            return handle.read()[-2000:]

    def stop(self):
        if self.process:
            stop_process(self.process, 10)


def stop_process(process, seconds):
    """SIGTERM, then SIGKILL if `process` is still running after `seconds`; reaped either way."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- seeding ----------------------------------------------------------------------------------


def call(port, method, path, body=None, token=None):
    connection = http.client.HTTPConnection(HOST, port, timeout=60)
    headers = {}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    try:
        return response.status, json.loads(raw) if raw else None
    except ValueError:
        return response.status, raw.decode(errors="replace")


def expect(status, answer, wanted, what):
    if status != wanted:
        raise RuntimeError(f"{what}: {status} {answer}")
    return answer


def random_tag(length=6):
    return "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(length))


def seed(port, count, tag):
    """Signs up `count` accounts. Each gets two sessions: the sign-up's, whose access token the
    Bearer scenarios use, and a login's, whose refresh token starts the `refresh` chain (so a
    broken chain could not end the session the other scenarios use). Every second account takes
    a handle."""

    def one(index):
        email = f"wrk-{tag}-{index}@example.com"
        password = f"wrk load password {tag} {index}"
        answer = expect(*call(port, "POST", "/v1/auth/signup", {"email": email, "password": password}), 201, "sign-up")
        access = answer["session"]["access_token"]
        answer = expect(*call(port, "POST", "/v1/auth/login", {"email": email, "password": password}), 200, "login")
        refresh = answer["session"]["refresh_token"]
        session = answer["session"]["session_id"]
        handle = None
        if index % 2 == 0:
            handle = f"wt{tag}{index}"
            expect(*call(port, "PATCH", "/v1/me", {"handle": handle}, token=access), 200, "setting a handle")
        return {"email": email, "password": password, "access": access, "refresh": refresh, "session": session, "handle": handle}

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, count)) as pool:
        return list(pool.map(one, range(count)))


def register_machine_client(port):
    """A confidential OpenID client with an API scope, registered through the admin API, for
    `client_credentials` (its limit at the admin API's highest, so the load is not throttled)."""
    global MACHINE_BASIC
    payload = {"name": f"wrk machine {random_tag()}", "redirect_uris": ["https://unused.example/callback"],
               "post_logout_redirect_uris": [], "scopes": ["api:read"], "public": False, "first_party": False,
               "audience": "https://api.bench.example", "initiate_login_uri": None, "rate_limit_per_minute": 100000}
    client = expect(*call(port, "POST", "/admin/v1/oauth/clients", payload, token=ADMIN_KEY), 201,
                    "registering the client_credentials client")
    pair = f"{client['client_id']}:{client['client_secret']}".encode()
    MACHINE_BASIC = "Basic " + base64.b64encode(pair).decode()


def relogin(port, accounts):
    def one(account):
        answer = expect(*call(port, "POST", "/v1/auth/login", {"email": account["email"], "password": account["password"]}), 200, "login")
        account["access"] = answer["session"]["access_token"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(accounts))) as pool:
        list(pool.map(one, accounts))


def new_chains(port, accounts):
    """A new login session per account whose refresh token starts a fresh chain: each refresh
    scenario rotates its chains to the end, so the next one cannot reuse them."""

    def one(account):
        answer = expect(*call(port, "POST", "/v1/auth/login", {"email": account["email"], "password": account["password"]}), 200, "login")
        account["refresh"] = answer["session"]["refresh_token"]
        account["session"] = answer["session"]["session_id"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(accounts))) as pool:
        list(pool.map(one, accounts))


def write_accounts(path, accounts):
    def lua_list(values):
        for value in values:
            if not re.fullmatch(r"[A-Za-z0-9@._ +\-]*", value):
                raise ValueError(f"unexpected character in {value!r}")
        return "{" + ",".join(json.dumps(value) for value in values) + "}"

    columns = {name: [account[name] for account in accounts] for name in ("email", "password", "access", "refresh", "session")}
    columns["taken"] = [account["handle"] for account in accounts if account["handle"]]
    with open(path, "w") as handle:
        handle.write("return {\n")
        for name, values in columns.items():
            handle.write(f"  {name} = {lua_list(values)},\n")
        handle.write("}\n")


# --- wrk --------------------------------------------------------------------------------------


WRK_PREFIX = []  # e.g. taskset -c 1 (harness.py ab --wrk-cpus)


def wrk_command(script, port, threads, connections, seconds):
    return WRK_PREFIX + ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "--latency",
            "-s", os.path.join(HERE, script), f"http://{HOST}:{port}"]


def wrk_env(scenario, accounts_file, threads):
    env = dict(os.environ)
    env.update(WRK_ACCOUNTS=accounts_file, WRK_THREADS=str(threads), WRK_RUN_TAG=random_tag(),
               WRK_SCENARIO=scenario, WRK_CHECK_ACTION=CHECK_ACTION, WRK_SUPABASE_ANON_KEY=SUPABASE_ANON_KEY,
               WRK_BEHIND_PROXY="1" if BEHIND_PROXY else "", WRK_MACHINE_BASIC=MACHINE_BASIC)
    return env


def parse_wrk(output, what):
    for line in output.splitlines():
        if line.startswith("WRK_RESULT "):
            return json.loads(line[len("WRK_RESULT "):])
    raise RuntimeError(f"wrk printed no result for {what}:\n{output[-3000:]}")


def start_wrk(scenario, script, port, threads, connections, seconds, accounts_file, workdir, label):
    out = open(os.path.join(workdir, f"wrk-{label}.out"), "w+")
    process = subprocess.Popen(wrk_command(script, port, threads, connections, seconds), env=wrk_env(scenario, accounts_file, threads),
                               stdout=out, stderr=subprocess.STDOUT, text=True)
    return process, out


def finish_wrk(process, out, label, seconds):
    process.wait(timeout=seconds + 120)
    out.seek(0)
    text = out.read()
    out.close()
    if process.returncode != 0:
        raise RuntimeError(f"wrk ({label}) exited with {process.returncode}:\n{text[-3000:]}")
    return parse_wrk(text, label)


EXPECTED = {
    "me": ("GET /v1/me", {200}),
    "refresh": ("POST /v1/auth/refresh", {200}),
    "supabase_refresh": ("POST /auth/v1/token?grant_type=refresh_token", {200}),
    "login": ("POST /v1/auth/login", {200}),
    "signup": ("POST /v1/auth/signup", {201}),
    "handles": ("GET /v1/handles/{handle}", {200}),
    "check": ("POST /v1/entitlements/check", {200}),
    "spend": ("POST /v1/credits/practice/spend", {200, 403}),
    "magic_link": ("POST /v1/auth/magic-link", {202}),
    "jwks": ("GET /.well-known/jwks.json", {200}),
    "notfound": ("GET /no/such/path", {404}),
    "config": ("GET /v1/config", {200}),
    "passkey_options": ("POST /v1/passkeys/authentication/options", {200}),
    "passkey": ("POST /v1/passkeys/authentication/verify", {200}),
    "client_credentials": ("POST /oauth/token (grant_type=client_credentials)", {200}),
}


def figures(name, raw, threads, connections, expected, monitor=None, requests_for_cpu=None):
    """One scenario's figures from wrk's result line and the server's monitor."""
    seconds = raw["duration_us"] / 1e6
    requests = raw["requests"]
    statuses = {code: count for code, count in sorted(raw["statuses"].items())}
    non_2xx = sum(count for code, count in statuses.items() if not 200 <= int(code) < 300)
    unexpected = sum(count for code, count in statuses.items() if int(code) not in expected)
    socket_errors = {kind: raw["errors"][kind] for kind in ("connect", "read", "write", "timeout")}
    latency = {key: round(value / 1000, 3) if value is not None else None for key, value in raw["latency_us"].items()}
    result = {
        "scenario": name,
        "request": EXPECTED[raw["scenario"]][0],
        "threads": threads,
        "connections": connections,
        "seconds": round(seconds, 2),
        "requests": requests,
        "requests_per_second": round(requests / seconds, 1) if seconds else 0,
        "latency_ms": latency,
        "statuses": statuses,
        "expected_statuses": sorted(expected),
        "non_2xx": non_2xx,
        "unexpected_statuses": unexpected,
        "socket_errors": socket_errors,
        "unexpected_total": unexpected + sum(socket_errors.values()) + raw["extra"].get("slot_reused_after_loss", 0)
                            + raw["extra"].get("unmatched_answers", 0) + raw["extra"].get("duplicate_tokens_sent", 0)
                            + raw["extra"].get("bodies_exhausted", 0) + raw["extra"].get("answers_without_session", 0),
        "counters": raw["extra"],
        "load_average_1m_before": LOAD_BEFORE.get(name),
    }
    answered = sum(statuses.values())
    if answered != requests:
        result["note_unparsed_answers"] = requests - answered
    if monitor:
        used = monitor.cpu_used
        result["server"] = {
            "cpu_seconds": round(used, 3),
            "cpu_seconds_per_1000_requests": round(used / (requests_for_cpu or requests) * 1000, 4) if (requests_for_cpu or requests) else None,
            "rss_peak_sampled_mib": mib(monitor.peak_rss_kib),
            "vmhwm_mib": mib(monitor.hwm_kib),
        }
    return result


LOAD_BEFORE = {}  # scenario -> the machine's 1-minute load average as it started


def run_scenario(server, name, script, threads, connections, seconds, accounts_file, workdir):
    LOAD_BEFORE[name] = round(os.getloadavg()[0], 2)
    log(f"{name}: wrk -t{threads} -c{connections} -d{seconds}s {script}")
    with Monitor(server.pids) as monitor:
        process, out = start_wrk(script[:-4], script, server.port, threads, connections, seconds, accounts_file, workdir, name)
        raw = finish_wrk(process, out, name, seconds)
    result = figures(name, raw, threads, connections, EXPECTED[raw["scenario"]][1], monitor)
    log(f"{name}: {result['requests_per_second']} req/s, p99 {result['latency_ms']['p99']} ms, statuses {result['statuses']}, "
        f"socket errors {sum(result['socket_errors'].values())}")
    return result


def me_with_logins(server, threads, connections, seconds, accounts_file, workdir):
    """GET /v1/me with `connections` connections while a second wrk runs 8 connections of login
    from 0.5 s before until about 1 s after."""
    LOAD_BEFORE["me_with_logins"] = round(os.getloadavg()[0], 2)
    log(f"me_with_logins: me at {connections} connections during {LOGIN_NEIGHBOURS} concurrent logins")
    with Monitor(server.pids) as monitor:
        login_process, login_out = start_wrk("login", "login.lua", server.port, 1, LOGIN_NEIGHBOURS, seconds + 2, accounts_file, workdir,
                                             "me_with_logins-login")
        time.sleep(0.5)
        me_process, me_out = start_wrk("me", "me.lua", server.port, threads, connections, seconds, accounts_file, workdir, "me_with_logins-me")
        me_raw = finish_wrk(me_process, me_out, "me_with_logins (me)", seconds)
        login_raw = finish_wrk(login_process, login_out, "me_with_logins (login)", seconds + 2)
    total = me_raw["requests"] + login_raw["requests"]
    result = figures("me_with_logins", me_raw, threads, connections, {200}, monitor, requests_for_cpu=total)
    result["server"]["cpu_note"] = "CPU per 1,000 requests counts the logins' requests too"
    result["logins"] = figures("me_with_logins/login", login_raw, 1, LOGIN_NEIGHBOURS, {200})
    result["unexpected_total"] += result["logins"]["unexpected_total"]
    log(f"me_with_logins: me {result['requests_per_second']} req/s p99 {result['latency_ms']['p99']} ms; "
        f"logins {result['logins']['requests_per_second']} req/s")
    return result


def idle_connections(server, count):
    """Opens `count` keep-alive connections, sends one GET /health on each, keeps them open and
    reads the server's resident memory."""
    log(f"connections: opening {count} idle keep-alive connections")
    pid = server.process.pid
    before = proc_status(pid, "VmRSS")
    load = round(os.getloadavg()[0], 2)
    sockets = []
    request = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
    healthy = 0
    errors = 0
    try:
        for _ in range(count):
            try:
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
                sock.sendall(request)
                sockets.append(sock)
            except OSError:
                errors += 1
        for sock in sockets:
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = sock.recv(4096)
                    if not chunk:
                        raise OSError("closed")
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
                while len(body) < length:
                    chunk = sock.recv(4096)
                    if not chunk:
                        raise OSError("closed")
                    body += chunk
                if head.startswith(b"HTTP/1.1 200"):
                    healthy += 1
                else:
                    errors += 1
            except OSError:
                errors += 1
        time.sleep(1)
        rss = proc_status(pid, "VmRSS")
        hwm = proc_status(pid, "VmHWM")
        still_open = 0
        for sock in sockets:
            sock.setblocking(False)
            try:
                still_open += 0 if sock.recv(1, socket.MSG_PEEK) == b"" else 1
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
    finally:
        for sock in sockets:
            sock.close()
    result = {
        "scenario": "connections",
        "connections": count,
        "answered_200": healthy,
        "still_open_after_1s": still_open,
        "rss_before_mib": mib(before),
        "rss_with_connections_mib": mib(rss),
        "rss_added_mib": mib(rss - before) if rss and before else None,
        "vmhwm_mib": mib(hwm),
        "unexpected_total": errors + (count - still_open if still_open < count else 0),
        "load_average_1m_before": load,
    }
    log(f"connections: {healthy} answered, {still_open} still open, RSS {result['rss_with_connections_mib']} MiB "
        f"(before {result['rss_before_mib']} MiB)")
    return result


def passkey_sign_ins(server, threads, connections, seconds, accounts_file, workdir):
    """The second half of passkey sign-ins: passkeys.py signs `connections` accounts up with a
    passkey and prepares assertions over fresh challenges (more than the run can use), then wrk
    sends each once. The preparation (options, signing) is not timed; `passkey_options` times
    the first half."""
    bodies = os.path.join(workdir, "passkey-bodies.jsonl")
    count = PASSKEY_RATE * seconds
    log(f"passkey: signing up {connections} passkey accounts and preparing {count} assertions ({BENCH_PYTHON})")
    prepared = subprocess.run([BENCH_PYTHON, os.path.join(HERE, "passkeys.py"), "--port", str(server.port), "--rp-id", RP_ID,
                               "--accounts", str(connections), "--assertions", str(count), "--out", bodies],
                              capture_output=True, text=True, timeout=600)
    if prepared.returncode != 0:
        raise RuntimeError(f"passkeys.py failed: {prepared.stderr[-2000:]}")
    preparation = json.loads(prepared.stdout.strip().splitlines()[-1])
    log(f"passkey: {preparation}")
    os.environ["WRK_PASSKEY_BODIES"] = bodies
    result = run_scenario(server, "passkey", "passkey.lua", threads, connections, seconds, accounts_file, workdir)
    result["preparation"] = preparation
    return result


def ceiling(server, threads, connections, seconds, accounts_file, workdir, fresh_tokens):
    """The framework's own ceiling beside the token reads, in one run: each round loads every
    route of CEILING_ROUTES for `seconds / rounds` seconds (at least 2) one after another, the
    order rotated each round, so that the machine's drift over the run falls on every route
    alike. Each route's rate is also given as a share of the static route's (GET
    /.well-known/jwks.json, held in memory), per round and over the run."""
    rounds = max(1, CEILING_ROUNDS)
    slice_seconds = max(2, round(seconds / rounds))
    LOAD_BEFORE["ceiling"] = round(os.getloadavg()[0], 2)
    log(f"ceiling: {rounds} rounds of {len(CEILING_ROUTES)} routes, {slice_seconds} s each")
    slices = []
    for round_index in range(rounds):
        fresh_tokens()
        shift = round_index % len(CEILING_ROUTES)
        for route, script in CEILING_ROUTES[shift:] + CEILING_ROUTES[:shift]:
            result = run_scenario(server, f"ceiling-{route}-r{round_index + 1}", script, threads, connections, slice_seconds,
                                  accounts_file, workdir)
            slices.append({"round": round_index + 1, "route": route, "result": result})

    def rate(rows):
        seconds_total = sum(row["result"]["seconds"] for row in rows)
        return sum(row["result"]["requests"] for row in rows) / seconds_total if seconds_total else 0

    static = CEILING_ROUTES[0][0]
    static_by_round = {r: rate([row for row in slices if row["route"] == static and row["round"] == r]) for r in range(1, rounds + 1)}
    static_rate = rate([row for row in slices if row["route"] == static])
    routes = {}
    for route, _ in CEILING_ROUTES:
        rows = [row for row in slices if row["route"] == route]
        results = [row["result"] for row in rows]
        requests = sum(result["requests"] for result in results)
        cpu = sum(result["server"]["cpu_seconds"] for result in results)
        statuses = {}
        for result in results:
            for code, count in result["statuses"].items():
                statuses[code] = statuses.get(code, 0) + count
        shares = [rate([row]) / static_by_round[row["round"]] if static_by_round[row["round"]] else None for row in rows]
        known = [share for share in shares if share is not None]
        routes[route] = {
            "request": results[0]["request"],
            "requests": requests,
            "seconds": round(sum(result["seconds"] for result in results), 2),
            "requests_per_second": round(rate(rows), 1),
            "p99_ms_worst_slice": max(result["latency_ms"]["p99"] for result in results),
            "p99_ms_mean_weighted_by_requests": round(sum(result["latency_ms"]["p99"] * result["requests"] for result in results)
                                                      / requests, 3) if requests else None,
            "p50_ms_mean_weighted_by_requests": round(sum(result["latency_ms"]["p50"] * result["requests"] for result in results)
                                                      / requests, 3) if requests else None,
            "cpu_ms_per_request": round(cpu / requests * 1000, 4) if requests else None,
            "share_of_static": round(rate(rows) / static_rate, 4) if static_rate else None,
            "share_of_static_by_round": [round(share, 4) if share is not None else None for share in shares],
            "share_of_static_min": round(min(known), 4) if known else None,
            "share_of_static_max": round(max(known), 4) if known else None,
            "statuses": statuses,
            "unexpected_total": sum(result["unexpected_total"] for result in results),
        }
    for route, row in routes.items():
        log(f"ceiling: {route} {row['requests_per_second']:,.0f} req/s, {row['share_of_static'] * 100:.1f} % of the static route "
            f"({row['share_of_static_min'] * 100:.1f}–{row['share_of_static_max'] * 100:.1f} % over {rounds} rounds), "
            f"{row['cpu_ms_per_request']} CPU ms/request")
    return {
        "scenario": "ceiling",
        "rounds": rounds,
        "slice_seconds": slice_seconds,
        "threads": threads,
        "connections": connections,
        "static_route": static,
        "routes": routes,
        "unexpected_total": sum(row["unexpected_total"] for row in routes.values()),
        "load_average_1m_before": LOAD_BEFORE["ceiling"],
        "slices": [{"round": row["round"], "route": row["route"], "requests_per_second": row["result"]["requests_per_second"],
                    "latency_ms": row["result"]["latency_ms"], "statuses": row["result"]["statuses"],
                    "unexpected_total": row["result"]["unexpected_total"], "server": row["result"].get("server"),
                    "load_average_1m_before": row["result"]["load_average_1m_before"]} for row in slices],
    }


def raise_file_limit():
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the server inherits it
    except (ValueError, OSError):
        pass


def read_hash(path):
    if path and os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    return None


def load(server, part, args, scenarios, threads, connections, workdir, what):
    """Signs up one account per connection through `server`, warms up and runs `scenarios`,
    putting the figures into `part`."""
    tag = random_tag()
    started = time.monotonic()
    accounts = seed(server.port, connections, tag)
    seeded_at = time.monotonic()
    part["seed_seconds"] = round(seeded_at - started, 2)
    part["accounts"] = len(accounts)
    log(f"{what}: {len(accounts)} accounts signed up in {part['seed_seconds']} s")
    accounts_file = os.path.join(workdir, "accounts.lua")
    write_accounts(accounts_file, accounts)
    if "client_credentials" in scenarios:
        register_machine_client(server.port)

    def fresh_tokens():
        nonlocal seeded_at
        if time.monotonic() - seeded_at > TOKEN_MAX_AGE:
            log("access tokens are getting old: signing the accounts in again")
            relogin(server.port, accounts)
            write_accounts(accounts_file, accounts)
            seeded_at = time.monotonic()

    if args.warmup > 0:
        log(f"warm-up: {args.warmup} s of GET /v1/me (not recorded)")
        process, out = start_wrk("me", "me.lua", server.port, threads, connections, args.warmup, accounts_file, workdir, "warmup")
        finish_wrk(process, out, "warm-up", args.warmup)

    results = part["scenarios"]
    chains_used = False
    for name in scenarios:
        fresh_tokens()
        if name in ("refresh", "supabase_refresh"):
            if chains_used:
                log("new refresh chains for this scenario")
                new_chains(server.port, accounts)
                write_accounts(accounts_file, accounts)
            chains_used = True
        if name == "ceiling":
            results[name] = ceiling(server, threads, connections, args.seconds, accounts_file, workdir, fresh_tokens)
        elif name == "handles":
            results["handles"] = run_scenario(server, "handles", "handles.lua", threads, connections, args.seconds, accounts_file, workdir)
            results["handles_1"] = run_scenario(server, "handles_1", "handles.lua", 1, 1, args.seconds, accounts_file, workdir)
        elif name == "login":
            results["login"] = run_scenario(server, "login", "login.lua", threads, connections, args.seconds, accounts_file, workdir)
            if not args.hash:
                # No gatehouse-bench: one hash's time is the p50 of a single-connection login run.
                results["login_1"] = run_scenario(server, "login_1", "login.lua", 1, 1, min(args.seconds, 5), accounts_file, workdir)
        elif name == "me_with_logins":
            results[name] = me_with_logins(server, threads, connections, args.seconds, accounts_file, workdir)
        elif name == "connections":
            results[name] = idle_connections(server, IDLE_CONNECTIONS)
        elif name == "passkey":
            results[name] = passkey_sign_ins(server, threads, connections, args.seconds, accounts_file, workdir)
        else:
            results[name] = run_scenario(server, name, f"{name}.lua", threads, connections, args.seconds, accounts_file, workdir)


def new_part(database, args, connections, threads):
    part = {"database": database, "database_version": args.database_version, "seconds": args.seconds,
            "connections": connections, "threads": threads, "check_action": CHECK_ACTION,
            "argon2": argon2_settings(), "scenarios": {}}
    hash_row = read_hash(args.hash)
    if hash_row:
        part["argon2_hash"] = hash_row
    return part


def command_db(args):
    raise_file_limit()
    scenarios = args.scenarios.split()
    for name in scenarios:
        if name not in ALL_SCENARIOS:
            raise SystemExit(f"unknown scenario {name!r} (known: {' '.join(ALL_SCENARIOS)})")
    workdir = os.path.join(os.path.dirname(os.path.abspath(args.out)), f"{args.database}-work")
    os.makedirs(workdir, exist_ok=True)
    connections = args.connections
    threads = min(2, connections)
    connections -= connections % threads  # wrk gives each thread connections / threads
    server = Server(args.binary, args.url, workdir)
    part = new_part(args.database, args, connections, threads)
    try:
        log(f"{args.database}: starting {args.binary} serve (Argon2id {part['argon2']['label']})")
        part["first_healthy_ms"] = round(server.start() * 1000, 1)
        log(f"{args.database}: first healthy response after {part['first_healthy_ms']} ms")
        part["rss_after_start_mib"] = mib(proc_status(server.process.pid, "VmRSS"))
        load(server, part, args, scenarios, threads, connections, workdir, args.database)
        part["server_vmhwm_mib"] = mib(proc_status(server.process.pid, "VmHWM"))
    except Exception as error:  # recorded in the part, reported, and the run fails
        part["failure"] = f"{type(error).__name__}: {error}"
        log(f"{args.database}: FAILED: {part['failure']}")
    finally:
        server.stop()
    with open(args.out, "w") as handle:
        json.dump(part, handle, indent=2)


class Deployment:
    """A deployment the harness did not start (benchmarks/wrk/capacity's cluster): where to send
    requests, and the processes whose CPU time and memory count as the server's."""

    def __init__(self, url, pids, workdir):
        address = urllib.parse.urlsplit(url)
        if address.scheme != "http" or not address.hostname:
            raise SystemExit(f"--url must be http://HOST:PORT, not {url!r}")
        self.host = address.hostname
        self.port = address.port or 80
        self.pids = pids
        self.workdir = workdir

    def echoes_request_id(self):
        """Whether an answer carries the X-Request-Id its request was sent with (not a proxy's own)."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        connection.request("GET", "/health", headers={"X-Request-Id": "wrkprobe1s1n1"})
        response = connection.getresponse()
        response.read()
        connection.close()
        if response.status != 200:
            raise RuntimeError(f"GET /health through {self.host}:{self.port}: {response.status}")
        return response.getheader("X-Request-Id") == "wrkprobe1s1n1"


def command_cluster(args):
    global HOST, BEHIND_PROXY
    raise_file_limit()
    scenarios = args.scenarios.split()
    for name in scenarios:
        if name not in CLUSTER_SCENARIOS:
            raise SystemExit(f"scenario {name!r} does not run against a cluster (these do: {' '.join(CLUSTER_SCENARIOS)})")
    pids = [int(pid) for pid in args.pids.replace(",", " ").split()]
    for pid in pids:
        if not os.path.exists(f"/proc/{pid}/stat"):
            raise SystemExit(f"no process {pid} (--pids: the nodes' process ids)")
    workdir = os.path.join(os.path.dirname(os.path.abspath(args.out)), "cluster-work")
    os.makedirs(workdir, exist_ok=True)
    connections = args.connections
    threads = min(2, connections)
    connections -= connections % threads
    deployment = Deployment(args.url, pids, workdir)
    HOST = deployment.host
    part = new_part(args.database, args, connections, threads)
    part.update(url=args.url, nodes=len(pids), node_pids=pids,
                cpu_counted=f"the {len(pids)} Gatehouse nodes' processes, summed; nginx's and PostgreSQL's CPU are not counted")
    try:
        BEHIND_PROXY = not deployment.echoes_request_id()
        part["request_ids"] = ("the proxy answers with X-Request-Id of its own: refresh chains are matched by their session's id, "
                               "other scenarios take their accounts in turn" if BEHIND_PROXY else "echoed")
        log(f"{args.database}: {args.url}, {len(pids)} node processes {pids} (Argon2id {part['argon2']['label']}); "
            f"X-Request-Id {'replaced by the proxy' if BEHIND_PROXY else 'echoed'}")
        part["rss_after_start_mib"] = mib(sum(proc_status(pid, "VmRSS") or 0 for pid in pids))
        load(deployment, part, args, scenarios, threads, connections, workdir, args.database)
        hwm = [proc_status(pid, "VmHWM") for pid in pids]
        part["server_vmhwm_mib"] = mib(sum(hwm)) if all(value is not None for value in hwm) else None
    except Exception as error:  # recorded in the part, reported, and the run fails
        part["failure"] = f"{type(error).__name__}: {error}"
        log(f"{args.database}: FAILED: {part['failure']}")
    with open(args.out, "w") as handle:
        json.dump(part, handle, indent=2)


# --- hashing ----------------------------------------------------------------------------------


def command_hash(args):
    # The cost the server runs at: GATEHOUSE_ARGON2_* of BENCH_SERVER_ENV (as Server.start passes
    # them), never a GATEHOUSE_ variable of the caller's own environment.
    env = {key: value for key, value in os.environ.items() if not key.startswith("GATEHOUSE_")}
    env.update(argon2_settings()["settings"])
    log(f"timing Argon2id with {args.bench_binary} hash ({argon2_settings()['label']})")
    output = subprocess.run([args.bench_binary, "hash"], capture_output=True, text=True, timeout=600, check=True, env=env).stdout
    row = json.loads(output.strip().splitlines()[-1])
    row["source"] = f"{os.path.relpath(args.bench_binary, REPO)} hash"
    with open(args.out, "w") as handle:
        json.dump(row, handle, indent=2)
    log(f"Argon2id hash p50 {row['hash_ms_p50']} ms, verify p50 {row['verify_ms_p50']} ms")


# --- report -----------------------------------------------------------------------------------


def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def machine_info():
    cpuinfo = read_text("/proc/cpuinfo")
    model = re.search(r"model name\s*:\s*(.*)", cpuinfo)
    memory = re.search(r"MemTotal:\s*(\d+)", read_text("/proc/meminfo"))
    os_release = re.search(r'PRETTY_NAME="?([^"\n]*)', read_text("/etc/os-release"))

    def first_line(command):
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=60)
            return (result.stdout or result.stderr).strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            return None

    return {
        "cpu_model": model.group(1).strip() if model else platform.processor(),
        "cores": os.cpu_count(),
        "memory_gib": round(int(memory.group(1)) / 1024 / 1024, 1) if memory else None,
        "os": os_release.group(1) if os_release else platform.platform(),
        "kernel": platform.release(),
        "swift": first_line(["swift", "--version"]),
        "wrk": first_line(["wrk", "--version"]),
        "python": platform.python_version(),
        "load_average_at_report": list(os.getloadavg()),
    }


def git_info():
    def git(*arguments):
        try:
            return subprocess.run(["git", *arguments], cwd=REPO, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": git("rev-parse", "--short", "HEAD") or None, "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def file_info(path):
    if not path or not os.path.exists(path):
        return None
    stat = os.stat(path)
    return {"path": os.path.relpath(os.path.realpath(path), REPO) if os.path.realpath(path).startswith(REPO) else path,
            "modified_utc": datetime.datetime.fromtimestamp(stat.st_mtime, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def verdict(ok):
    if ok is None:
        return "n/a"
    return "met" if ok else "**not met**"


def part_title(part):
    database = part["database"]
    version = part.get("database_version") or "postgres"
    if database == "sqlite":
        return "SQLite (WAL, default durability)"
    if database == "postgres":
        return f"PostgreSQL, durable ({version})"
    if database.startswith("postgres-cluster"):
        return f"{part.get('nodes', '?')} Gatehouse nodes on one durable PostgreSQL ({version}) behind nginx"
    return database


def part_label(part):
    """A short name for the part in the tables that span parts."""
    database = part["database"]
    name = {"sqlite": "SQLite", "postgres": "PostgreSQL"}.get(database)
    if not name:
        name = f"cluster of {part.get('nodes', '?')} (PostgreSQL, nginx)" if database.startswith("postgres-cluster") else database
    return name


def argon2_label(part):
    return (part.get("argon2") or {}).get("label", "not recorded")


def hash_time(part, hash_row):
    """One Argon2id hash's time at the part's cost, in ms, and where it comes from: the part's own
    hash timing, else the report's (--hash) when its parameters match the part's, else a
    single-connection login's p50 (an approximation: a whole login's wall time)."""
    argon2 = part.get("argon2")
    for candidate in (part.get("argon2_hash"), hash_row):
        if not candidate or "hash_ms_p50" not in candidate:
            continue
        if argon2 and any(candidate.get(key) != argon2.get(key) for key in ("memory_kib", "iterations", "parallelism")):
            continue
        return candidate["hash_ms_p50"], f"one hash {candidate['hash_ms_p50']} ms by `{candidate.get('source')}`"
    login_1 = part["scenarios"].get("login_1")
    if login_1:
        return login_1["latency_ms"]["p50"], f"one hash ≈ single-connection login p50 {login_1['latency_ms']['p50']} ms"
    return None, None


def is_keycloak_cost(part):
    argon2 = part.get("argon2") or {}
    return (argon2.get("memory_kib"), argon2.get("iterations"), argon2.get("parallelism")) == (7168, 5, 1)


def targets(part, hash_row):
    """Issue 47's targets for one part: (target, measured, met or not, or None: judged by hand or
    not measurable)."""
    s = part["scenarios"]
    rows = []
    database = part["database"]

    ceiling = s.get("ceiling")
    if ceiling and database == "sqlite":
        static = ceiling["routes"][ceiling["static_route"]]
        for route in ("config", "me", "check"):
            row = ceiling["routes"].get(route)
            if not row or row["share_of_static"] is None:
                continue
            rows.append((f"`{row['request']}` ≥ 85 % of the static route's req/s (SQLite, `ceiling`)",
                         f"{row['share_of_static'] * 100:.1f} % ({row['requests_per_second']:,.0f} ÷ {static['requests_per_second']:,.0f} req/s; "
                         f"{row['share_of_static_min'] * 100:.1f}–{row['share_of_static_max'] * 100:.1f} % over {ceiling['rounds']} rounds)",
                         row["share_of_static"] >= 0.85))
    me = s.get("me")
    mixed = s.get("me_with_logins")
    if mixed:
        if me:
            rows.append((f"`GET /v1/me` p99 during {LOGIN_NEIGHBOURS} concurrent logins ≤ 2× idle p99",
                         f"p99 {mixed['latency_ms']['p99']} ms vs {me['latency_ms']['p99']} ms idle "
                         f"({mixed['latency_ms']['p99'] / me['latency_ms']['p99']:.2f}×)",
                         mixed["latency_ms"]["p99"] <= 2 * me["latency_ms"]["p99"]))
        else:
            rows.append((f"`GET /v1/me` p99 during {LOGIN_NEIGHBOURS} concurrent logins ≤ 2× idle p99",
                         f"p99 {mixed['latency_ms']['p99']} ms (no idle `me` run)", None))
    idle = s.get("connections")
    if idle:
        rss = idle["rss_with_connections_mib"]
        megabytes = rss * 1.048576 if rss is not None else None
        rows.append((f"RSS ≤ 150 MB at {idle['connections']:,} open connections",
                     f"{megabytes:.1f} MB = {rss} MiB ({idle['still_open_after_1s']:,} open)" if rss is not None else "not read",
                     megabytes is not None and megabytes <= 150 and idle["still_open_after_1s"] == idle["connections"]))
    for name in ("refresh", "spend"):
        row = s.get(name)
        if row:
            rows.append((f"`{row['request']}` not slower than before (judged against an earlier run by hand)",
                         f"{row['requests_per_second']:,.0f} req/s, p99 {row['latency_ms']['p99']} ms", None))
    return rows


def database_ratios(parts):
    """PostgreSQL ÷ SQLite ≥ 0.8 for GET /v1/me and check: the `me` and `check` scenarios' req/s,
    and the ceiling's when both ran it (as the ratio of the routes' shares of each run's static
    route, which takes out the machine's drift between the two runs; the plain req/s ratio is
    shown beside it). Parts are paired by their Argon2 cost (a capacity run has two of each)."""
    groups = {}
    for part in parts:
        groups.setdefault(argon2_label(part), {}).setdefault(part["database"], part)
    rows = []
    for label, by_database in groups.items():
        sqlite, postgres = by_database.get("sqlite"), by_database.get("postgres")
        if not sqlite or not postgres:
            continue
        suffix = f", Argon2id {label}" if len(groups) > 1 else ""
        for name in ("me", "check"):
            a, b = sqlite["scenarios"].get(name), postgres["scenarios"].get(name)
            if a and b and a.get("requests_per_second"):
                ratio = b["requests_per_second"] / a["requests_per_second"]
                rows.append((f"PostgreSQL ÷ SQLite ≥ 0.8: `{a['request']}` (scenario `{name}`{suffix})",
                             f"{ratio:.2f} ({b['requests_per_second']:,.0f} ÷ {a['requests_per_second']:,.0f} req/s)", ratio >= 0.8))
        ca, cb = sqlite["scenarios"].get("ceiling"), postgres["scenarios"].get("ceiling")
        if ca and cb:
            for route in ("me", "check"):
                ra, rb = ca["routes"].get(route), cb["routes"].get(route)
                if not ra or not rb or not ra.get("share_of_static") or rb.get("share_of_static") is None:
                    continue
                ratio = rb["share_of_static"] / ra["share_of_static"]
                plain = rb["requests_per_second"] / ra["requests_per_second"] if ra["requests_per_second"] else float("nan")
                rows.append((f"PostgreSQL ÷ SQLite ≥ 0.8: `{ra['request']}` (`ceiling`, shares of each run's static route{suffix})",
                             f"{ratio:.2f} ({rb['share_of_static'] * 100:.1f} % ÷ {ra['share_of_static'] * 100:.1f} %; req/s "
                             f"{rb['requests_per_second']:,.0f} ÷ {ra['requests_per_second']:,.0f} = {plain:.2f})", ratio >= 0.8))
    return rows


def capacity(parts, hash_row):
    """Requests per second of server CPU (requests ÷ the server's CPU seconds) for login, refresh
    and GET /v1/me of every part, against Keycloak's published per-vCPU sizing."""
    rows = []
    for part in parts:
        for name in ("login", "refresh", "me", "client_credentials"):
            row = part["scenarios"].get(name)
            cpu = (row or {}).get("server", {}).get("cpu_seconds")
            if not row or not cpu:
                continue
            per_cpu = row["requests"] / cpu
            entry = {"deployment": part_label(part), "database": part["database"], "argon2": argon2_label(part), "scenario": name,
                     "request": row["request"], "requests": row["requests"], "requests_per_second": row["requests_per_second"],
                     "server_cpu_seconds": cpu, "requests_per_cpu_second": round(per_cpu, 1)}
            if name in KEYCLOAK_PER_VCPU:
                times = per_cpu / KEYCLOAK_PER_VCPU[name]
                entry.update(keycloak_per_vcpu=KEYCLOAK_PER_VCPU[name], times_keycloak=round(times, 2))
                if name in CAPACITY_GOALS:
                    entry["goal_times"] = CAPACITY_GOALS[name]
                    # A login is one password hash: it compares with Keycloak's only at Keycloak's cost.
                    entry["met"] = times >= CAPACITY_GOALS[name] if name != "login" or is_keycloak_cost(part) else None
            if name == "login":
                hash_ms, source = hash_time(part, hash_row)
                entry["cpu_ms_per_login"] = round(cpu / row["requests"] * 1000, 2)
                if hash_ms:
                    entry.update(hash_ms=hash_ms, hash_source=source, hashes_per_login=round(entry["cpu_ms_per_login"] / hash_ms, 2))
            rows.append(entry)
    return rows


def command_report(args):
    parts = []
    for path in args.parts:
        with open(path) as handle:
            parts.append(json.load(handle))
    hash_row = read_hash(args.hash)
    report = {
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "git": git_info(),
        "server_binary": file_info(args.binary),
        "load_generator": "wrk, on the same machine as the server",
        "argon2id": hash_row,
        "databases": [],
    }
    lines = []
    emit = lines.append
    machine = report["machine"]
    emit(f"# wrk benchmark, {report['generated_utc']}")
    emit("")
    emit(f"- Machine: {machine['cores']} × {machine['cpu_model']}, {machine['memory_gib']} GiB, {machine['os']}, {machine['swift']}")
    emit(f"- Commit `{report['git']['commit']}`{' (working tree has uncommitted changes)' if report['git']['dirty'] else ''}; "
         f"server binary `{(report['server_binary'] or {}).get('path')}` built {(report['server_binary'] or {}).get('modified_utc')}")
    if hash_row:
        emit(f"- Argon2id (`{hash_row['source']}`): hash p50 {hash_row['hash_ms_p50']} ms, verify p50 {hash_row['verify_ms_p50']} ms "
             f"(m={hash_row.get('memory_kib')} KiB, t={hash_row.get('iterations')}, p={hash_row.get('parallelism')})")
    failed = False
    for part in parts:
        entry = dict(part)
        entry["targets"] = [{"target": target, "measured": measured, "met": met} for target, measured, met in targets(part, hash_row)]
        report["databases"].append(entry)
        emit("")
        emit(f"## {part_title(part)}: {part['seconds']} s per scenario, {part['connections']} connections, wrk -t{part['threads']}")
        emit("")
        if "failure" in part:
            failed = True
            emit(f"**Run failed:** {part['failure']}")
            emit("")
        hash_ms, hash_source = hash_time(part, hash_row)
        emit(f"Argon2id {argon2_label(part)}" + (f" ({hash_source})." if hash_ms else "."))
        if part.get("cpu_counted"):
            emit(f"Server CPU and memory: {part['cpu_counted']}. Requests and sign-ups went through {part.get('url')}"
                 f"{'; ' + part['request_ids'] if part.get('request_ids') and part['request_ids'] != 'echoed' else ''}.")
        emit("")
        if "first_healthy_ms" in part:
            emit(f"First healthy response {part['first_healthy_ms']} ms after spawn; RSS after start {part.get('rss_after_start_mib')} MiB; "
                 f"{part.get('accounts')} accounts seeded in {part.get('seed_seconds')} s.")
            emit("")
        elif "accounts" in part:
            emit(f"RSS after start {part.get('rss_after_start_mib')} MiB; {part.get('accounts')} accounts seeded in {part.get('seed_seconds')} s.")
            emit("")
        emit("| scenario | conns | req/s | p50 ms | p99 ms | p99.9 ms | non-2xx | unexpected | peak RSS MiB (sampled) | server CPU s / 1k req | load 1m |")
        emit("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, row in part["scenarios"].items():
            if row.get("unexpected_total"):
                failed = True
            if name == "ceiling":
                continue  # its own table below
            if name == "connections":
                emit(f"| idle keep-alive connections | {row['connections']:,} | — | — | — | — | — | {row['unexpected_total']} | "
                     f"{row['rss_with_connections_mib']} (before: {row['rss_before_mib']}) | — | {row.get('load_average_1m_before')} |")
                continue
            lat = row["latency_ms"]
            server = row.get("server", {})
            label = {"handles_1": "handles (1 connection: one person typing)", "login_1": "login (1 connection: one hash's time)",
                     "me_with_logins": "me during 8 concurrent logins"}.get(name, name)
            non_2xx = f"{row['non_2xx']:,}"
            if name == "spend":
                non_2xx += f" ({row['counters'].get('refused_credits_exhausted', 0):,} credits exhausted, {row['counters'].get('spent', 0):,} spent)"
            emit(f"| {label} `{row['request']}` | {row['connections']} | {row['requests_per_second']:,.0f} | {lat['p50']} | {lat['p99']} | {lat['p99_9']} | "
                 f"{non_2xx} | {row['unexpected_total']} | {server.get('rss_peak_sampled_mib')} | {server.get('cpu_seconds_per_1000_requests')} | "
                 f"{row.get('load_average_1m_before')} |")
            if name == "me_with_logins":
                logins = row["logins"]
                emit(f"| … the concurrent logins | {logins['connections']} | {logins['requests_per_second']:,.1f} | {logins['latency_ms']['p50']} | "
                     f"{logins['latency_ms']['p99']} | {logins['latency_ms']['p99_9']} | {logins['non_2xx']} | {logins['unexpected_total']} | — | — | |")
        emit("")
        emit(f"Server VmHWM (lifetime peak{', summed over the nodes' if part.get('nodes') else ''}) at the end: "
             f"{part.get('server_vmhwm_mib')} MiB. Handles answers: {part['scenarios'].get('handles', {}).get('counters', {})}.")
        ceiling_row = part["scenarios"].get("ceiling")
        if ceiling_row:
            emit("")
            emit(f"### Ceiling (share of the static route in the same run): {ceiling_row['rounds']} rounds, "
                 f"{ceiling_row['slice_seconds']} s per route per round, routes in rotation")
            emit("")
            emit(f"| route | req/s | share of static | min–max share over {ceiling_row['rounds']} rounds | p99 ms (worst slice) | "
                 f"server CPU ms / request | unexpected |")
            emit("|---|---:|---:|---:|---:|---:|---:|")
            for route, row in ceiling_row["routes"].items():
                share = lambda value: f"{value * 100:.1f} %" if value is not None else "—"
                emit(f"| `{row['request']}` | {row['requests_per_second']:,.0f} | {share(row['share_of_static'])} | "
                     f"{share(row['share_of_static_min'])} – {share(row['share_of_static_max'])} | {row['p99_ms_worst_slice']} | "
                     f"{row['cpu_ms_per_request']} | {row['unexpected_total']} |")
        emit("")
        emit("| target | measured | |")
        emit("|---|---|---|")
        for row in entry["targets"]:
            emit(f"| {row['target']} | {row['measured']} | {verdict(row['met'])} |")

    ratios = database_ratios(parts)
    report["database_ratios"] = [{"target": target, "measured": measured, "met": met} for target, measured, met in ratios]
    if ratios:
        emit("")
        emit("## PostgreSQL against SQLite")
        emit("")
        emit("| target | measured | |")
        emit("|---|---|---|")
        for target, measured, met in ratios:
            emit(f"| {target} | {measured} | {verdict(met)} |")

    rows = capacity(parts, hash_row)
    report["capacity"] = rows
    if rows:
        emit("")
        emit("## Capacity per core")
        emit("")
        emit("Requests per second of server CPU: a scenario's requests ÷ the CPU seconds the Gatehouse process (a cluster: its nodes, "
             "summed) used in it. PostgreSQL's and nginx's CPU are not counted; wrk shares the machine. Keycloak's published sizing "
             "per vCPU: 15 password logins/s and 120 refresh-token requests/s, at Argon2id 7168 KiB / 5 iterations / parallelism 1; "
             "a login compares with it only at that cost. Hashes per login: server CPU ms per login ÷ one hash's time "
             "(`gatehouse-bench hash`, one thread, so its wall time is its CPU time).")
        emit("")
        emit("| deployment | Argon2id | scenario | req/s | server CPU s | req per CPU-second | × Keycloak | goal | hashes per login |")
        emit("|---|---|---|---:|---:|---:|---:|---|---:|")
        for row in rows:
            times = f"{row['times_keycloak']:.2f}×" if "times_keycloak" in row else "—"
            goal = f"≥ {row['goal_times']}×: {verdict(row['met'])}" if "goal_times" in row else "—"
            if row["scenario"] == "login" and row.get("met") is None and "goal_times" in row:
                goal = f"≥ {row['goal_times']}×: n/a (not Keycloak's cost)"
            hashes = (f"{row['hashes_per_login']:.2f} ({row['cpu_ms_per_login']} ÷ {row['hash_ms']} ms)" if "hashes_per_login" in row
                      else (f"— ({row['cpu_ms_per_login']} CPU ms/login; no hash time)" if row["scenario"] == "login" else "—"))
            emit(f"| {row['deployment']} | {row['argon2']} | `{row['request']}` | {row['requests_per_second']:,.1f} | {row['server_cpu_seconds']} | "
                 f"{row['requests_per_cpu_second']:,.1f} | {times} | {goal} | {hashes} |")

    report["unexpected_errors"] = failed
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")
    emit("")
    emit(f"Written to {os.path.relpath(os.path.abspath(args.out), REPO)}.")
    if failed:
        emit("")
        emit("**Some scenarios had unexpected answers, socket errors or failed: see the JSON file.**")
    print("\n".join(lines))
    return 1 if failed else 0


# --- A/B ---------------------------------------------------------------------------------------

# Two-sided 95 % quantiles of Student's t, by degrees of freedom (beyond 30: 2.0).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
       21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042}


def mean_and_interval(values):
    """The mean and the half-width of its 95 % confidence interval (None with one value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return mean, T95.get(len(values) - 1, 2.0) * (variance / len(values)) ** 0.5


def change_against(values, baseline):
    """The mean per-round change of `values` against `baseline` (both in round order), its 95 %
    interval, and both as text."""
    change, interval = mean_and_interval([value / base - 1 for value, base in zip(values, baseline)])
    return change, interval, f"{change * 100:+.1f} %" + (f" ± {interval * 100:.1f}" if interval is not None else "")


class RouteBench:
    """One `gatehouse serve` on a new SQLite file with the harness's accounts, for the tools that
    load the ceiling scenario's routes one at a time (`profile_routes.py`, `count_calls.py`)."""

    @staticmethod
    def add_arguments(parser, seconds, connections):
        parser.add_argument("--binary", required=True)
        parser.add_argument("--workdir", required=True)
        parser.add_argument("--out", required=True)
        parser.add_argument("--routes", default="jwks me check")
        parser.add_argument("--seconds", type=int, default=seconds)
        parser.add_argument("--connections", type=int, default=connections)
        parser.add_argument("--settings", default="")

    def __init__(self, args):
        self.scripts = dict(CEILING_ROUTES)
        self.routes = args.routes.split()
        unknown = [route for route in self.routes if route not in self.scripts]
        if unknown:
            raise SystemExit(f"unknown routes {unknown}; known: {sorted(self.scripts)}")
        os.makedirs(args.workdir)
        self.workdir = args.workdir
        self.threads = min(2, args.connections)
        self.connections = args.connections - args.connections % self.threads
        self.server = Server(args.binary, f"sqlite://{args.workdir}/bench.sqlite", args.workdir, args.settings.split())
        self.accounts_file = os.path.join(args.workdir, "accounts.lua")

    def start(self):
        """Starts the server, signs up one account per connection and warms every route up."""
        self.server.start()
        write_accounts(self.accounts_file, seed(self.server.port, self.connections, random_tag()))
        for route in self.routes:
            self.load(route, 2, f"warmup-{route}")

    def load(self, route, seconds, label):
        """wrk on `route` for `seconds`: its parsed result."""
        script = self.scripts[route]
        return finish_wrk(*start_wrk(script[:-4], script, self.server.port, self.threads, self.connections, seconds, self.accounts_file,
                                     self.workdir, label), label, seconds)


def start_profiler(pid, path, seconds):
    """`perf record -F 999 -e cpu-clock -g` of process `pid` for `seconds` into `path` (wait() on it)."""
    return subprocess.Popen(["perf", "record", "-F", "999", "-e", "cpu-clock", "-g", "-p", str(pid), "-o", path, "--", "sleep", str(seconds)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_receiver():
    """Server/Tests/support/otlp_receiver.py --count-only on a free port: (process, its base URL). It
    stands for a collector on another machine, so it shares wrk's CPUs (--wrk-cpus), not the
    server's."""
    script = os.path.join(REPO, "Server", "Tests", "support", "otlp_receiver.py")
    process = subprocess.Popen(WRK_PREFIX + [BENCH_PYTHON, script, "--port", "0", "--count-only"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("listening "):
        raise SystemExit(f"the OTLP receiver did not start: {line!r}")
    return process, f"http://127.0.0.1:{int(line.split()[1])}"


def config_binary(settings, default):
    """An `ab` configuration's binary (its `binary=PATH` word, or `default`) and its other settings:
    two builds compared under the same rotation as two settings are."""
    chosen = [word.split("=", 1)[1] for word in settings if word.startswith("binary=")]
    return (chosen[-1] if chosen else default), [word for word in settings if not word.startswith("binary=")]


def command_ab(args):
    """GET /v1/me (or `--route check`'s POST /v1/entitlements/check) under configurations that
    differ only in the server's settings. Each round
    starts a new server for every configuration (each on its own SQLite file, signed up and
    warmed up), then loads them one at a time in short slices, in rotation, and stops them: on a
    shared machine whose speed drifts over minutes, slices seconds apart see the same machine,
    and new processes each round spread what differs between two processes of one binary (their
    memory layout and hash seeds, say) over the rounds instead of favouring one configuration
    throughout.
    Reports each configuration's mean req/s and CPU per request, and its difference from the
    first as the mean of the per-round differences with a 95 % interval."""
    global WRK_PREFIX
    configs = [(name, settings.split()) for name, settings in args.config]
    if len(configs) < 2:
        raise SystemExit("two configurations at least (--config NAME 'KEY=VALUE ...')")
    server_prefix = ["taskset", "-c", args.server_cpus] if args.server_cpus else []
    WRK_PREFIX = ["taskset", "-c", args.wrk_cpus] if args.wrk_cpus else []
    receiver = None
    if any(setting == "OTEL_EXPORTER_OTLP_ENDPOINT=receiver" for _, settings in configs for setting in settings):
        receiver, url = start_receiver()
        log(f"OTLP receiver (counting only) at {url}")
        configs = [(name, [f"OTEL_EXPORTER_OTLP_ENDPOINT={url}" if s == "OTEL_EXPORTER_OTLP_ENDPOINT=receiver" else s for s in settings])
                   for name, settings in configs]
    threads = min(2, args.connections)
    connections = args.connections - args.connections % threads
    runs = []
    try:
        for round_index in range(args.rounds):
            order = [configs[(round_index + offset) % len(configs)] for offset in range(len(configs))]
            servers = {}
            try:
                for name, settings in order:
                    workdir = os.path.join(args.workdir, f"r{round_index + 1}-{name}")
                    os.makedirs(workdir)
                    binary, settings = config_binary(settings, args.binary)
                    server = Server(binary, f"sqlite://{workdir}/bench.sqlite", workdir, settings, server_prefix)
                    servers[name] = server
                    server.start()
                    accounts = seed(server.port, connections, random_tag())
                    server.accounts_file = os.path.join(workdir, "accounts.lua")
                    write_accounts(server.accounts_file, accounts)
                    process, out = start_wrk(args.route, f"{args.route}.lua", server.port, threads, connections, args.warmup,
                                             server.accounts_file, workdir, "warmup")
                    finish_wrk(process, out, "warm-up", args.warmup)
                slices = {name: [] for name, _ in order}
                for slice_index in range(args.slices):
                    for name, _ in order:
                        server = servers[name]
                        label = f"{name}-r{round_index + 1}-s{slice_index + 1}"
                        profiler = None
                        if args.perf_dir:  # the server's profile across the slice, less its last second
                            os.makedirs(args.perf_dir, exist_ok=True)
                            profiler = start_profiler(server.process.pid, os.path.join(args.perf_dir, f"{label}.data"), max(1, args.seconds - 1))
                        result = run_scenario(server, label, f"{args.route}.lua", threads, connections, args.seconds, server.accounts_file,
                                              server.workdir)
                        if profiler:
                            profiler.wait(60)
                        if result["unexpected_total"]:
                            raise SystemExit(f"{name}: unexpected answers or socket errors: {result['statuses']} {result['socket_errors']}")
                        slices[name].append(result)
            finally:
                for server in servers.values():
                    server.stop()
            for name, settings in order:
                results = slices[name]
                runs.append({"round": round_index + 1, "config": name, "settings": settings,
                             "requests_per_second": round(sum(r["requests_per_second"] for r in results) / len(results), 1),
                             "cpu_ms_per_request": round(sum(r["server"]["cpu_seconds_per_1000_requests"] for r in results) / len(results), 4),
                             "slices": [{"requests_per_second": r["requests_per_second"], "latency_ms": r["latency_ms"],
                                         "cpu_ms_per_request": r["server"]["cpu_seconds_per_1000_requests"]} for r in results]})
    finally:
        if receiver:
            receiver.stdin.close()
            log(f"OTLP receiver: {receiver.stdout.read().strip()}")
            receiver.wait(30)

    def value(round_number, name, key):
        return next(run[key] for run in runs if run["round"] == round_number and run["config"] == name)

    base = configs[0][0]
    rows = []
    print(f"| configuration | req/s, mean of {args.rounds} | against {base} (95 % interval) | CPU ms/request | against {base} |")
    print("|---|---:|---:|---:|---:|")
    for name, settings in configs:
        rates = [run["requests_per_second"] for run in runs if run["config"] == name]
        cpus = [run["cpu_ms_per_request"] for run in runs if run["config"] == name]
        row = {"config": name, "settings": settings, "requests_per_second": rates, "cpu_ms_per_request": cpus}
        rate_text = cpu_text = ""
        if name != base:
            def against_base(key):
                rounds = range(1, args.rounds + 1)
                return change_against([value(r, name, key) for r in rounds], [value(r, base, key) for r in rounds])

            rate_change, rate_interval, rate_text = against_base("requests_per_second")
            cpu_change, cpu_interval, cpu_text = against_base("cpu_ms_per_request")
            row.update(rate_change=rate_change, rate_interval=rate_interval, cpu_change=cpu_change, cpu_interval=cpu_interval)
        print(f"| {name} | {sum(rates) / len(rates):,.0f} | {rate_text} | {sum(cpus) / len(cpus):.4f} | {cpu_text} |")
        rows.append(row)
    with open(args.out, "w") as handle:
        json.dump({"machine": machine_info(), "git": git_info(), "binary": file_info(args.binary), "route": args.route, "seconds": args.seconds,
                   "slices": args.slices, "connections": connections, "threads": threads, "server_cpus": args.server_cpus,
                   "wrk_cpus": args.wrk_cpus,
                   "binaries": {name: file_info(config_binary(settings, args.binary)[0]) for name, settings in configs},
                   "configurations": rows, "runs": runs}, handle, indent=2)
    log(f"wrote {args.out}")


def command_rotate(args):
    """Whole scenarios (`db`'s: refresh, spend, login, ...) under configurations that differ in
    their binary or settings, for what `ab`'s slices cannot load: a refresh chain or a month's
    credits are spent by one run, so each run here is a new server on its own SQLite file, signed
    up afresh, and the configurations take turns round by round. Reports each scenario's req/s
    and server CPU per request per configuration, and each configuration's mean per-round change
    against the first with a 95 % interval."""
    configs = [(name, settings.split()) for name, settings in args.config]
    if len(configs) < 2:
        raise SystemExit("two configurations at least (--config NAME 'KEY=VALUE ...')")
    runs = []
    for round_index in range(args.rounds):
        for offset in range(len(configs)):
            name, settings = configs[(round_index + offset) % len(configs)]
            binary, settings = config_binary(settings, args.binary)
            workdir = os.path.join(args.workdir, f"r{round_index + 1}-{name}")
            os.makedirs(workdir)
            out = os.path.join(workdir, "db.json")
            environment = dict(os.environ, BENCH_SERVER_ENV=" ".join(settings))
            subprocess.run([sys.executable, os.path.abspath(__file__), "db", "--database", "sqlite", "--url",
                            f"sqlite://{workdir}/bench.sqlite", "--binary", binary, "--seconds", str(args.seconds),
                            "--connections", str(args.connections), "--scenarios", args.scenarios, "--out", out], check=True, env=environment)
            with open(out) as handle:
                part = json.load(handle)
            for scenario, result in part["scenarios"].items():
                runs.append({"round": round_index + 1, "config": name, "settings": settings, "binary": file_info(binary),
                             "scenario": scenario, "requests_per_second": result.get("requests_per_second"),
                             "cpu_ms_per_request": result.get("server", {}).get("cpu_seconds_per_1000_requests"),
                             "p99_ms": result.get("latency_ms", {}).get("p99"), "argon2": part.get("argon2")})
    base = configs[0][0]
    rows = []
    print(f"| scenario | configuration | req/s, mean of {args.rounds} | against {base} (95 % interval) | CPU ms/request | against {base} |")
    print("|---|---|---:|---:|---:|---:|")
    for scenario in dict.fromkeys(run["scenario"] for run in runs):
        def value(round_number, name, key):
            return next(run[key] for run in runs if run["round"] == round_number and run["config"] == name and run["scenario"] == scenario)

        for name, _ in configs:
            mine = [run for run in runs if run["config"] == name and run["scenario"] == scenario]
            rate = sum(run["requests_per_second"] for run in mine) / len(mine)
            cpu = sum(run["cpu_ms_per_request"] for run in mine) / len(mine)
            row = {"scenario": scenario, "config": name, "requests_per_second": rate, "cpu_ms_per_request": cpu}
            texts = ["", ""]
            if name != base:
                rounds = range(1, args.rounds + 1)
                for index, key in enumerate(["requests_per_second", "cpu_ms_per_request"]):
                    change, interval, texts[index] = change_against([value(r, name, key) for r in rounds], [value(r, base, key) for r in rounds])
                    row[key + "_change"], row[key + "_interval"] = change, interval
            print(f"| {scenario} | {name} | {rate:,.1f} | {texts[0]} | {cpu:.4f} | {texts[1]} |")
            rows.append(row)
    with open(args.out, "w") as handle:
        json.dump({"machine": machine_info(), "git": git_info(), "seconds": args.seconds, "connections": args.connections,
                   "scenarios": args.scenarios, "configurations": [{"name": n, "settings": s} for n, s in configs],
                   "summary": rows, "runs": runs}, handle, indent=2)
    log(f"wrote {args.out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    hash_parser = commands.add_parser("hash")
    hash_parser.add_argument("--bench-binary", required=True)
    hash_parser.add_argument("--out", required=True)
    db = commands.add_parser("db")
    db.add_argument("--database", required=True, choices=["sqlite", "postgres"])
    db.add_argument("--database-version")
    db.add_argument("--url", required=True)
    db.add_argument("--binary", required=True)
    db.add_argument("--seconds", type=int, default=10)
    db.add_argument("--connections", type=int, default=64)
    db.add_argument("--scenarios", default=" ".join(ALL_SCENARIOS))
    db.add_argument("--warmup", type=int, default=1)
    db.add_argument("--hash", help="the hash timing file; without it login also runs on one connection")
    db.add_argument("--out", required=True)
    cluster = commands.add_parser("cluster")
    cluster.add_argument("--url", required=True, help="where to send requests (nginx's http://HOST:PORT)")
    cluster.add_argument("--pids", required=True, help="the nodes' process ids, comma-separated (their CPU is counted)")
    cluster.add_argument("--database", default="postgres-cluster-3", help="the part's name in the report")
    cluster.add_argument("--database-version")
    cluster.add_argument("--seconds", type=int, default=10)
    cluster.add_argument("--connections", type=int, default=64)
    cluster.add_argument("--scenarios", default="login refresh me")
    cluster.add_argument("--warmup", type=int, default=1)
    cluster.add_argument("--hash", help="the hash timing file; without it login also runs on one connection")
    cluster.add_argument("--out", required=True)
    report = commands.add_parser("report")
    report.add_argument("--out", required=True)
    report.add_argument("--hash")
    report.add_argument("--binary")
    report.add_argument("parts", nargs="+")
    ab = commands.add_parser("ab")
    ab.add_argument("--binary", required=True)
    ab.add_argument("--route", choices=["me", "check", "jwks"], default="me",
                    help="the route loaded: GET /v1/me, POST /v1/entitlements/check or the static GET /.well-known/jwks.json")
    ab.add_argument("--seconds", type=int, default=4, help="one slice")
    ab.add_argument("--connections", type=int, default=64)
    ab.add_argument("--rounds", type=int, default=12, help="new servers each round")
    ab.add_argument("--slices", type=int, default=2, help="slices per configuration in a round")
    ab.add_argument("--warmup", type=int, default=2)
    ab.add_argument("--server-cpus", help="taskset's CPU list for the server")
    ab.add_argument("--wrk-cpus", help="taskset's CPU list for wrk")
    ab.add_argument("--config", nargs=2, action="append", required=True, metavar=("NAME", "SETTINGS"),
                    help="a name and its server settings, 'KEY=VALUE ...'; the first is the baseline. "
                         "OTEL_EXPORTER_OTLP_ENDPOINT=receiver starts a counting OTLP receiver; "
                         "binary=PATH runs that build instead of --binary's")
    ab.add_argument("--perf-dir", help="record each run's server profile (perf record -g) into this folder")
    ab.add_argument("--workdir", required=True)
    ab.add_argument("--out", required=True)
    rotate = commands.add_parser("rotate")
    rotate.add_argument("--binary", required=True)
    rotate.add_argument("--scenarios", required=True, help="db's scenarios, e.g. 'refresh spend'")
    rotate.add_argument("--seconds", type=int, default=10)
    rotate.add_argument("--connections", type=int, default=64)
    rotate.add_argument("--rounds", type=int, default=3)
    rotate.add_argument("--config", nargs=2, action="append", required=True, metavar=("NAME", "SETTINGS"),
                        help="a name and its server settings, 'KEY=VALUE ...'; the first is the baseline; binary=PATH runs that build")
    rotate.add_argument("--workdir", required=True)
    rotate.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.command == "hash":
        command_hash(args)
    elif args.command == "ab":
        command_ab(args)
    elif args.command == "rotate":
        command_rotate(args)
    elif args.command in ("db", "cluster"):
        if args.hash and not os.path.exists(args.hash):
            args.hash = None
        (command_db if args.command == "db" else command_cluster)(args)
    else:
        sys.exit(command_report(args))


if __name__ == "__main__":
    main()
