#!/usr/bin/env python3
"""A real rolling upgrade of Gatehouse under load, recorded (issue 62).

Usage: benchmarks/rolling-upgrade OLD_BINARY NEW_BINARY [--seconds-per-step S] [--clients C] [--out FILE]
       benchmarks/rolling-upgrade --previous GIT_REF NEW_BINARY [...]

What it proves. Three `gatehouse serve` nodes of OLD_BINARY on one durable PostgreSQL behind nginx
(Server/Tests/cluster/run.py's Cluster: one GATEHOUSE_SECRET_KEY, admin key and public URL, the
handz preset, per-IP limits off, the suite's cheap Argon2 cost; GATEHOUSE_* variables of the
environment override them) are replaced one at a time by NEW_BINARY while C clients, one seeded
account and session each, keep signing in, refreshing (each with its newest rotating refresh token)
and spending handz's `practice` credit through nginx (no spends with another preset). It passes when
  - each old node exited by itself, with status 0, after SIGTERM, and each new one answered
    through nginx before the next node was stopped;
  - nothing failed but requests in flight on the node being stopped (the rule below);
  - every session survived: each client's newest access token answers GET /v1/me with 200 and its
    newest refresh token still rotates once; no refresh family was revoked (no 401 to a refresh
    during the run, no refresh_reuse_detected audit row, no seeded session revoked);
  - no spend was lost or doubled: each account's remaining credits are its grant minus the spends
    answered 200 (a spend without an answer is retried with its idempotency key, as the SDK does);
and it records every node's GET /health (schema_version) before and after: the first NEW node
applies the pending migrations on start, under the migration lock.

A step: the node is drained first, as an operator takes a node out of its load balancer (nginx
reloaded with the node marked down; its old workers finish what they have in hand, then close
their kept-alive connections to it; --no-drain skips this), then SIGTERM to the node (the
server's graceful stop: no new connections, in-flight requests finish), wait for its exit,
start NEW_BINARY on the same port, wait for GET /health 200, put it back in nginx, then S seconds
of load and, if need be, until nginx has sent the new node a request (without the drain, nginx
leaves a node out for its fail_timeout, 10 s, after a refused connection). S seconds on the old
cluster come first.

Classification. A failure is any answer but login 200, refresh 200, spend 200 or 403 plan_required
(no credit left), or no answer. It is "in flight on the stopping node" only when all three hold:
  1. the request was open while a node was stopping: it began (client clock) before the node
     exited and ended after SIGTERM was sent to it;
  2. the answer was nginx's own 502 (a body that is not a node's JSON), or the connection failed;
  3. nginx's access log line for the request (found by its X-Load-Tag header) names the stopping
     node among the upstreams it tried.
Any other failure is "other" (a 502 outside a stop window or from another node too), and the run
exits 1, as it does when a session was lost or a credit count is off.

--previous GIT_REF builds that ref's gatehouse in release in a git worktree under /tmp
(/tmp/gatehouse-previous-<commit>, kept and reused by later runs): about 15-20 minutes on 2 cores.
Writes benchmarks/results/rolling-upgrade-<UTC timestamp>.json unless --out names another file.
"""
import argparse
import collections
import datetime
import hashlib
import importlib.util
import json
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # nothing left behind in Server/Tests/cluster
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("cluster_run", os.path.join(REPO, "Server", "Tests", "cluster", "run.py"))
cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cluster)

KINDS, WEIGHTS = ("login", "refresh", "spend"), (2, 5, 3)
DRAIN_SECONDS = 2
CREDIT, SPEND_ACTION = "practice", "practice_saved_flow"  # handz's credit and the action that spends it


def git(*arguments):
    return subprocess.run(["git", "-C", REPO, *arguments], check=True, capture_output=True, text=True).stdout.strip()


def build_previous(ref):
    """REF's gatehouse built in release in a git worktree under /tmp, and what it was built from."""
    commit = git("rev-parse", "--verify", f"{ref}^{{commit}}")
    info = {"ref": ref, "commit": commit, "describe": git("describe", "--tags", "--always", commit)}
    tree = info["worktree"] = f"/tmp/gatehouse-previous-{commit[:12]}"
    if not os.path.isdir(tree):
        git("worktree", "add", "--detach", tree, commit)
    package = os.path.join(tree, "Server") if os.path.exists(os.path.join(tree, "Server", "Package.swift")) else tree
    build = ["swift", "build", "--package-path", package, "-c", "release", "--product", "gatehouse"]
    print(f"==> building {ref} ({info['describe']}) in release in {tree}: about 15-20 minutes on 2 cores", flush=True)
    subprocess.run(build, check=True)
    bindir = subprocess.run(build[:-2] + ["--show-bin-path"], check=True, capture_output=True, text=True).stdout.strip()
    return os.path.join(bindir, "gatehouse"), info


def describe_binary(path, git_info=None):
    with open(path, "rb") as f:
        return {"path": os.path.abspath(path), "sha256": hashlib.file_digest(f, "sha256").hexdigest(), "git": git_info}


class Load:
    """The clients' shared clock, counters and failures."""

    def __init__(self, url, credits, pause):
        self.url, self.credits, self.pause = url, credits, pause  # credits: Free's grant, None without spends
        self.t0, self.stopping, self.lock = time.monotonic(), threading.Event(), threading.Lock()
        self.counts, self.failures, self.started = collections.Counter(), [], {}

    def now(self):
        return round(time.monotonic() - self.t0, 3)

    def request(self, client, kind, path, body, token=None, good=lambda r: r.status == 200):
        client.sequence += 1
        tag, start, error, reply = f"c{client.number}-{client.sequence}", self.now(), None, None
        try:
            reply = cluster.call(self.url, "POST", path, body, token=token, headers={"X-Load-Tag": tag}, timeout=30)
        except OSError as exception:
            error = f"{type(exception).__name__}: {exception}"
        ok = reply is not None and good(reply)
        with self.lock:
            self.counts[kind] += 1
            self.started[tag] = start
            if not ok:
                node_json = reply is not None and reply.json is not None
                self.failures.append({
                    "kind": kind, "tag": tag, "start": start, "end": self.now(), "exception": error,
                    "status": reply and reply.status, "code": reply and reply.code, "from_node": node_json,
                    "body": None if reply is None or node_json else reply.body[:60].decode("utf-8", "replace")})
        return reply, ok


class Client(threading.Thread):
    def __init__(self, number, load, email, session):
        super().__init__(daemon=True)
        self.number, self.load, self.email, self.sequence = number, load, email, 0
        self.session_id, self.access, self.refresh_token = session["session_id"], session["access_token"], session["refresh_token"]
        self.retry_refresh, self.pending_key, self.spent, self.lost = False, None, 0, None

    def run(self):
        rng = random.Random(self.number)
        while not self.load.stopping.is_set():
            kind = "refresh" if self.retry_refresh else rng.choices(KINDS, WEIGHTS)[0]
            if self.lost or (kind == "spend" and self.load.credits is None):
                kind = "login"  # a lost session is not used again (the run has failed already)
            getattr(self, kind)()
            self.load.stopping.wait(self.load.pause)

    def login(self):
        self.load.request(self, "login", "/v1/auth/login", {"email": self.email, "password": cluster.PASSWORD})

    def refresh(self):
        reply, ok = self.load.request(self, "refresh", "/v1/auth/refresh", {"refresh_token": self.refresh_token})
        # No answer: the same token again at once, within the reuse interval (it gets the same successor).
        self.retry_refresh = reply is None or reply.status >= 500
        if ok:
            self.access, self.refresh_token = reply.json["session"]["access_token"], reply.json["session"]["refresh_token"]
        elif reply is not None and reply.status == 401:
            self.lost = {"at": self.load.now(), "code": reply.code}

    def spend(self):
        self.pending_key = self.pending_key or f"ru-{self.number}-{secrets.token_hex(6)}"
        reply, ok = self.load.request(
            self, "spend", f"/v1/credits/{CREDIT}/spend", {"idempotency_key": self.pending_key, "action": SPEND_ACTION},
            token=self.access, good=lambda r: r.status == 200 or (r.status == 403 and r.code == "plan_required"))
        if ok and reply.status == 200:
            self.spent += reply.json.get("spent", 0)
        if reply is not None and reply.status < 500:  # answered: the next spend is a new one
            self.pending_key = None


def health_of(nodes):
    answers = {}
    for node in nodes:
        try:
            reply = cluster.call(node.url, "GET", "/health", timeout=5)
            answers[node.name] = {"status": reply.status, "body": reply.json}
        except OSError as error:
            answers[node.name] = {"status": None, "error": str(error)}
    return answers


def replace_nodes(topology, load, new_binary, seconds, drain):
    steps = []
    for node in topology.nodes:
        step = {"node": node.name, "port": node.port, "old_pid": node.process.pid}
        if drain:
            # As an operator drains a node from the load balancer first: nginx's new workers send
            # it nothing; the old ones finish their requests and close their kept-alive
            # connections to it, so none is reused just as the stopping node closes it.
            step["drained_at"] = load.now()
            topology.nginx.reload(topology.nodes, down=[node])
            time.sleep(DRAIN_SECONDS)
        step["sigterm_at"] = load.now()
        node.signal(signal.SIGTERM)
        try:
            step["exit_code"] = node.process.wait(60)
        except subprocess.TimeoutExpired:
            node.kill()
            step["exit_code"], step["killed_after_60s"] = node.process.returncode, True
        step["exited_at"] = load.now()
        node.binary = new_binary
        node.start()  # NEW_BINARY on the same port, until GET /health answers 200
        if drain:
            topology.nginx.reload(topology.nodes)
        step.update(healthy_at=load.now(), new_pid=node.process.pid, health=health_of([node])[node.name])
        step["stop_seconds"] = round(step["exited_at"] - step["sigterm_at"], 3)
        step["down_seconds"] = round(step["healthy_at"] - step["sigterm_at"], 3)
        print(f"==> {node.name}: exit {step['exit_code']} {step['stop_seconds']} s after SIGTERM, "
              f"the new binary healthy after {step['down_seconds']} s", flush=True)
        offset, address = os.path.getsize(topology.nginx.access_log), f"127.0.0.1:{node.port}"
        time.sleep(seconds)
        # nginx skips a node for fail_timeout (10 s) after a refused connection: the next node
        # stops only once this one has answered through nginx again (up to 30 s more).
        deadline = time.monotonic() + 30
        while not any(ups[-1:] == [address] and sts[-1:] != ["502"] for _, ups, sts in nginx_lines(topology.nginx.access_log, offset).values()):
            if time.monotonic() > deadline:
                step["no_traffic_from_nginx"] = True
                break
            time.sleep(0.5)
        steps.append(dict(step, load_until=load.now()))
    return steps


def nginx_lines(path, offset=0):
    """{tag: (status, [upstream addresses], [upstream statuses])} from run.py's access log format."""
    lines = {}
    with open(path, errors="replace") as f:
        f.seek(offset)
        for line in f:
            match = re.search(r'" (\d{3}) upstream=(.*) tag=(\S+)$', line.rstrip("\n"))
            if match and match.group(3) != "-":
                tokens = re.split(r"[,\s]+", match.group(2))  # "- -", "A 200", "A, B 502, 200"
                lines[match.group(3)] = (int(match.group(1)), [t for t in tokens if re.fullmatch(r"[\d.]+:\d+", t)],
                                         [t for t in tokens if t.isdigit()])
    return lines


def classify(failures, steps, logged):
    """The header's rule, applied to each failure in place."""
    for failure in failures:
        failure["stopping"] = next((s["node"] for s in steps if failure["start"] <= s["healthy_at"] and failure["end"] >= s["sigterm_at"]), None)
        status, upstreams, statuses = logged.get(failure["tag"], (None, [], []))
        failure["nginx"] = {"status": status, "upstreams": upstreams, "upstream_statuses": statuses}
        nginx_502 = failure["status"] == 502 and not failure["from_node"]
        failure["in_flight_on_stopping_node"] = (nginx_502 or failure["exception"] is not None) and any(
            failure["start"] <= s["exited_at"] and failure["end"] >= s["sigterm_at"] and f"127.0.0.1:{s['port']}" in upstreams
            for s in steps)


def final_checks(topology, clients, load):
    """Settles unanswered spends, then checks every session and credit count through nginx."""
    results = {"sessions_seeded": len(clients), "sessions_kept": 0, "lost": [], "credit_mismatches": []}
    for client in clients:
        problems = [f"revoked during the run: {client.lost}"] if client.lost else []
        me = cluster.call(load.url, "GET", "/v1/me", token=client.access)
        if me.status != 200:
            problems.append(f"GET /v1/me with the newest access token: {me!r}")
        rotated = cluster.refresh(load.url, client.refresh_token)
        if rotated.status != 200:
            problems.append(f"the newest refresh token: {rotated!r}")
        elif cluster.call(load.url, "GET", "/v1/me", token=rotated.json["session"]["access_token"]).status != 200:
            problems.append("GET /v1/me with the rotated access token")
        if problems:
            results["lost"].append({"email": client.email, "problems": problems})
        else:
            results["sessions_kept"] += 1
        if load.credits is not None:
            if client.pending_key:
                client.spend()
            snapshot = cluster.call(load.url, "GET", "/v1/entitlements", token=client.access).json or {}
            remaining = snapshot.get("credits", {}).get(CREDIT, {}).get("remaining")
            if client.pending_key or remaining != load.credits - client.spent:
                results["credit_mismatches"].append({"email": client.email, "granted": load.credits, "spent": client.spent,
                                                     "remaining": remaining, "unsettled_key": client.pending_key})
    ids = ", ".join(f"'{client.session_id}'" for client in clients)
    results["refresh_reuse_detected"] = int(topology.postgres.query(
        "SELECT count(*) FROM audit_log WHERE event = 'refresh_reuse_detected'")[0][0])
    results["seeded_sessions_revoked"] = int(topology.postgres.query(
        f"SELECT count(*) FROM sessions WHERE id IN ({ids}) AND revoked_at IS NOT NULL")[0][0])
    return results


def upgrade_under_load(topology, arguments, new):
    """Starts the topology, seeds the accounts and replaces every node under load: what happened."""
    preset = topology.environment["GATEHOUSE_PRESET"]
    print(f"==> starting PostgreSQL (durable), 3 nodes of {topology.binary} and nginx (preset {preset})", flush=True)
    topology.start()
    before = health_of(topology.nodes)
    # The database's own record (a node older than /health's schema_version does not say it).
    version = "SELECT max(version) FROM gatehouse_migrations"
    database_before = int(topology.postgres.query(version)[0][0])
    load = Load(topology.nginx.url, cluster.preset_settings(preset)["free_credits"] if preset == "handz" else None, arguments.pause)
    clients, run_id = [], secrets.token_hex(3)
    for number in range(arguments.clients):
        email = f"rolling-{run_id}-{number}@example.com"
        reply = cluster.signup(load.url, email)
        if reply.status != 201:
            raise cluster.CheckFailed(f"seeding {email}: {reply!r}")
        clients.append(Client(number, load, email, reply.json["session"]))
    seconds = arguments.seconds_per_step
    print(f"==> {len(clients)} accounts seeded; load through nginx for {seconds:g} s, then node by node", flush=True)
    load.t0 = time.monotonic()
    for client in clients:
        client.start()
    try:
        time.sleep(seconds)
        steps = replace_nodes(topology, load, new, seconds, arguments.drain)
    finally:
        load.stopping.set()
        for client in clients:
            client.join(60)
    load_seconds, checks = load.now(), final_checks(topology, clients, load)
    logged = nginx_lines(topology.nginx.access_log)
    classify(load.failures, steps, logged)
    for step in steps:
        step["requests_served_by_new_binary_in_step"] = sum(
            1 for tag, (_, upstreams, _) in logged.items()
            if upstreams[-1:] == [f"127.0.0.1:{step['port']}"] and step["healthy_at"] <= load.started.get(tag, -1) <= step["load_until"])
    with open(topology.nginx.error_log, errors="replace") as f:
        nginx_errors = [line.rstrip("\n") for line in f if "[error]" in line or "[warn]" in line][:50]
    passed_on = [{"tag": tag, "upstreams": ups, "upstream_statuses": sts} for tag, (_, ups, sts) in logged.items() if len(ups) > 1]
    return {"settings": {"nodes": 3, "clients": arguments.clients, "seconds_per_step": seconds, "pause": arguments.pause,
                         "preset": preset, "free_credits": load.credits, "durable_postgres": True, "drain": arguments.drain,
                         "argon2": {k: v for k, v in topology.environment.items() if k.startswith("GATEHOUSE_ARGON2_")}},
            "schema": {"before": before, "after": health_of(topology.nodes), "database_before": database_before,
                       "database_after": int(topology.postgres.query(version)[0][0])}, "steps": steps, "load_seconds": load_seconds,
            "requests": dict(load.counts), "requests_total": sum(load.counts.values()), "failures": load.failures,
            "checks": checks, "nginx_passed_to_another_node": passed_on, "nginx_errors": nginx_errors}


def report(result, out):
    """Prints the summary and writes the JSON; the exit status."""
    in_flight = [f for f in result["failures"] if f["in_flight_on_stopping_node"]]
    other = [f for f in result["failures"] if not f["in_flight_on_stopping_node"]]

    def by_answer(failures):
        return dict(collections.Counter(
            f"{f['kind']} {f['status'] or f['exception'].split(':')[0]}{' ' + f['code'] if f['code'] else ''}" for f in failures))

    checks = result["checks"]
    result["ok"] = ok = not other and not checks["lost"] and not checks["credit_mismatches"] \
        and checks["refresh_reuse_detected"] == 0 and checks["seeded_sessions_revoked"] == 0 \
        and all(s["exit_code"] == 0 and "killed_after_60s" not in s and "no_traffic_from_nginx" not in s for s in result["steps"])
    result["failure_counts"] = {"in_flight_on_stopping_node": by_answer(in_flight), "other": by_answer(other)}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write(json.dumps(result, indent=2) + "\n")
    versions = {when: {name: (a.get("body") or {}).get("schema_version", a.get("body") or a.get("error"))
                       for name, a in answers.items()} for when, answers in result["schema"].items() if isinstance(answers, dict)}
    steps = "; ".join(f"{s['node']} exit {s['exit_code']} after {s['stop_seconds']} s, healthy after {s['down_seconds']} s, "
                      f"{s['requests_served_by_new_binary_in_step']} served" for s in result["steps"])
    credits = "none in the preset" if result["settings"]["free_credits"] is None else f"{len(checks['credit_mismatches'])} accounts off"
    print(f"""
rolling upgrade: {'ok' if ok else 'FAILED'} ({result['load_seconds']:.0f} s of load, {result['settings']['clients']} clients)
  requests        {result['requests_total']} ({', '.join(f'{k} {v}' for k, v in sorted(result['requests'].items()))}); nginx passed {len(result['nginx_passed_to_another_node'])} on to another node
  steps           {steps}
  failures        in flight on the stopping node: {len(in_flight)} {by_answer(in_flight) or ''}; other: {len(other)} {by_answer(other) or ''}
  sessions        {checks['sessions_kept']}/{checks['sessions_seeded']} kept; refresh reuse detected {checks['refresh_reuse_detected']}; seeded sessions revoked {checks['seeded_sessions_revoked']}
  credits         {credits}
  schema          the database at {result['schema']['database_before']} before, {result['schema']['database_after']} after; GET /health's schema_version before {versions['before']}; after {versions['after']}
  written to      {os.path.relpath(out)}""", flush=True)
    for failure in other[:10]:
        print(f"  other failure: {failure}", flush=True)
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], usage=__doc__.split("\n\n")[1][7:])
    parser.add_argument("binaries", nargs="+", metavar="BINARY", help="OLD_BINARY NEW_BINARY, or NEW_BINARY with --previous")
    parser.add_argument("--previous", metavar="GIT_REF", help="build GIT_REF's gatehouse as OLD_BINARY (~15-20 min on 2 cores)")
    parser.add_argument("--seconds-per-step", type=float, default=30, metavar="S")
    parser.add_argument("--clients", type=int, default=8, metavar="C")
    parser.add_argument("--pause", type=float, default=0.1, help="each client's pause between requests, seconds (default 0.1)")
    parser.add_argument("--out", metavar="FILE")
    parser.add_argument("--no-drain", dest="drain", action="store_false",
                        help="stop each node without first marking it down in nginx (shows the 502s of reused idle connections)")
    arguments = parser.parse_args()
    if len(arguments.binaries) != (1 if arguments.previous else 2) or arguments.clients < 1:
        parser.error("give OLD_BINARY NEW_BINARY, or --previous GIT_REF NEW_BINARY, and at least one client")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = arguments.out or os.path.join(REPO, "benchmarks", "results", f"rolling-upgrade-{stamp}.json")
    try:
        old, old_git = build_previous(arguments.previous) if arguments.previous else (arguments.binaries[0], None)
    except subprocess.CalledProcessError as error:
        sys.exit(f"error: {' '.join(error.cmd)} failed ({error.returncode}): {(error.stderr or '').strip()}")
    new = os.path.abspath(arguments.binaries[-1])
    for path in (old, new):
        if not os.access(path, os.X_OK):
            sys.exit(f"error: {path} is not an executable")
    overrides = {key: value for key, value in os.environ.items() if key.startswith("GATEHOUSE_")
                 and key not in ("GATEHOUSE_PORT", "GATEHOUSE_DATABASE_URL", "GATEHOUSE_HOST") and not key.startswith("GATEHOUSE_TEST_")}
    topology = cluster.Cluster(old, nodes=3, durable=True, overrides=overrides)
    try:
        run = upgrade_under_load(topology, arguments, new)
    except cluster.CheckFailed as error:
        print(f"error: {error}\n{topology.diagnostics()}", file=sys.stderr)
        return 1
    finally:
        topology.stop()
    binaries = {"old": describe_binary(old, old_git), "new": describe_binary(new)}
    return report(dict(started_at=stamp, command=sys.argv, cpus=os.cpu_count(), binaries=binaries, **run), out)


if __name__ == "__main__":
    sys.exit(main())
