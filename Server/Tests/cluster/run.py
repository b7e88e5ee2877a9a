#!/usr/bin/env python3
"""Gatehouse as several stateless nodes on one PostgreSQL behind nginx.

Usage:
  run.py GATEHOUSE_BINARY                   run the checks; exit 0 when every one passes
  run.py --serve [--nodes N] [--database-url URL] GATEHOUSE_BINARY
                                            start the same topology and keep it running until
                                            Ctrl-C (what benchmarks/cluster runs); with URL, on
                                            that PostgreSQL database instead of a throwaway one

Starts a throwaway PostgreSQL cluster (initdb/pg_ctl from GATEHOUSE_TEST_PG_BINDIR or the newest
/usr/lib/postgresql/*/bin; run as the postgres user when this runs as root), three `gatehouse
serve` nodes on free loopback ports sharing the database, the admin key, GATEHOUSE_SECRET_KEY,
the public URL and the `handz` preset, and nginx (round robin, no sticky sessions, a dead node
skipped) in front of them. Then checks, across nodes:

  a. refresh-token reuse: a token rotated on node 1 and replayed on node 2 after the reuse interval
     revokes the whole session (its successor fails too);
  b. login throttling: wrong passwords spread over the three nodes lock the account on every node;
  c. key rotation: a token signed by a key rotated on node 1 is accepted by nodes 2 and 3 (the
     time this takes is measured and reported);
  d. credits: 30 concurrent spends of a Free account (3 credits) over the three nodes spend 3;
  e. a node killed with SIGKILL under a sign-up load through nginx loses nothing acknowledged and
     duplicates nothing (checked through psql);
  f. nginx's X-Forwarded-For gives the client address (GATEHOUSE_TRUSTED_PROXIES);
  h. login lockout race: 45 wrong passwords released together over the three nodes get exactly
     5 x 401 invalid_credentials, the rest 429 too_many_attempts, and the right password is then
     refused with 429;
  j. verification resend race: with the sign-up's mail moved back in time, 30 resends released
     together get exactly one 202 and 429 rate_limited for the rest (2 verify_email tokens);
  k. usage meter race: 30 uses of a verified Free account's `share_links` meter (3 a day) released
     together over the three nodes with the service key count exactly 3 (403 plan_required
     share_limit_reached for the rest; one counter row holding 3);
  l. revocation reaches every node: while each node serves a session's /v1/me (from its session
     cache), a sign-out on node 1, and then an account disabled on node 2, are refused (401, 403)
     by every request on every node begun more than 0.5 s after the change answered, and no node
     accepts the token again after refusing it;
  m. a check holds until its write (issue 40): a password change, a profile change and an email
     link held on nodes 1 and 3 with their bodies back while the owner signs out everywhere on
     node 2, then completed: 401 each, nothing written; then two sessions' "old -> old" changes
     on nodes 1 and 3 released with the owner's change on node 2: the owner's stands;
  s. account facts (issue 47): a credit spent on node 1 and a grant made on node 2 reach every
     node's /v1/me (its cached identities, ledger and credits) within the session cache's bound;
  r. the OpenID provider (issue 45): a confidential client registered through node 1, a code got
     through the hosted sign-in and consent pages on node 1 (cookies and Origin as a browser's),
     then 20 copies of its token request released together over nodes 1-3 and nginx: at most one
     200, invalid_grant for the rest; the winner's access token answers 401 at /oauth/userinfo on
     every node within 2 s, its refresh token is refused with invalid_grant, and the reuse is
     audited; then the consent holds on node 2 (a sign-in there goes straight back with a code);
and that SIGTERM stops every remaining node within 15 seconds. Then, on a second cluster with the
`default` preset (magic links and anonymous starts are off in handz):

  g. magic-link code race: 60 wrong codes released together use exactly the 5 attempts, none
     signs in, and the right code is then refused with 400 code_exhausted;
  i. anonymous Idempotency-Key race: 12 replays of a start's key released together all answer the
     same account and create none; after the account is upgraded (email and password) 12 more
     replays released together never sign in to it.

Then, on a third cluster with the `hannah` preset (phone numbers on, issue 43; Stripe, issue 44,
every node pointed at one Stripe stand-in, Server/Tests/support/stripe_standin.py, run with
GATEHOUSE_TEST_PYTHON or .build-venv's Python, which has Stripe's own `stripe` package):

  n. SMS code race: 60 wrong codes at one number's code released together use exactly its 5
     guesses, none signs in, each answers 400 invalid_code alone (issue 58: no tries left said by
     number), and the right code is then refused, the code dead;
  o. SMS send race: 30 sends to one number released together text it once;
  t. the phone pre-hijack (issue 58): a phone-and-password sign-up on node 1 (the third cluster's
     preset is Hannah's with passwords on), the holder's sign-in code on node 2 a minute later, the
     attacker's `resend` on node 3 a minute after that: the newest SMS signs the holder in on node
     1 and the attacker's password is refused on node 2;
  u. two accounts' changes to one number (issue 58): the attacker's SMS typed without a session on
     node 3 is refused; the victim's own code with its session on node 1 makes the number the
     victim's, and the attacker's account has none;
  p. Stripe webhook race: 20 deliveries of one signed checkout.session.completed released together
     all answer 200 and apply it once (one purchase.succeeded and one plan.changed for the account
     in /admin/v1/events, plan_state pro, one ledger_events row);
  q. Stripe first checkout race: 10 first checkouts of one account released together all answer
     200 with one Stripe customer (every checkout session the stand-in accepted names it, one
     customer made under gatehouse-customer-<id>, one stripe_customers row), and the stand-in
     rejected no request of the run;
  v. Google Play claim race (issue 59; every node calls one Play stand-in,
     Server/Tests/support/google_play_standin.py, as the service account): one purchase token
     claimed by two accounts, three times each, released together over the nodes: one account's
     three claims answer 200, the other's 409 subscription_in_use, one owner is stored, and the
     stand-in saw no call its discovery document does not describe.

"Released together" is the last-byte technique: one raw connection per request to the nodes' own
ports (not nginx; r. adds nginx's, which passes a request on once its body is whole), every
request sent but its final byte, then all the final bytes at once.

Every process is stopped and every temporary file removed at the end, on failure too. Standard
library only (the Stripe stand-in runs in its own Python). Report lines look like
`cluster: <check>: ok (<details>)`.
"""
import argparse
import base64
import collections
import glob
import hashlib
import html
import http.client
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PRESET = "handz"
SERVICE_KEY = "cluster-service-key-" + secrets.token_hex(8)
# The preset of the second cluster (magic links and anonymous starts are off in handz).
ALL_METHODS_PRESET = "default"
# The preset of the third cluster: phone numbers are on in hannah only.
PHONE_PRESET = "hannah"

# `/auth/v1`'s anon key on the third cluster (the phone checks t and u use GoTrue's routes).
ANON_KEY = "sb_publishable_cluster_anon_key_58"
GOTRUE = {"apikey": ANON_KEY}


def phone_preset_file(directory):
    """Hannah's preset with passwords on too (a phone-and-password sign-up on `/auth/v1`, check t),
    written to `directory`; every other setting is the shipped file's."""
    with open(os.path.join(ROOT, "Sources", "GatehouseServer", "Resources", "presets", f"{PHONE_PRESET}.json")) as f:
        preset = json.load(f)
    preset["sign_in_methods"]["email_password"] = True
    # Google Play (issue 59): the package the Play stand-in serves and one product at Hannah's premium tier.
    preset["google_play"] = {"package_name": GOOGLE_PLAY_PACKAGE, "products": {GOOGLE_PLAY_PRODUCT: {"plan": "pro", "tier": "premium"}}}
    path = os.path.join(directory, "hannah-with-passwords.json")
    with open(path, "w") as f:
        json.dump(preset, f)
    return path
# Stripe (issue 44), on the third cluster too: a price hannah sells and the return URLs' origin.
STRIPE_PRICE = "price_hannah_premium_monthly"
STRIPE_ORIGIN = "https://hannah.example"
# Google Play (issue 59), on the third cluster too: the package and a product the preset sells.
GOOGLE_PLAY_PACKAGE = "com.hannahhealth.app"
GOOGLE_PLAY_PRODUCT = "premium_monthly"
GOOGLE_PLAY_CLIENT_VERSION = "2.202.0"
PASSWORD = "correct horse battery staple"
# The OpenID provider's client (issue 45): where its codes go back to, and what it asks for.
OIDC_REDIRECT = "http://127.0.0.1:9999/cb"
OIDC_SCOPES = ["openid", "email", "offline_access"]
# How stale a node's cached session may be (SessionCache.Settings.stalenessBound, docs/scaling.md).
SESSION_CACHE_BOUND = 0.5
# Each node's PostgreSQL pool (PostgresDatabase's default `maximumConnections`; the session
# cache's listener keeps one of them).
POOL_PER_NODE = 20


class CheckFailed(Exception):
    pass


def require(condition, message):
    if not condition:
        raise CheckFailed(message)


def report(check, details, status="ok"):
    print(f"cluster: {check}: {status} ({details})", flush=True)


# ---------------------------------------------------------------------------------------------
# HTTP


class Reply:
    def __init__(self, status, body, headers):
        self.status = status
        self.body = body
        self.headers = headers

    @property
    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def code(self):
        """Gatehouse's `{"error": {"code"}}`, or the OAuth endpoints' RFC 6749 `{"error": "..."}`."""
        payload = self.json
        if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
            return payload["error"].get("code")
        if isinstance(payload, dict) and isinstance(payload.get("error"), str):
            return payload["error"]
        return None

    def header(self, name):
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def __repr__(self):
        text = self.body[:300].decode("utf-8", "replace")
        return f"HTTP {self.status} {text}"


def call(base, method, path, body=None, token=None, headers=None, timeout=15):
    """One request on a fresh connection. Raises OSError (http.client errors included) when no
    answer arrives."""
    host, port = base.split("//", 1)[1].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        sent = {"Accept": "application/json", "Connection": "close"}
        data = None
        if body is not None:
            # Bytes go as they are (a form, with its Content-Type in `headers`); anything else as JSON.
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        if token:
            sent["Authorization"] = f"Bearer {token}"
        sent.update(headers or {})
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        return Reply(response.status, response.read(), response.getheaders())
    except http.client.HTTPException as error:
        raise OSError(f"{type(error).__name__}: {error}") from error
    finally:
        connection.close()


class BurstReplies(list):
    """The answers of `last_byte_burst`, in the order of its requests. `release_seconds` is how
    long the loop that sent every final byte took."""

    release_seconds = 0.0


def read_reply(connection, method):
    """One HTTP/1.1 answer from a raw socket: the status line, the headers and the body (by
    Content-Length, chunked transfer encoding, or up to the close)."""
    response = http.client.HTTPResponse(connection, method=method)
    try:
        response.begin()
        return Reply(response.status, response.read(), response.getheaders())
    finally:
        response.close()  # the socket's file object only; the caller closes the socket


def last_byte_burst(requests, hold=0.2, timeout=30, meanwhile=None):
    """Releases `requests` together with the last-byte technique: one raw TCP connection each,
    every request (HTTP/1.1, `Connection: close`, `Content-Length`) sent but for its final byte,
    a pause of `hold` seconds so that every server has read its part, then all the final bytes
    in one tight loop: no request can be complete before the others are sent. Then every answer
    is read (they wait in the kernel's buffers meanwhile). Each request is (host, port, method,
    path, json_body_or_bytes_or_None, headers_dict). `meanwhile`, when given, runs while they are
    held (after the pause, before the final bytes). Returns the Replies in order; CheckFailed when
    a request got no answer."""
    payloads = []
    for host, port, method, path, body, headers in requests:
        # Bytes go as they are (a signed webhook's exact payload); anything else as JSON.
        data = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        fields = {"Host": f"{host}:{port}", "Accept": "application/json", "Connection": "close"}
        if body is not None:
            fields["Content-Type"] = "application/json"
        fields.update(headers or {})
        fields["Content-Length"] = str(len(data))
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fields.items()) + "\r\n"
        # Never empty: without a body the final byte is the header block's last newline.
        payloads.append(head.encode("latin-1") + data)
    sockets = []
    failures = {}
    try:
        for index, ((host, port, method, path, _, _), payload) in enumerate(zip(requests, payloads)):
            connection = socket.create_connection((host, port), timeout=timeout)
            sockets.append(connection)
            # The final byte goes out at once, not held back by Nagle's algorithm.
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                connection.sendall(payload[:-1])
            except OSError as error:
                failures[index] = f"sending the request: {type(error).__name__}: {error}"
        time.sleep(hold)
        if meanwhile is not None:
            meanwhile()
        started = time.monotonic()
        for index, (connection, payload) in enumerate(zip(sockets, payloads)):
            if index in failures:
                continue
            try:
                connection.send(payload[-1:])
            except OSError as error:
                failures[index] = f"sending the final byte: {type(error).__name__}: {error}"
        replies = BurstReplies()
        replies.release_seconds = time.monotonic() - started
        deadline = time.monotonic() + timeout
        for index, ((host, port, method, path, _, _), connection) in enumerate(zip(requests, sockets)):
            if index in failures:
                replies.append(None)
                continue
            connection.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                replies.append(read_reply(connection, method))
            except (OSError, http.client.HTTPException) as error:
                failures[index] = f"reading the answer: {type(error).__name__}: {error}"
                replies.append(None)
        if failures:
            described = [f"#{index} {requests[index][2]} {requests[index][3]} on :{requests[index][1]}: {text}"
                         for index, text in sorted(failures.items())]
            raise CheckFailed(f"{len(failures)} of {len(requests)} requests released together got no answer, "
                              f"e.g. {described[:3]}")
        return replies
    finally:
        for connection in sockets:
            connection.close()


def tally(replies):
    """`5 x 401 invalid_credentials, 40 x 429 too_many_attempts` for a list of Replies."""
    counts = collections.Counter((reply.status, reply.code) for reply in replies)
    return ", ".join(f"{n} x {status}{' ' + code if code else ''}"
                     for (status, code), n in sorted(counts.items(), key=lambda item: (item[0][0], item[0][1] or "")))


def signup(base, email, headers=None):
    return call(base, "POST", "/v1/auth/signup", {"email": email, "password": PASSWORD}, headers=headers)


def login(base, email, password=PASSWORD):
    return call(base, "POST", "/v1/auth/login", {"email": email, "password": password})


def refresh(base, token):
    return call(base, "POST", "/v1/auth/refresh", {"refresh_token": token})


def jwt_header(token):
    part = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def jwt_claims(token):
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


FORM = "application/x-www-form-urlencoded"


def form(fields):
    return urllib.parse.urlencode(fields).encode()


def basic(user, password):
    """HTTP Basic as RFC 6749 §2.3.1 has it: each part form-encoded first."""
    pair = f"{urllib.parse.quote_plus(user)}:{urllib.parse.quote_plus(password)}"
    return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


def pkce_pair():
    """A random PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class ProviderBrowser:
    """A browser on one node's provider pages (/oauth/...): keeps that host:port's cookies (the
    CSRF cookie, the signed-in browser's cookie), reads a page's state and hidden fields, and
    posts its forms naming the node's origin, as the page's own form would."""

    def __init__(self, base):
        self.base = base
        self.cookies = {}

    def _headers(self, extra=None):
        headers = {"Accept": "text/html"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in sorted(self.cookies.items()))
        headers.update(extra or {})
        return headers

    def _keep(self, reply):
        for key, value in reply.headers:
            if key.lower() != "set-cookie":
                continue
            name, _, rest = value.partition("=")
            kept = rest.split(";", 1)[0]
            if not kept or re.search(r";\s*max-age=0\b", value, re.IGNORECASE):
                self.cookies.pop(name.strip(), None)
            else:
                self.cookies[name.strip()] = kept
        return reply

    def get(self, path):
        return self._keep(call(self.base, "GET", path, headers=self._headers()))

    def post(self, path, fields):
        return self._keep(call(self.base, "POST", path, form(fields),
                               headers=self._headers({"Content-Type": FORM, "Origin": self.base})))

    @staticmethod
    def state(reply):
        """`data-state` of the page's <main>, or None (a redirect, JSON, ...)."""
        found = re.search(r'<main data-state="([^"]*)"', reply.body.decode("utf-8", "replace"))
        return found.group(1) if found else None

    @staticmethod
    def hidden(reply):
        # The first form's fields: the sign-in page's passkey form follows it.
        text = reply.body.decode("utf-8", "replace").split("</form>")[0]
        return {html.unescape(name): html.unescape(value)
                for name, value in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)">', text)}

    @staticmethod
    def location(reply):
        """The redirect's target and its query, one value a name."""
        target = reply.header("Location") or ""
        parts = urllib.parse.urlsplit(target)
        query = {name: values[-1] for name, values in urllib.parse.parse_qs(parts.query, keep_blank_values=True).items()}
        return f"{parts.scheme}://{parts.netloc}{parts.path}", query

    @staticmethod
    def describe(reply):
        """A page as `HTTP 200 page consent: <heading> [<errors>]`, a redirect with its Location."""
        if reply.header("Location"):
            return f"HTTP {reply.status} -> {reply.header('Location')}"
        state = ProviderBrowser.state(reply)
        if state is None:
            return repr(reply)
        text = reply.body.decode("utf-8", "replace")
        heading = re.search(r"<h1>(.*?)</h1>", text, re.S)
        errors = [html.unescape(error) for error in re.findall(r'<p class="error"[^>]*>(.*?)</p>', text, re.S)]
        return (f"HTTP {reply.status} page {state}: {html.unescape(heading.group(1)) if heading else ''}"
                f"{' ' + str(errors) if errors else ''}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, lines=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# PostgreSQL


def postgres_bindir():
    configured = os.environ.get("GATEHOUSE_TEST_PG_BINDIR")
    if configured:
        return configured

    def version(path):
        return [int(n) for n in re.findall(r"\d+", path.split("/postgresql/")[1].split("/")[0])]

    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version)
    if candidates:
        return candidates[-1]
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(initdb)
    raise CheckFailed("no PostgreSQL found: install it (apt-get install postgresql) or set GATEHOUSE_TEST_PG_BINDIR")


class Postgres:
    """A throwaway cluster on a free loopback port."""

    def __init__(self, durable=False, max_connections=100):
        self.bindir = postgres_bindir()
        self.durable = durable
        self.max_connections = max_connections
        self.port = free_port()
        self.directory = None
        self.runner = []
        self.started = False

    @property
    def url(self):
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres?sslmode=disable"

    def start(self):
        # Its own directory: when running as root it belongs to the postgres user.
        self.directory = tempfile.mkdtemp(prefix="gatehouse-cluster-pg-")
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root: use its own system user.
            import pwd

            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise CheckFailed("running as root, but the postgres system user is missing")
            os.chown(self.directory, user.pw_uid, user.pw_gid)
            self.runner = ["runuser", "-u", "postgres", "--"]
        data = os.path.join(self.directory, "data")
        self._run([os.path.join(self.bindir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"])
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections={self.max_connections}"
        )
        if not self.durable:
            # Test speed; what is tested is a Gatehouse node dying, not PostgreSQL.
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run([
            os.path.join(self.bindir, "pg_ctl"), "-D", data, "-l", os.path.join(self.directory, "server.log"),
            "-w", "-t", "60", "-o", options, "start",
        ])
        self.started = True

    def _run(self, command):
        result = subprocess.run(
            self.runner + command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        if result.returncode != 0:
            raise CheckFailed(f"{os.path.basename(command[0])} failed ({result.returncode}): {result.stdout.strip()[-2000:]}")

    def psql_binary(self):
        candidate = os.path.join(self.bindir, "psql")
        if os.access(candidate, os.X_OK):
            return candidate
        found = shutil.which("psql")
        if not found:
            raise CheckFailed("psql not found (in GATEHOUSE_TEST_PG_BINDIR or on PATH)")
        return found

    def psql_command(self):
        return [self.psql_binary(), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres"]

    def query(self, sql):
        """Rows of `sql` as lists of strings (tab-separated unaligned output)."""
        result = subprocess.run(
            self.psql_command() + ["-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        if result.returncode != 0:
            raise CheckFailed(f"psql failed: {result.stderr.strip()}")
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def stop(self, mode="immediate"):
        if self.started:
            subprocess.run(
                self.runner + [os.path.join(self.bindir, "pg_ctl"), "-D", os.path.join(self.directory, "data"),
                               "-m", mode, "-w", "stop"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            self.started = False
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


class ExistingPostgres:
    """A database made beforehand (`--serve --database-url`, e.g. one `gatehouse-bench load` filled):
    used as it is, never stopped, emptied or removed."""

    def __init__(self, url):
        self.url = url
        self.directory = None
        self.started = False

    def start(self):
        pass

    def stop(self, mode="immediate"):
        pass

    def psql_command(self):
        return [shutil.which("psql") or "psql", self.url]


# ---------------------------------------------------------------------------------------------
# Gatehouse nodes and nginx


class Node:
    def __init__(self, number, binary, environment, directory):
        self.number = number
        self.binary = binary
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.environment = dict(environment, GATEHOUSE_PORT=str(self.port))
        self.log_path = os.path.join(directory, f"node{number}.log")
        self.process = None

    @property
    def name(self):
        return f"node {self.number}"

    def launch(self):
        log = open(self.log_path, "a")
        try:
            self.process = subprocess.Popen(
                [self.binary, "serve"], env=self.environment, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()

    def wait_healthy(self, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                if call(self.url, "GET", "/health", timeout=2).status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        raise CheckFailed(f"{self.name} did not answer GET /health with 200 within {seconds} s:\n{tail(self.log_path)}")

    def start(self, attempts=3):
        """Starts the node and waits for /health. The binary may be relinked by a build now and
        then, so a start that fails at once is retried."""
        for attempt in range(1, attempts + 1):
            try:
                self.launch()
            except OSError as error:  # e.g. ETXTBSY or ENOENT while the binary is being relinked
                if attempt == attempts:
                    raise CheckFailed(f"{self.name} could not be started: {error}")
                time.sleep(2)
                continue
            if self.wait_healthy():
                return
            if attempt == attempts:
                raise CheckFailed(
                    f"{self.name} exited with {self.process.returncode} before it was healthy:\n{tail(self.log_path)}")
            time.sleep(2)

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def signal(self, number):
        if self.alive():
            self.process.send_signal(number)

    def kill(self):
        if self.alive():
            self.process.kill()
        if self.process is not None:
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                pass


def nginx_binary():
    for candidate in (os.environ.get("GATEHOUSE_TEST_NGINX"), "/usr/sbin/nginx", shutil.which("nginx")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise CheckFailed("nginx not found: apt-get install nginx (or set GATEHOUSE_TEST_NGINX)")


NGINX_CONF = """\
# Generated by Server/Tests/cluster/run.py.
{user}worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;

events {{
    worker_connections 1024;
}}

http {{
    # `tag=` is the client's X-Load-Tag header, "-" without one (benchmarks/rolling_upgrade.py
    # finds each of its requests' upstreams by it).
    log_format upstream '$remote_addr "$request" $status upstream=$upstream_addr $upstream_status tag=$http_x_load_tag';
    access_log {dir}/nginx-access.log upstream;
    client_body_temp_path {dir}/nginx-client-body;
    proxy_temp_path {dir}/nginx-proxy;
    fastcgi_temp_path {dir}/nginx-fastcgi;
    uwsgi_temp_path {dir}/nginx-uwsgi;
    scgi_temp_path {dir}/nginx-scgi;

    # Round robin over every node: no sticky sessions (every request is checked against the
    # database). A node that refuses a connection is skipped for 10 s.
    upstream gatehouse {{
{servers}
        keepalive 32;
    }}

    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 64k;

        location / {{
            proxy_pass http://gatehouse;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Request-Id $request_id;
            # Connection errors and time-outs go to the next node. A POST that already reached a
            # node is not re-sent (nginx's default without `non_idempotent`): the client retries
            # with its Idempotency-Key instead of nginx creating something twice.
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 3;
            proxy_connect_timeout 2s;
            proxy_read_timeout 60s;
        }}
    }}
}}
"""


class Nginx:
    def __init__(self, directory, port):
        self.directory = directory
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.process = None
        self.conf = os.path.join(directory, "nginx.conf")
        self.access_log = os.path.join(directory, "nginx-access.log")
        self.error_log = os.path.join(directory, "nginx-error.log")

    def write_conf(self, nodes, down=()):
        servers = "\n".join(
            f"        server 127.0.0.1:{node.port} max_fails=1 fail_timeout=10s{' down' if node in down else ''};" for node in nodes)
        # As root, the workers would switch to `nobody`, who cannot use the temporary directory.
        user = "user root;\n" if os.geteuid() == 0 else ""
        with open(self.conf, "w") as f:
            f.write(NGINX_CONF.format(user=user, dir=self.directory, port=self.port, servers=servers))

    def reload(self, nodes, down=()):
        """New workers with `down` marked down (sent nothing new); the old workers finish what
        they have in hand and exit, closing their connections to the nodes."""
        self.write_conf(nodes, down)
        self.process.send_signal(signal.SIGHUP)

    def start(self, nodes):
        self.write_conf(nodes)
        self.process = subprocess.Popen(
            [nginx_binary(), "-p", self.directory + "/", "-c", self.conf, "-e", self.error_log],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.directory, "nginx-stderr.log"), "w"),
            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise CheckFailed(
                    f"nginx exited with {self.process.returncode}:\n"
                    f"{tail(os.path.join(self.directory, 'nginx-stderr.log'))}{tail(self.error_log)}")
            try:
                if call(self.url, "GET", "/health", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise CheckFailed(f"nginx did not answer within 15 s:\n{tail(self.error_log)}")

    def upstream_counts(self):
        counts = collections.Counter()
        try:
            with open(self.access_log, errors="replace") as f:
                for line in f:
                    match = re.search(r"upstream=(\S+)", line)
                    if match:
                        for address in match.group(1).split(","):
                            counts[address.strip().rstrip(",")] += 1
        except OSError:
            pass
        return counts

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # graceful
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


class Cluster:
    """PostgreSQL + N Gatehouse nodes + nginx, all on loopback, in one temporary directory."""

    def __init__(self, binary, nodes=3, durable=False, overrides=None, cheap_hashing=True, database_url=None):
        self.binary = os.path.abspath(binary)
        self.count = nodes
        self.postgres = (ExistingPostgres(database_url) if database_url
                         else Postgres(durable=durable, max_connections=max(100, nodes * POOL_PER_NODE + 20)))
        self.directory = tempfile.mkdtemp(prefix="gatehouse-cluster-")
        self.nginx = Nginx(self.directory, free_port())
        self.admin_key = secrets.token_urlsafe(32)
        self.secret_key = secrets.token_urlsafe(48)
        environment = {key: value for key, value in os.environ.items() if not key.startswith("GATEHOUSE_")}
        environment.update(
            GATEHOUSE_HOST="127.0.0.1",
            GATEHOUSE_DATABASE_URL=self.postgres.url,
            GATEHOUSE_ADMIN_KEY=self.admin_key,
            GATEHOUSE_SERVICE_KEY=SERVICE_KEY,
            GATEHOUSE_ADMIN_KEY_FILE=os.path.join(self.directory, "admin-key"),
            GATEHOUSE_SECRET_KEY=self.secret_key,
            # One issuer for every node: the address clients use.
            GATEHOUSE_PUBLIC_URL=self.nginx.url,
            GATEHOUSE_PRESET=PRESET,
            GATEHOUSE_IP_LIMITS="off",
            # nginx connects from loopback: believe its X-Forwarded-For.
            GATEHOUSE_TRUSTED_PROXIES="127.0.0.1",
            GATEHOUSE_LOG_LEVEL="warning",
        )
        if cheap_hashing:
            environment.update(
                GATEHOUSE_ARGON2_MEMORY_KIB="64", GATEHOUSE_ARGON2_ITERATIONS="1", GATEHOUSE_ARGON2_PARALLELISM="1")
        environment.update(overrides or {})
        self.environment = environment
        self.nodes = [Node(number, self.binary, environment, self.directory) for number in range(1, nodes + 1)]

    def start(self):
        started = time.monotonic()
        self.postgres.start()
        pg_seconds = time.monotonic() - started
        # The first node alone, so that it applies the migrations and makes the first signing key.
        self.nodes[0].start()
        first_seconds = time.monotonic() - started - pg_seconds
        others = self.nodes[1:]
        errors = []

        def start(node):
            try:
                node.start()
            except CheckFailed as error:
                errors.append(error)

        threads = [threading.Thread(target=start, args=(node,)) for node in others]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        self.nginx.start(self.nodes)
        return {"postgres": pg_seconds, "first": first_seconds, "total": time.monotonic() - started}

    def node_for(self, address):
        for node in self.nodes:
            if address.endswith(f":{node.port}"):
                return node
        return None

    def diagnostics(self):
        parts = []
        for node in self.nodes:
            text = tail(node.log_path, 15)
            if text.strip():
                parts.append(f"---- {node.name} log ----\n{text}")
        text = tail(self.nginx.error_log, 15)
        if text.strip():
            parts.append(f"---- nginx error log ----\n{text}")
        if self.postgres.directory:
            text = tail(os.path.join(self.postgres.directory, "server.log"), 15)
            if text.strip():
                parts.append(f"---- PostgreSQL log ----\n{text}")
        return "\n".join(parts)

    def stop(self):
        """Stops everything still running and removes the temporary files. Safe to call twice."""
        for node in self.nodes:
            node.signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for node in self.nodes:
            if node.process is None:
                continue
            try:
                node.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.kill()
        try:
            self.nginx.stop()
        finally:
            try:
                self.postgres.stop()
            finally:
                shutil.rmtree(self.directory, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The payment sources' stand-ins (Server/Tests/support/stripe_standin.py, google_play_standin.py)


def test_python():
    """The Python with the test packages (the stand-in signs webhooks and checks them with Stripe's
    own `stripe` package): GATEHOUSE_TEST_PYTHON, as scripts/test exports it, else .build-venv."""
    configured = os.environ.get("GATEHOUSE_TEST_PYTHON")
    candidate = configured or os.path.join(os.path.dirname(ROOT), ".build-venv", "bin", "python")
    if os.access(candidate, os.X_OK):
        return candidate
    raise CheckFailed(f"no Python for the Stripe stand-in at {candidate}: set GATEHOUSE_TEST_PYTHON to a Python with "
                      f"`stripe` (scripts/lib/common.sh's ensure_venv makes .build-venv)")


class StandIn:
    """A payment source's stand-in from Server/Tests/support on a free loopback port, run with the
    test Python; it prints READY <port> and stops when its standard input closes. Each source
    names its script and arguments; the process, control API and log are handled here once."""

    SUPPORT = os.path.join(ROOT, "Tests", "support")
    NAME = "stand-in"

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="gatehouse-cluster-standin-")
        self.log_path = os.path.join(self.directory, "standin.log")
        self.process = None
        self.url = None

    def command(self):
        raise NotImplementedError

    def start(self, seconds=30):
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [test_python()] + self.command(),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
        ready, _, _ = select.select([self.process.stdout], [], [], seconds)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("READY "):
            how = f"exited with {self.process.wait(5)}" if not line else f"printed {line.strip()!r}"
            if not ready:
                how = f"did not print READY within {seconds} s"
            raise CheckFailed(f"the {self.NAME} did not start: {how}:\n{tail(self.log_path)}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def control(self, method, path, body=None):
        reply = call(self.url, method, f"/_control/{path}", body)
        require(reply.status == 200, f"the {self.NAME}'s {method} /_control/{path}: {reply!r}")
        return reply.json

    def diagnostics(self):
        text = tail(self.log_path, 15)
        return f"\n---- {self.NAME} log ----\n{text}" if text.strip() else ""

    def stop(self):
        if self.process is not None:
            try:
                self.process.stdin.close()
                self.process.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(5)
            self.process.stdout.close()
            self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)


class StripeStandIn(StandIn):
    """Stripe's API, checking every request against Stripe's OpenAPI description; its control API
    completes checkouts and makes and signs events."""

    NAME = "Stripe stand-in"

    def __init__(self):
        super().__init__()
        self.secret_key = "sk_test_cluster_" + secrets.token_hex(12)
        self.webhook_secret = "whsec_cluster_" + secrets.token_hex(16)

    def command(self):
        return [os.path.join(self.SUPPORT, "stripe_standin.py"), "--port", "0", "--secret-key", self.secret_key,
                "--spec", os.path.join(self.SUPPORT, "stripe-openapi.json"), "--webhook-secret", self.webhook_secret]

    def environment(self, origin):
        """What every node needs to use the stand-in, and `origin` for Checkout's return URLs."""
        return {"GATEHOUSE_STRIPE_SECRET_KEY": self.secret_key, "GATEHOUSE_STRIPE_WEBHOOK_SECRETS": self.webhook_secret,
                "GATEHOUSE_STRIPE_API_URL": self.url, "GATEHOUSE_REDIRECT_ALLOWLIST": origin}


class GooglePlayStandIn(StandIn):
    """The Play Developer API and Google's token endpoint and push-token keys
    (google_play_standin.py), checking every call against the pinned androidpublisher v3 discovery
    document; it writes the service account's key file."""

    NAME = "Google Play stand-in"

    def __init__(self):
        super().__init__()
        self.key_file = os.path.join(self.directory, "service-account.json")

    def command(self):
        return [os.path.join(self.SUPPORT, "google_play_standin.py"), "--port", "0", "--client-version", GOOGLE_PLAY_CLIENT_VERSION,
                "--package-name", GOOGLE_PLAY_PACKAGE, "--service-account-file", self.key_file]

    def environment(self):
        """What every node needs to call the stand-in as the service account and check its pushes."""
        info = self.control("GET", "info")
        return {"GATEHOUSE_GOOGLE_PLAY_SERVICE_ACCOUNT": self.key_file, "GATEHOUSE_GOOGLE_PLAY_API_URL": self.url,
                "GATEHOUSE_GOOGLE_PLAY_PUSH_AUDIENCE": info["push_audience"],
                "GATEHOUSE_GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT": info["push_email"], "GATEHOUSE_GOOGLE_JWKS_URL": info["jwks_uri"]}


# ---------------------------------------------------------------------------------------------
# The checks


def preset_settings(name=PRESET):
    """A preset's numbers the checks depend on, from the preset file in this repository (the
    binary embeds the same file); the shipped values when it cannot be read."""
    settings = {"reuse_interval": 10, "lockout_after": 5, "free_credits": 3, "magic_code_attempts": 5,
                "resend_interval": 60, "share_links_per_day": 3}
    path = os.path.join(ROOT, "Sources", "GatehouseServer", "Resources", "presets", f"{name}.json")
    try:
        with open(path) as f:
            preset = json.load(f)
    except (OSError, ValueError):
        return settings
    for key, where in [("reuse_interval", ("tokens", "refresh_reuse_interval_seconds")),
                       ("lockout_after", ("throttling", "login_failures_before_lockout")),
                       ("free_credits", ("entitlements", "plans", "free", "credits", "practice")),
                       ("magic_code_attempts", ("email", "magic_code_max_attempts")),
                       ("resend_interval", ("verification", "resend_interval_seconds")),
                       ("share_links_per_day", ("entitlements", "plans", "free", "limits", "share_links_per_day"))]:
        value = preset
        try:
            for part in where:
                value = value[part]
        except (KeyError, TypeError):
            continue
        settings[key] = value
    return settings


class Checks:
    def __init__(self, cluster, settings):
        self.cluster = cluster
        self.settings = settings
        self.run_id = secrets.token_hex(3)
        self.a, self.b, self.c = cluster.nodes[:3]
        self.proxy = cluster.nginx.url

    def email(self, label):
        return f"{label}-{self.run_id}-{secrets.token_hex(3)}@example.com"

    def new_account(self, node, label):
        email = self.email(label)
        reply = signup(node.url, email)
        require(reply.status == 201, f"sign-up on {node.name}: expected 201, got {reply!r}")
        return email, reply.json

    # a. Refresh reuse across nodes: the first half (rotate, then a replay inside the interval).
    def refresh_reuse_begin(self):
        email, account = self.new_account(self.a, "reuse")
        first = account["session"]
        rotated = refresh(self.a.url, first["refresh_token"])
        rotated_at = time.monotonic()
        require(rotated.status == 200, f"refresh on {self.a.name}: expected 200, got {rotated!r}")
        successor = rotated.json["session"]
        require(successor["refresh_token"] != first["refresh_token"], "the refresh token did not rotate")
        # Inside the interval another node answers with the very same successor: the chain key is
        # shared through the database.
        repeat = refresh(self.c.url, first["refresh_token"])
        require(repeat.status == 200, f"a replay within the reuse interval on {self.c.name}: expected 200, got {repeat!r}")
        require(repeat.json["session"]["refresh_token"] == successor["refresh_token"],
                f"a replay within the reuse interval on {self.c.name} got another successor")
        return {"first": first, "successor": successor, "rotated_at": rotated_at}

    # a. The second half, once the interval has passed.
    def refresh_reuse_finish(self, state):
        interval = self.settings["reuse_interval"]
        # Stored times are whole seconds: one more second makes the replay certainly late.
        wake = state["rotated_at"] + interval + 1.2
        waited = max(0.0, wake - time.monotonic())
        time.sleep(waited)
        replay = refresh(self.b.url, state["first"]["refresh_token"])
        late = time.monotonic() - state["rotated_at"]
        require(replay.status == 401 and replay.code == "session_revoked",
                f"the old token replayed on {self.b.name} {late:.1f} s after rotation: expected 401 session_revoked, got {replay!r}")
        after = refresh(self.c.url, state["successor"]["refresh_token"])
        require(after.status == 401,
                f"the successor on {self.c.name} after reuse was detected: expected 401, got {after!r}")
        me = call(self.a.url, "GET", "/v1/me", token=state["successor"]["access_token"])
        require(me.status == 401, f"the revoked session's access token on {self.a.name}: expected 401, got {me!r}")
        return (f"rotated on node 1; replay on node 3 within the interval got the same successor; "
                f"replay on node 2 after {late:.1f} s (interval {interval} s) -> 401 session_revoked; "
                f"successor on node 3 -> 401 {after.code}; access token on node 1 -> 401")

    # l. A revocation reaches every node's session cache within the bound docs/scaling.md states.
    def revocation_reaches_every_node(self):
        def watch(token, revoke):
            """Polls GET /v1/me with `token` on every node from before `revoke` runs until 1.5 s
            after it has answered; per node, the polls' (start relative to that answer, status)."""
            stop = threading.Event()
            polls = {node.name: [] for node in self.cluster.nodes}
            answered = [None]

            def poll(node):
                while not stop.is_set():
                    began = time.monotonic()
                    status = call(node.url, "GET", "/v1/me", token=token).status
                    polls[node.name].append((began, status))

            threads = [threading.Thread(target=poll, args=(node,)) for node in self.cluster.nodes]
            for thread in threads:
                thread.start()
            try:
                time.sleep(0.3)  # every node has read the session by now, and keeps it
                started = time.monotonic()
                revoke()
                answered[0] = time.monotonic()
                time.sleep(1.5)
            finally:
                stop.set()
                for thread in threads:
                    thread.join()
            # Polls begun 50 ms or more before the change was sent saw the session live.
            settled = started - answered[0] - 0.05
            return settled, {name: [(began - answered[0], status) for began, status in rows] for name, rows in polls.items()}

        def judge(what, watched, refused):
            settled, polls = watched
            late = 0.0
            seen = 0.0  # when the last node's first refused request began
            for name, rows in polls.items():
                before = [status for offset, status in rows if offset < settled]
                require(before and all(status == 200 for status in before),
                        f"{what}: {name} did not serve the live session before the change ({before[-5:]!r})")
                after = [(offset, status) for offset, status in rows if offset >= 0]
                require(after and after[-1][1] == refused,
                        f"{what}: {name} still answers {after[-1][1] if after else None} 1.5 s after the change")
                accepted = [offset for offset, status in after if status == 200]
                first_refusal = next(offset for offset, status in after if status == refused)
                seen = max(seen, first_refusal)
                if accepted:
                    late = max(late, accepted[-1])
                    require(accepted[-1] < first_refusal,
                            f"{what}: {name} accepted the token again after refusing it")
                require(all(status in (200, refused) for _, status in after),
                        f"{what}: {name} answered {sorted({status for _, status in after})}")
            require(late <= SESSION_CACHE_BOUND,
                    f"{what}: a request begun {late * 1000:.0f} ms after the change was still served "
                    f"(bound {SESSION_CACHE_BOUND * 1000:.0f} ms)")
            return late, seen, sum(len(rows) for rows in polls.values())

        _, account = self.new_account(self.a, "revoked")
        token = account["session"]["access_token"]
        polls = watch(token, lambda: require(
            call(self.a.url, "POST", "/v1/auth/logout", {}, token=token).status == 204, "sign-out on node 1"))
        signed_out, signed_out_seen, count = judge("sign-out", polls, 401)

        _, other = self.new_account(self.b, "disabled")
        disabled_token = other["session"]["access_token"]
        polls = watch(disabled_token, lambda: require(
            call(self.b.url, "POST", f"/admin/v1/users/{other['user']['id']}/disable", {"reason": "cluster"},
                 token=self.cluster.admin_key).status == 200, "disable on node 2"))
        disabled, disabled_seen, more = judge("disable", polls, 403)
        return (f"sign-out on node 1: refused by every node in requests begun {signed_out_seen * 1000:.0f} ms after its "
                f"answer, the last served began {signed_out * 1000:.0f} ms after; account disabled on node 2: refused "
                f"from {disabled_seen * 1000:.0f} ms, last served {disabled * 1000:.0f} ms; bound {SESSION_CACHE_BOUND * 1000:.0f} ms; "
                f"{count + more} polls over the three nodes, none served after a refusal")

    # s. What the entitlement snapshot reads of an account beside its row (this period's credits,
    # its grants: SessionCache's AccountFacts) is kept by every node, and a change made on one node
    # reaches every node's copy within the bound docs/scaling.md states.
    def account_facts_reach_every_node(self):
        _, account = self.new_account(self.a, "facts")
        token = account["session"]["access_token"]
        user_id = account["user"]["id"]
        nodes = self.cluster.nodes

        def facts(node):
            me = call(node.url, "GET", "/v1/me", token=token)
            require(me.status == 200, f"GET /v1/me on {node.name}: expected 200, got {me!r}")
            entitlements = me.json["entitlements"]
            return entitlements["plan_state"], (entitlements.get("credits") or {}).get("practice", {}).get("remaining")

        def settle(what, change, expected, view=lambda value: value):
            """Every node reads the facts twice (kept), `change` runs, then every node is polled
            for 1.5 s: the last answer without the change must have begun within the bound."""
            before = {node.name: view((facts(node), facts(node))[1]) for node in nodes}
            require(all(value != expected for value in before.values()), f"{what}: the change was there before it was made ({before})")
            change()
            answered = time.monotonic()
            polls = {node.name: [] for node in nodes}

            def poll(node):
                while time.monotonic() - answered < 1.5:
                    began = time.monotonic()
                    polls[node.name].append((began - answered, view(facts(node))))

            threads = [threading.Thread(target=poll, args=(node,)) for node in nodes]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            late = 0.0
            for name, rows in polls.items():
                require(rows and rows[-1][1] == expected, f"{what}: {name} still answers {rows[-1][1] if rows else None} 1.5 s after the change")
                stale = [offset for offset, value in rows if value != expected]
                if stale:
                    first_fresh = next(offset for offset, value in rows if value == expected)
                    require(stale[-1] < first_fresh, f"{what}: {name} answered the old facts again after the new ones")
                    late = max(late, stale[-1])
            require(late <= SESSION_CACHE_BOUND,
                    f"{what}: a request begun {late * 1000:.0f} ms after the change still saw the old facts (bound {SESSION_CACHE_BOUND * 1000:.0f} ms)")
            return late, sum(len(rows) for rows in polls.values())

        plan, remaining = facts(self.a)
        spent = lambda: require(call(self.a.url, "POST", "/v1/credits/practice/spend",
                                     {"idempotency_key": "facts-1", "action": "practice_saved_flow"}, token=token).status == 200,
                                "a practice spend on node 1")
        spend_late, spend_polls = settle("a spend on node 1", spent, (plan, remaining - 1))
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
        granted = lambda: require(call(self.b.url, "POST", f"/admin/v1/users/{user_id}/grants", {"until": until, "reason": "cluster"},
                                       token=self.cluster.admin_key).status == 201, "a grant on node 2")
        _, after_spend = facts(self.c)
        grant_late, grant_polls = settle("a grant on node 2", granted, "pro", view=lambda value: value[0])
        return (f"practice credits {remaining} -> {after_spend} by a spend on node 1: the old balance last served "
                f"{spend_late * 1000:.0f} ms after its answer; plan {plan} -> pro by a grant on node 2: the old plan last served "
                f"{grant_late * 1000:.0f} ms after; bound {SESSION_CACHE_BOUND * 1000:.0f} ms; {spend_polls + grant_polls} polls")

    # b. Login throttling counts across nodes.
    def login_throttling(self):
        email, _ = self.new_account(self.c, "throttle")
        threshold = self.settings["lockout_after"]
        nodes = self.cluster.nodes
        for attempt in range(threshold):
            node = nodes[attempt % len(nodes)]
            reply = login(node.url, email, "not the password at all")
            require(reply.status == 401 and reply.code == "invalid_credentials",
                    f"wrong password #{attempt + 1} on {node.name}: expected 401 invalid_credentials, got {reply!r}")
        answers = []
        for target, base in [(node.name, node.url) for node in nodes] + [("nginx", self.proxy)]:
            reply = login(base, email)
            require(reply.status == 429 and reply.code == "too_many_attempts",
                    f"the right password on {target} after {threshold} failures spread over the nodes: "
                    f"expected 429 too_many_attempts, got {reply!r}")
            require(reply.header("Retry-After") is not None, f"429 on {target} without Retry-After")
            answers.append(target)
        return (f"{threshold} wrong passwords round robin over nodes 1-3 -> the right one is refused with 429 "
                f"on {', '.join(answers)} (Retry-After {reply.header('Retry-After')} s)")

    # c. Key rotation reaches every node.
    def key_rotation(self):
        email, account = self.new_account(self.a, "rotation")
        old_kid = jwt_header(account["session"]["access_token"])["kid"]
        rotated = call(self.a.url, "POST", "/admin/v1/keys/rotate", token=self.cluster.admin_key)
        rotated_at = time.monotonic()
        require(rotated.status == 200, f"POST /admin/v1/keys/rotate on {self.a.name}: expected 200, got {rotated!r}")
        published = {key.get("kid") for key in rotated.json.get("keys", [])}
        signed_in = login(self.a.url, email)
        require(signed_in.status == 200, f"login on {self.a.name} after rotation: expected 200, got {signed_in!r}")
        token = signed_in.json["session"]["access_token"]
        new_kid = jwt_header(token)["kid"]
        require(new_kid != old_kid, f"a token from {self.a.name} after rotation still has kid {old_kid}")
        require({old_kid, new_kid} <= published, "the JWKS after rotation does not list both the old and the new key")
        # Before the other nodes see a token of the new key: do their JWKS list it already? (For
        # the report: an offline verifier fetching the JWKS through the load balancer sees that.)
        early = []
        for node in self.cluster.nodes[1:3]:
            jwks = call(node.url, "GET", "/.well-known/jwks.json").json or {}
            if new_kid in {key.get("kid") for key in jwks.get("keys", [])}:
                early.append(node.name)
        accepted = {}
        pending = list(self.cluster.nodes[1:3])
        deadline = rotated_at + 40
        while pending and time.monotonic() < deadline:
            for node in list(pending):
                reply = call(node.url, "GET", "/v1/me", token=token)
                if reply.status == 200:
                    accepted[node.name] = time.monotonic() - rotated_at
                    pending.remove(node)
                else:
                    require(reply.status == 401,
                            f"GET /v1/me on {node.name} with a new-key token: expected 200 or 401, got {reply!r}")
            if pending:
                time.sleep(0.1)
        require(not pending, f"{', '.join(node.name for node in pending)} still refused a token signed by the new key "
                             f"40 s after rotation")
        slowest = max(accepted.values())
        require(slowest <= 35, f"nodes took {slowest:.1f} s to accept the new key (more than 35 s)")
        for node in self.cluster.nodes[1:3]:
            jwks = call(node.url, "GET", "/.well-known/jwks.json").json
            kids = {key.get("kid") for key in jwks.get("keys", [])}
            require(new_kid in kids, f"{node.name} accepts the new key but its JWKS does not list it")
        old = call(self.b.url, "GET", "/v1/me", token=account["session"]["access_token"])
        require(old.status == 200, f"a token of the retired key on {self.b.name}: expected 200, got {old!r}")
        times = ", ".join(f"{name} after {seconds:.2f} s" for name, seconds in sorted(accepted.items()))
        return (f"rotated on node 1; new-key token accepted by {times} (polled every 0.1 s); "
                f"JWKS listing the new kid right after rotation, before any new-key token reached them: "
                f"{', '.join(early) or 'neither node 2 nor node 3'}; "
                f"afterwards both publish it; retired-key tokens still accepted"), slowest

    # d. Credits never overspend across nodes.
    def credits(self):
        email, account = self.new_account(self.a, "credits")
        token = account["session"]["access_token"]
        user_id = account["user"]["id"]
        granted = self.settings["free_credits"]
        nodes = self.cluster.nodes
        attempts = 30
        barrier = threading.Barrier(attempts, timeout=20)

        def spend(index):
            node = nodes[index % len(nodes)]
            barrier.wait()
            try:
                return index, call(node.url, "POST", "/v1/credits/practice/spend",
                                   {"idempotency_key": f"spend-{index}", "action": "practice_saved_flow"}, token=token)
            except OSError as error:
                return index, error

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=attempts) as pool:
            results = list(pool.map(spend, range(attempts)))
        elapsed = time.monotonic() - started
        statuses = collections.Counter(
            (reply.status, reply.code) if isinstance(reply, Reply) else ("no answer", str(reply)) for _, reply in results)
        spent = [(index, reply) for index, reply in results
                 if isinstance(reply, Reply) and reply.status == 200 and (reply.json or {}).get("spent") == 1]
        refused = [(index, reply) for index, reply in results
                   if isinstance(reply, Reply) and reply.status == 403 and reply.code == "plan_required"
                   and ((reply.json["error"].get("details") or {}).get("reason_code") == "credits_exhausted")]
        require(len(spent) == granted and len(refused) == attempts - granted,
                f"{attempts} concurrent spends with {granted} credits: expected {granted} x 200 spent and "
                f"{attempts - granted} x 403 plan_required/credits_exhausted, got {dict(statuses)}")
        snapshot = call(self.c.url, "GET", "/v1/entitlements", token=token)
        require(snapshot.status == 200, f"GET /v1/entitlements: expected 200, got {snapshot!r}")
        practice = snapshot.json.get("credits", {}).get("practice", {})
        require(practice.get("remaining") == 0 and practice.get("granted") == granted,
                f"GET /v1/entitlements after the spends: expected practice remaining 0 of {granted}, got {practice}")
        # The same idempotency key on another node answers as before and spends nothing more.
        index, _ = spent[0]
        other = nodes[(index + 1) % len(nodes)]
        again = call(other.url, "POST", "/v1/credits/practice/spend",
                     {"idempotency_key": f"spend-{index}", "action": "practice_saved_flow"}, token=token)
        require(again.status == 200 and again.json.get("spent") == 1,
                f"a spent key repeated on {other.name}: expected 200 spent 1, got {again!r}")
        rows = self.cluster.postgres.query(
            f"SELECT count(*), coalesce(sum(amount), 0) FROM credit_ledger WHERE user_id = '{user_id}'")
        require(rows == [[str(granted), str(granted)]], f"credit_ledger rows for the account: {rows}")
        by_node = collections.Counter(nodes[index % len(nodes)].name for index, _ in spent)
        return (f"{attempts} concurrent spends over 3 nodes in {elapsed:.2f} s -> {len(spent)} x 200 "
                f"({', '.join(f'{name}: {n}' for name, n in sorted(by_node.items()))}), "
                f"{len(refused)} x 403 plan_required/credits_exhausted; snapshot practice 0/{granted}; "
                f"a repeated key on another node spends nothing; ledger has {granted} rows")

    # e. A node killed mid-load loses nothing acknowledged.
    def node_killed(self, victim):
        before = self.cluster.nginx.upstream_counts()
        duration, kill_after, workers = 6.0, 2.0, 6
        lock = threading.Lock()
        acknowledged, statuses, failures = [], collections.Counter(), []
        start = time.monotonic()
        stop_at = start + duration
        killed_at = [None]

        def worker(number):
            index = 0
            while time.monotonic() < stop_at:
                email = f"kill-{self.run_id}-{number}-{index}@example.com"
                index += 1
                try:
                    reply = signup(self.proxy, email)
                except OSError as error:
                    with lock:
                        failures.append(f"{email}: {error}")
                    continue
                with lock:
                    statuses[reply.status] += 1
                    if reply.status == 201:
                        acknowledged.append((email, time.monotonic()))
                    elif reply.status >= 500 and reply.status not in (502, 503):
                        failures.append(f"{email}: {reply!r}")

        threads = [threading.Thread(target=worker, args=(number,)) for number in range(workers)]
        for thread in threads:
            thread.start()
        time.sleep(max(0.0, start + kill_after - time.monotonic()))
        victim.process.kill()  # SIGKILL
        killed_at[0] = time.monotonic()
        for thread in threads:
            thread.join()
        victim.process.wait(10)
        require(victim.process.returncode == -signal.SIGKILL, f"{victim.name} ended with {victim.process.returncode}")
        require(not failures, f"answers that are neither 2xx/4xx nor 502/503 during the kill: {failures[:5]}")
        emails = [email for email, _ in acknowledged]
        after_kill = sum(1 for _, at in acknowledged if at > killed_at[0])
        require(len(emails) >= 10, f"only {len(emails)} sign-ups were acknowledged: the load did not run")
        require(after_kill > 0, "no sign-up was acknowledged after the node was killed")
        require(statuses[201] == len(emails), "counting error")
        after = self.cluster.nginx.upstream_counts()

        # Every acknowledged account logs in through nginx (the surviving nodes).
        def check_login(email):
            try:
                return email, login(self.proxy, email)
            except OSError as error:
                return email, error

        with ThreadPoolExecutor(max_workers=workers) as pool:
            logins = list(pool.map(check_login, emails))
        bad = [(email, reply) for email, reply in logins if not (isinstance(reply, Reply) and reply.status == 200)]
        require(not bad, f"{len(bad)} acknowledged sign-ups cannot log in, e.g. {bad[:3]}")

        duplicates = self.cluster.postgres.query(
            "SELECT email_normalized, count(*) FROM users GROUP BY 1 HAVING count(*) > 1")
        require(not duplicates, f"duplicate users rows: {duplicates[:5]}")
        stored = {row[0] for row in self.cluster.postgres.query(
            f"SELECT email_normalized FROM users WHERE email_normalized LIKE 'kill-{self.run_id}-%'")}
        missing = [email for email in emails if email not in stored]
        require(not missing, f"{len(missing)} acknowledged sign-ups have no users row, e.g. {missing[:3]}")

        spread = []
        for node in self.cluster.nodes:
            address = f"127.0.0.1:{node.port}"
            spread.append(f"{node.name} {after[address] - before[address]}")
        others = ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items()) if status != 201) or "none"
        return (f"{workers} threads signed up through nginx for {duration:.0f} s, {victim.name} SIGKILLed at "
                f"{killed_at[0] - start:.1f} s; {len(emails)} acknowledged ({after_kill} after the kill), other answers: "
                f"{others}; all {len(emails)} log in; {len(stored) - len(emails)} unacknowledged rows; no duplicate rows; "
                f"nginx upstream attempts during the load: {', '.join(spread)}")

    # f. The client address through nginx.
    def client_address(self):
        email = self.email("forwarded")
        reply = signup(self.proxy, email, headers={"X-Forwarded-For": "203.0.113.7"})
        require(reply.status == 201, f"sign-up through nginx: expected 201, got {reply!r}")
        user_id = reply.json["user"]["id"]
        audit = call(self.a.url, "GET", f"/admin/v1/audit?user_id={user_id}", token=self.cluster.admin_key)
        require(audit.status == 200, f"GET /admin/v1/audit: expected 200, got {audit!r}")
        rows = [row for row in audit.json.get("events", []) if row.get("event") == "signup"]
        require(rows, f"no signup audit row: {audit!r}")
        address = rows[0].get("ip_address")
        require(address == "203.0.113.7",
                f"the sign-up's client address through nginx (X-Forwarded-For: 203.0.113.7, nginx trusted): got {address}")
        return "X-Forwarded-For 203.0.113.7 through nginx (GATEHOUSE_TRUSTED_PROXIES=127.0.0.1) -> audit ip_address 203.0.113.7"

    # g-j: limits attacked by requests released together over the three nodes.
    def burst(self, count, method, path, body=None, headers=None):
        """`count` requests released together with the last-byte technique, round robin over the
        nodes' own ports (not nginx), so that the three nodes really work at once. `body` may be
        a function of the request's index."""
        nodes = self.cluster.nodes
        requests = [("127.0.0.1", nodes[index % len(nodes)].port, method, path,
                     body(index) if callable(body) else body, headers)
                    for index in range(count)]
        started = time.monotonic()
        replies = last_byte_burst(requests)
        return replies, time.monotonic() - started

    def magic_code(self, email, seconds=20):
        """The 6-digit code of the newest magic link mailed to `email`, from the outbox (the mail
        worker composes it shortly after the request; only the code's hash is kept elsewhere)."""
        deadline = time.monotonic() + seconds
        while True:
            # On one line: psql's unaligned output would split the body's lines into rows.
            rows = self.cluster.postgres.query(
                f"SELECT translate(text_body, E'\\r\\n\\t', '   ') FROM outbox WHERE kind = 'magic_link' "
                f"AND recipient = '{email}' AND text_body IS NOT NULL ORDER BY created_at DESC LIMIT 1")
            if rows:
                text = " ".join(rows[0])
                # The code stands alone ("... in the app: 123456"); the link's token never does.
                codes = set(re.findall(r"(?:^|\s)(\d{6})(?=\s|$)", text))
                require(len(codes) == 1, f"expected one 6-digit code in the magic-link mail to {email}: {text[:500]!r}")
                return codes.pop()
            require(time.monotonic() < deadline, f"no magic-link mail to {email} composed within {seconds} s")
            time.sleep(0.1)

    # g. Magic-link code guesses released together over the nodes (finding 1).
    def magic_code_race(self):
        limit = self.settings["magic_code_attempts"]
        email = self.email("magic")
        requested = call(self.a.url, "POST", "/v1/auth/magic-link", {"email": email})
        require(requested.status == 202, f"POST /v1/auth/magic-link on {self.a.name}: expected 202, got {requested!r}")
        code = self.magic_code(email)
        wrong = [guess for guess in (f"{n:06d}" for n in range(61)) if guess != code][:60]
        replies, elapsed = self.burst(len(wrong), "POST", "/v1/auth/magic-link/verify",
                                      lambda index: {"email": email, "code": wrong[index]})
        signed_in = [reply for reply in replies if reply.status == 200]
        require(not signed_in, f"{len(wrong)} wrong codes released together: {len(signed_in)} answered 200 "
                               f"({tally(replies)})")
        unexpected = [reply for reply in replies
                      if not (reply.status == 400 and reply.code in ("token_invalid", "code_exhausted"))]
        require(not unexpected, f"{len(wrong)} wrong codes released together: expected only 400 token_invalid or "
                                f"code_exhausted, got {tally(replies)}, e.g. {unexpected[:2]}")
        compared = sum(1 for reply in replies if reply.code == "token_invalid")
        require(compared <= limit - 1, f"{compared} wrong codes answered token_invalid (attempts left) with a limit of "
                                       f"{limit} attempts ({tally(replies)})")
        rows = self.cluster.postgres.query(
            f"SELECT code_attempts FROM email_tokens WHERE purpose = 'magic_link' AND email_normalized = '{email}' "
            f"ORDER BY created_at DESC LIMIT 1")
        require(rows == [[str(limit)]],
                f"code_attempts of the magic link after {len(wrong)} wrong codes released together: expected "
                f"{limit}, got {rows} (answers: {tally(replies)})")
        right = call(self.b.url, "POST", "/v1/auth/magic-link/verify", {"email": email, "code": code})
        require(right.status == 400 and right.code == "code_exhausted",
                f"the right code on {self.b.name} after the wrong ones: expected 400 code_exhausted, got {right!r}")
        return (f"{len(wrong)} wrong codes released together over nodes 1-3 in {elapsed:.2f} s (final bytes in "
                f"{replies.release_seconds * 1000:.1f} ms) -> {tally(replies)}; code_attempts {limit}; "
                f"the right code then -> 400 code_exhausted")

    def sms_code(self, number, seconds=20):
        """The code of the newest SMS to `number`, from the outbox (its last line is `@host #code`)."""
        deadline = time.monotonic() + seconds
        while True:
            rows = self.cluster.postgres.query(
                f"SELECT translate(text_body, E'\\r\\n\\t', '   ') FROM outbox WHERE kind = 'sms' "
                f"AND recipient = '{number}' AND text_body IS NOT NULL ORDER BY created_at DESC LIMIT 1")
            if rows:
                text = " ".join(rows[0])
                found = re.findall(r"#(\d{6})\s*$", text)
                require(len(found) == 1, f"expected the one-time-code line in the SMS to {number}: {text[:300]!r}")
                return found[0]
            require(time.monotonic() < deadline, f"no SMS to {number} queued within {seconds} s")
            time.sleep(0.1)

    @staticmethod
    def new_number():
        return "+1415555" + f"{secrets.randbelow(10000):04d}"

    # n. Wrong SMS codes released together over the nodes (issue 43).
    def sms_code_race(self):
        limit = 5
        number = self.new_number()
        sent = call(self.a.url, "POST", "/v1/auth/phone/code", {"phone": number})
        require(sent.status == 202, f"POST /v1/auth/phone/code on {self.a.name}: expected 202, got {sent!r}")
        code = self.sms_code(number)
        wrong = [guess for guess in (f"{n:06d}" for n in range(61)) if guess != code][:60]
        replies, elapsed = self.burst(len(wrong), "POST", "/v1/auth/phone/verify",
                                      lambda index: {"phone": number, "code": wrong[index]})
        # By number alone every wrong guess answers the same, whether or not a code is live (issue
        # 58): 400 invalid_code, no tries left said; the store counts what was compared.
        unexpected = [reply for reply in replies if not (reply.status == 400 and reply.code == "invalid_code")]
        require(not unexpected, f"{len(wrong)} wrong SMS codes released together: expected only 400 invalid_code, "
                                f"got {tally(replies)}, e.g. {unexpected[:2]}")
        rows = self.cluster.postgres.query(
            f"SELECT attempts FROM phone_codes WHERE phone = '{number}' ORDER BY created_at DESC LIMIT 1")
        require(rows == [[str(limit)]], f"attempts of the SMS code after {len(wrong)} wrong codes: expected {limit}, got {rows}")
        right = call(self.b.url, "POST", "/v1/auth/phone/verify", {"phone": number, "code": code})
        require(right.status == 400 and right.code == "invalid_code",
                f"the right SMS code on {self.b.name} after the wrong ones: expected 400 invalid_code (dead), got {right!r}")
        return (f"{len(wrong)} wrong codes released together over nodes 1-3 in {elapsed:.2f} s -> {tally(replies)}; "
                f"attempts {limit}; the right code then -> 400 invalid_code")

    # o. Sends to one number released together over the nodes (issue 43).
    def sms_send_race(self):
        number = self.new_number()
        # Not across a minute's boundary: the per-number limit counts in clock-aligned minutes.
        while time.time() % 60 > 55:
            time.sleep(0.2)
        replies, elapsed = self.burst(30, "POST", "/v1/auth/phone/code", {"phone": number})
        accepted = sum(1 for reply in replies if reply.status == 202)
        limited = sum(1 for reply in replies if reply.status == 429 and reply.code == "rate_limited")
        require(accepted == 1 and limited == 29,
                f"30 sends to one number released together: expected 1 x 202 and 29 x 429 rate_limited, got {tally(replies)}")
        time.sleep(0.3)
        rows = self.cluster.postgres.query(f"SELECT count(*) FROM outbox WHERE kind = 'sms' AND recipient = '{number}'")
        require(rows == [["1"]], f"SMS queued for the number after 30 sends released together: expected 1, got {rows}")
        return f"30 sends released together over nodes 1-3 in {elapsed:.2f} s -> {tally(replies)}; 1 SMS queued"

    @staticmethod
    def next_minute():
        """Waits into the next clock minute: the per-number limit counts one send a minute."""
        time.sleep(60.5 - time.time() % 60)

    # t. The phone pre-hijack through resend, over the nodes (issue 58, finding 1).
    def phone_takeover(self):
        number = self.new_number()
        password = f"attacker's passphrase {self.run_id}"
        # Each party from an address of its own (the nodes believe loopback's X-Forwarded-For):
        # the checks before spent loopback's own SMS sends for the hour.
        attacker, holder = {**GOTRUE, "X-Forwarded-For": "198.51.100.7"}, {"X-Forwarded-For": "192.0.2.9"}
        made = call(self.a.url, "POST", "/auth/v1/signup", {"phone": number, "password": password}, headers=attacker)
        require(made.status == 200, f"a phone sign-up with a password on {self.a.name}: expected 200, got {made!r}")
        account = made.json.get("id") or (made.json.get("user") or {}).get("id")
        # The account is made, and its code texted, by the sign-up's job: the text says it is done.
        self.sms_code(number)
        self.next_minute()
        sent = call(self.b.url, "POST", "/v1/auth/phone/code", {"phone": number}, headers=holder)
        require(sent.status == 202, f"the holder's code on {self.b.name}: expected 202, got {sent!r}")
        self.next_minute()
        resent = call(self.c.url, "POST", "/auth/v1/resend", {"type": "sms", "phone": number}, headers=attacker)
        require(resent.status == 200, f"the attacker's resend on {self.c.name}: expected 200, got {resent!r}")
        signed = call(self.a.url, "POST", "/v1/auth/phone/verify", {"phone": number, "code": self.sms_code(number)})
        require(signed.status == 200 and signed.json["user"]["id"] == account,
                f"the holder typing the newest SMS on {self.a.name}: expected 200 on the number's account, got {signed!r}")
        grant = call(self.b.url, "POST", "/auth/v1/token?grant_type=password", {"phone": number, "password": password}, headers=GOTRUE)
        require(grant.status == 400, f"the attacker's password on {self.b.name} after the holder's proof: expected 400, got {grant!r}")
        return (f"sign-up with a password on node 1, the holder's code on node 2, the attacker's resend on node 3; the newest "
                f"SMS signs the holder in on node 1 and the password is refused on node 2 ({grant.status})")

    # u. Two accounts' changes to one number, over the nodes (issue 58, finding 2).
    def phone_change_hijack(self):
        number = self.new_number()
        victim_id, victim = self.magic_sign_in("change-victim")
        _, attacker = self.magic_sign_in("change-attacker")
        asked = call(self.a.url, "PUT", "/auth/v1/user", {"phone": number}, token=victim, headers={**GOTRUE, "X-Forwarded-For": "192.0.2.10"})
        require(asked.status == 200, f"the victim's change on {self.a.name}: expected 200, got {asked!r}")
        victims = self.sms_code(number)
        self.next_minute()
        asked = call(self.b.url, "PUT", "/auth/v1/user", {"phone": number}, token=attacker, headers={**GOTRUE, "X-Forwarded-For": "198.51.100.8"})
        require(asked.status == 200, f"the attacker's change on {self.b.name}: expected 200, got {asked!r}")
        attackers = self.sms_code(number)
        typed = call(self.c.url, "POST", "/auth/v1/verify", {"type": "phone_change", "phone": number, "token": attackers}, headers=GOTRUE)
        require(typed.status != 200, f"the newest SMS typed without a session on {self.c.name}: expected a refusal, got {typed!r}")
        confirmed = call(self.a.url, "POST", "/auth/v1/verify", {"type": "phone_change", "phone": number, "token": victims},
                         token=victim, headers=GOTRUE)
        require(confirmed.status == 200 and confirmed.json["user"]["id"] == victim_id,
                f"the victim's own code with the victim's session on {self.a.name}: expected 200, got {confirmed!r}")
        mine = call(self.b.url, "GET", "/v1/me", token=attacker)
        require(mine.status == 200 and mine.json["user"].get("phone") is None,
                f"the attacker's account after the victim's proof: expected no number, got {mine!r}")
        return (f"changes by two accounts on nodes 1 and 2; the attacker's SMS typed without a session on node 3 -> "
                f"{typed.status}; the victim's own code with its session on node 1 -> 200, the attacker's account has no number")

    def magic_sign_in(self, label):
        """A new account signed in with a magic link's code (hannah has no passwords): (user id, access token)."""
        email = self.email(label)
        sent = call(self.a.url, "POST", "/v1/auth/magic-link", {"email": email})
        require(sent.status == 202, f"POST /v1/auth/magic-link on {self.a.name}: expected 202, got {sent!r}")
        reply = call(self.b.url, "POST", "/v1/auth/magic-link/verify", {"email": email, "code": self.magic_code(email)})
        require(reply.status == 200, f"the magic-link code on {self.b.name}: expected 200, got {reply!r}")
        return reply.json["user"]["id"], reply.json["session"]["access_token"]

    def events_of(self, user_id):
        """Every event of `user_id` in GET /admin/v1/events, page by page (oldest first)."""
        found, cursor = [], None
        while True:
            path = "/admin/v1/events?limit=1000" + (f"&after={cursor}" if cursor else "")
            reply = call(self.proxy, "GET", path, token=self.cluster.admin_key)
            require(reply.status == 200, f"GET {path}: {reply!r}")
            events = reply.json["events"]
            found += [event for event in events if event.get("user_id") == user_id]
            if not events:
                return found
            cursor = reply.json["next_cursor"]

    @staticmethod
    def checkout_body():
        return {"price": STRIPE_PRICE, "success_url": f"{STRIPE_ORIGIN}/paid", "cancel_url": f"{STRIPE_ORIGIN}/cancelled"}

    # p. One signed Stripe event delivered 20 times at once over the nodes (issue 44).
    def stripe_webhook_race(self, stripe):
        user_id, token = self.magic_sign_in("stripehook")
        checkout = call(self.c.url, "POST", "/v1/purchases/stripe/checkout", self.checkout_body(), token=token)
        require(checkout.status == 200, f"POST /v1/purchases/stripe/checkout on {self.c.name}: expected 200, got {checkout!r}")
        session = checkout.json["session_id"]
        now = int(time.time())
        stripe.control("POST", f"checkout/{session}/complete",
                       {"status": "active", "period_start": now, "period_end": now + 30 * 86400})
        event = stripe.control("POST", "events", {"type": "checkout.session.completed", "session": session})
        signed = stripe.control("POST", "sign", {"event": event["id"]})
        deliveries = 20
        replies, elapsed = self.burst(deliveries, "POST", "/webhooks/stripe", signed["payload"].encode(),
                                      headers={"Stripe-Signature": signed["header"]})
        require(all(reply.status == 200 for reply in replies),
                f"{deliveries} deliveries of one event released together: expected {deliveries} x 200, got {tally(replies)}")
        events = collections.Counter(event["type"] for event in self.events_of(user_id))
        require(events["purchase.succeeded"] == 1 and events["plan.changed"] == 1,
                f"events of the account after {deliveries} deliveries of {event['id']}: expected one purchase.succeeded "
                f"and one plan.changed, got {dict(events)}")
        snapshot = call(self.a.url, "GET", "/v1/entitlements", token=token)
        require(snapshot.status == 200 and snapshot.json.get("plan_state") == "pro",
                f"GET /v1/entitlements on {self.a.name} after the checkout's event: expected plan_state pro, got {snapshot!r}")
        recorded = self.cluster.postgres.query(
            f"SELECT outcome FROM ledger_events WHERE source = 'stripe' AND event_id = '{event['id']}'")
        require(recorded == [["applied"]], f"ledger_events rows for {event['id']}: expected one applied, got {recorded}")
        rejected = stripe.control("GET", "rejections")["rejections"]
        require(not rejected, f"the Stripe stand-in rejected {len(rejected)} request(s): {rejected[:3]}")
        return (f"{deliveries} deliveries of one signed checkout.session.completed released together over nodes 1-3 "
                f"in {elapsed:.2f} s (final bytes in {replies.release_seconds * 1000:.1f} ms) -> {tally(replies)}; "
                f"1 purchase.succeeded, 1 plan.changed, plan_state pro, one ledger_events row (applied)")

    # q. An account's first checkouts released together over the nodes make one customer (issue 44).
    def stripe_checkout_race(self, stripe):
        user_id, token = self.magic_sign_in("stripecheckout")
        before = len(stripe.control("GET", "requests")["requests"])
        attempts = 10
        replies, elapsed = self.burst(attempts, "POST", "/v1/purchases/stripe/checkout", self.checkout_body(),
                                      headers={"Authorization": f"Bearer {token}"})
        require(all(reply.status == 200 for reply in replies),
                f"{attempts} first checkouts released together: expected {attempts} x 200, got {tally(replies)}, "
                f"e.g. {[reply for reply in replies if reply.status != 200][:2]}")
        made = stripe.control("GET", "requests")["requests"][before:]
        sessions = [request for request in made
                    if (request["method"], request["path"], request["status"]) == ("POST", "/v1/checkout/sessions", 200)]
        named = {request["form"].get("customer") for request in sessions}
        require(len(sessions) == attempts and len(named) == 1 and None not in named,
                f"{attempts} first checkouts: expected {attempts} accepted checkout sessions naming one customer, got "
                f"{len(sessions)} naming {sorted(map(str, named))}")
        creates = [request for request in made if request["path"] == "/v1/customers"]
        keys = {request["idempotency_key"] for request in creates}
        created = [request for request in creates if request["status"] == 200 and not request["replayed"]]
        require(keys == {f"gatehouse-customer-{user_id}"} and len(created) == 1,
                f"customer creations for the account: expected one under gatehouse-customer-{user_id}, got "
                f"{len(created)} made, keys {sorted(map(str, keys))}")
        stored = self.cluster.postgres.query(f"SELECT customer_id FROM stripe_customers WHERE user_id = '{user_id}'")
        require(stored == [[next(iter(named))]], f"stripe_customers rows for the account: {stored}, the sessions name {named}")
        rejected = stripe.control("GET", "rejections")["rejections"]
        require(not rejected, f"the Stripe stand-in rejected {len(rejected)} request(s): {rejected[:3]}")
        answers = collections.Counter(f"{request['status']}{' replayed' if request['replayed'] else ''}" for request in creates)
        return (f"{attempts} first checkouts released together over nodes 1-3 in {elapsed:.2f} s -> {tally(replies)}; "
                f"{len(sessions)} checkout sessions at the stand-in, all for {next(iter(named))}; POST /v1/customers "
                f"{', '.join(f'{n} x {answer}' for answer, n in sorted(answers.items()))}; "
                f"one stripe_customers row; no request rejected")

    # v. One Google Play purchase token claimed by two accounts released together over the nodes (issue 59).
    def google_play_claim_race(self, play):
        accounts = [self.magic_sign_in("playclaim1"), self.magic_sign_in("playclaim2")]
        purchase = play.control("POST", "purchases", {"product_id": GOOGLE_PLAY_PRODUCT, "expiry": int(time.time()) + 30 * 86400})
        token = purchase["purchase"]["token"]
        body = {"purchase_token": token, "product_id": GOOGLE_PLAY_PRODUCT}
        nodes = self.cluster.nodes
        # Three claims per account, round robin over the nodes: each node works on both accounts' claims.
        requests = [("127.0.0.1", nodes[index % len(nodes)].port, "POST", "/v1/purchases/google-play", body,
                     {"Authorization": f"Bearer {accounts[index % 2][1]}"}) for index in range(6)]
        started = time.monotonic()
        replies = last_byte_burst(requests)
        elapsed = time.monotonic() - started
        winners = {index % 2 for index, reply in enumerate(replies) if reply.status == 200}
        require(sorted(reply.status for reply in replies) == [200, 200, 200, 409, 409, 409] and len(winners) == 1,
                f"one token claimed by two accounts, three times each, over nodes 1-3: expected one account's 3 x 200 and "
                f"the other's 3 x 409, got {[(index % 2, reply.status) for index, reply in enumerate(replies)]}")
        winner = accounts[winners.pop()][0]
        stored = self.cluster.postgres.query(f"SELECT user_id FROM google_play_purchases WHERE purchase_token = '{token}'")
        require(stored == [[winner]], f"google_play_purchases' owner of the token: expected {winner}, got {stored}")
        violations = play.control("GET", "violations")["violations"]
        require(not violations, f"the Play stand-in saw {len(violations)} undescribed request(s): {violations[:3]}")
        return (f"one purchase token claimed by two accounts, 3 x each, released together over nodes 1-3 in {elapsed:.2f} s "
                f"-> {tally(replies)}; one owner stored; no undescribed call")

    def provider_code(self, node, client_id, email, consent):
        """A code from the provider's pages on `node`'s own address (cookies are per host:port):
        GET /oauth/authorize, the sign-in form with the password, then Allow on the consent page
        when `consent` (else the sign-in must lead straight back to the client). Returns the code,
        its PKCE verifier and the pages seen."""
        verifier, challenge = pkce_pair()
        query = urllib.parse.urlencode({
            "response_type": "code", "client_id": client_id, "redirect_uri": OIDC_REDIRECT, "scope": " ".join(OIDC_SCOPES),
            "state": "s", "nonce": "n", "code_challenge": challenge, "code_challenge_method": "S256"},
            quote_via=urllib.parse.quote)
        browser = ProviderBrowser(node.url)
        page = browser.get(f"/oauth/authorize?{query}")
        seen = [ProviderBrowser.state(page)]
        require(page.status == 200 and seen[-1] == "sign-in",
                f"GET /oauth/authorize on {node.name}: expected 200 with the sign-in page, got {ProviderBrowser.describe(page)}")
        page = browser.post("/oauth/authorize", {**ProviderBrowser.hidden(page), "email": email, "password": PASSWORD})
        if consent:
            seen.append(ProviderBrowser.state(page))
            require(page.status == 200 and seen[-1] == "consent",
                    f"the sign-in form on {node.name}: expected 200 with the consent page, got {ProviderBrowser.describe(page)}")
            page = browser.post("/oauth/authorize", {**ProviderBrowser.hidden(page), "decision": "allow"})
            what = "Allow on the consent page"
        else:
            what = "the sign-in form (consent given before)"
        require(page.status == 303, f"{what} on {node.name}: expected 303 back to the client, got {ProviderBrowser.describe(page)}")
        target, back = ProviderBrowser.location(page)
        require(target == OIDC_REDIRECT and back.get("state") == "s" and back.get("iss") == self.proxy and back.get("code"),
                f"{what} on {node.name}: expected {OIDC_REDIRECT}?code=..&state=s&iss={self.proxy}, got {page.header('Location')}")
        return back["code"], verifier, seen

    # r. The OpenID provider (issue 45): one authorization code released 20 times together over
    # the three nodes and nginx gives at most one set of tokens, and a second use revokes it.
    def oauth_code_race(self):
        registered = call(self.a.url, "POST", "/admin/v1/oauth/clients",
                          {"name": "cluster", "redirect_uris": [OIDC_REDIRECT], "scopes": OIDC_SCOPES, "public": False},
                          token=self.cluster.admin_key)
        require(registered.status == 201 and (registered.json or {}).get("client_id") and registered.json.get("client_secret"),
                f"POST /admin/v1/oauth/clients on {self.a.name}: expected 201 with client_id and client_secret, got {registered!r}")
        client_id, secret = registered.json["client_id"], registered.json["client_secret"]
        credentials = {"Content-Type": FORM, **basic(client_id, secret)}
        email, account = self.new_account(self.c, "oidc")
        user_id = account["user"]["id"]

        code, verifier, pages = self.provider_code(self.a, client_id, email, consent=True)
        body = form({"grant_type": "authorization_code", "code": code, "redirect_uri": OIDC_REDIRECT, "code_verifier": verifier})
        targets = [(node.port, node.name) for node in self.cluster.nodes] + [(self.cluster.nginx.port, "nginx")]
        copies = 20
        where = [targets[index % len(targets)] for index in range(copies)]
        started = time.monotonic()
        replies = last_byte_burst([("127.0.0.1", port, "POST", "/oauth/token", body, credentials) for port, _ in where])
        answered = time.monotonic()
        elapsed = answered - started
        issued = [(name, reply) for (_, name), reply in zip(where, replies) if reply.status == 200]
        refused = [reply for reply in replies if reply.status == 400 and reply.code == "invalid_grant"]
        require(len(issued) <= 1 and len(issued) + len(refused) == copies,
                f"{copies} copies of one code released together over nodes 1-3 and nginx: expected at most one 200 and "
                f"400 invalid_grant for the rest, got {tally(replies)}, e.g. "
                f"{[reply for reply in replies if reply.status not in (200, 400)][:2] or [reply for reply in replies if reply.status == 200][:2]}")
        reasons = collections.Counter((reply.json or {}).get("error_description") for reply in refused)

        if issued:
            winner, tokens = issued[0][0], issued[0][1].json
            require(all(tokens.get(key) for key in ("access_token", "refresh_token", "id_token")),
                    f"the 200 ({winner}) lacks access_token, refresh_token or id_token: {issued[0][1]!r}")
            claims = jwt_claims(tokens["id_token"])
            require(claims.get("nonce") == "n" and claims.get("aud") == client_id and claims.get("sub") == user_id
                    and claims.get("iss") == self.proxy,
                    f"the ID token of the 200 ({winner}): expected nonce n, aud {client_id}, sub {user_id}, iss {self.proxy}, "
                    f"got {claims}")
            # Every node (and nginx) refuses the winner's access token within 2 s of the answers,
            # and never serves it again once it has refused it.
            refused_after = {}
            pending = [(node.url, node.name) for node in self.cluster.nodes] + [(self.proxy, "nginx")]
            polls = collections.defaultdict(list)
            deadline = answered + 2.0
            while pending and time.monotonic() < deadline:
                for base, name in list(pending):
                    began = time.monotonic()
                    reply = call(base, "GET", "/oauth/userinfo", token=tokens["access_token"])
                    polls[name].append(reply.status)
                    require(reply.status in (200, 401),
                            f"GET /oauth/userinfo on {name} with the revoked code's access token: expected 200 or 401, got {reply!r}")
                    if reply.status == 401:
                        require(reply.code == "invalid_token", f"GET /oauth/userinfo on {name}: 401 without invalid_token: {reply!r}")
                        refused_after.setdefault(name, began - answered)
                        if polls[name][-3:] == [401, 401, 401]:
                            pending.remove((base, name))
                    else:
                        require(name not in refused_after, f"{name} served the revoked access token again after refusing it ({polls[name]})")
                if pending:
                    time.sleep(0.05)
            require(not pending, f"{', '.join(name for _, name in pending)} still served the access token of a code used twice "
                                 f"2 s after the answers (statuses {dict(polls)})")
            again = call(self.c.url, "POST", "/oauth/token",
                         form({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}), headers=credentials)
            require(again.status == 400 and again.code == "invalid_grant",
                    f"the refresh token of a code used twice on {self.c.name}: expected 400 invalid_grant, got {again!r}")
            audit = call(self.b.url, "GET", f"/admin/v1/audit?user_id={user_id}", token=self.cluster.admin_key)
            require(audit.status == 200, f"GET /admin/v1/audit: expected 200, got {audit!r}")
            reuse = [row for row in audit.json.get("events", []) if row.get("event") == "oauth_code_reuse"]
            require(reuse and all(row.get("outcome") == "session_revoked" for row in reuse),
                    f"audit of the account after the code was used twice: expected oauth_code_reuse session_revoked, got "
                    f"{[(row.get('event'), row.get('outcome')) for row in audit.json.get('events', [])]}")
            slowest = max(refused_after.values())
            outcome = (f"the 200 ({winner}): ID token nonce/aud/sub/iss right; its access token -> 401 invalid_token at "
                       f"/oauth/userinfo on nodes 1-3 and nginx from {max(0.0, slowest) * 1000:.0f} ms after the answers "
                       f"({sum(len(rows) for rows in polls.values())} polls, none served after a refusal); its refresh token "
                       f"on node 3 -> 400 invalid_grant; audit oauth_code_reuse session_revoked x {len(reuse)}")
        else:
            outcome = "no copy got tokens"
        late = call(self.proxy, "POST", "/oauth/token", body, headers=credentials)
        require(late.status == 400 and late.code == "invalid_grant",
                f"the code once more through nginx after the burst: expected 400 invalid_grant, got {late!r}")

        # The consent given on node 1 holds on node 2: a new sign-in there goes straight back
        # with a code, which works, and its tokens are served by every node.
        second, second_verifier, seen = self.provider_code(self.b, client_id, email, consent=False)
        exchanged = call(self.proxy, "POST", "/oauth/token",
                         form({"grant_type": "authorization_code", "code": second, "redirect_uri": OIDC_REDIRECT,
                               "code_verifier": second_verifier}), headers=credentials)
        require(exchanged.status == 200 and exchanged.json.get("refresh_token"),
                f"the code from node 2 exchanged through nginx: expected 200 with a refresh token, got {exchanged!r}")
        for node in self.cluster.nodes:
            info = call(node.url, "GET", "/oauth/userinfo", token=exchanged.json["access_token"])
            require(info.status == 200 and info.json.get("sub") == user_id and info.json.get("email") == email,
                    f"GET /oauth/userinfo on {node.name} with the second code's access token: expected 200 with sub and email, "
                    f"got {info!r}")
        rotated = call(self.c.url, "POST", "/oauth/token",
                       form({"grant_type": "refresh_token", "refresh_token": exchanged.json["refresh_token"]}), headers=credentials)
        require(rotated.status == 200 and rotated.json.get("refresh_token") not in (None, exchanged.json["refresh_token"]),
                f"the second code's refresh token on {self.c.name}: expected 200 with a new refresh token, got {rotated!r}")
        return (f"confidential client registered on node 1; code through the pages on node 1 ({' -> '.join(pages)} -> 303); "
                f"{copies} copies of the token request released together over nodes 1-3 and nginx ({copies // len(targets)} each) "
                f"in {elapsed:.2f} s (final bytes in {replies.release_seconds * 1000:.1f} ms) -> {tally(replies)} "
                f"({'; '.join(f'{n} x {text!r}' for text, n in sorted(reasons.items(), key=lambda item: str(item[0])))}); "
                f"{outcome}; the code once more through nginx -> 400 invalid_grant; consent remembered on node 2 "
                f"({' -> '.join(seen)} -> 303 with a code), its tokens served by nodes 1-3, refresh on node 3 rotated")

    # h. Wrong passwords released together over the nodes (finding 2).
    def login_lockout_race(self):
        threshold = self.settings["lockout_after"]
        email, _ = self.new_account(self.b, "lockrace")
        attempts = 45
        replies, elapsed = self.burst(attempts, "POST", "/v1/auth/login",
                                      {"email": email, "password": "not the password at all"})
        failed = sum(1 for reply in replies if reply.status == 401 and reply.code == "invalid_credentials")
        locked = sum(1 for reply in replies if reply.status == 429 and reply.code == "too_many_attempts")
        require(failed == threshold and locked == attempts - threshold,
                f"{attempts} wrong passwords released together: expected {threshold} x 401 invalid_credentials and "
                f"{attempts - threshold} x 429 too_many_attempts, got {tally(replies)}")
        right = login(self.c.url, email)
        require(right.status == 429 and right.code == "too_many_attempts",
                f"the right password on {self.c.name} after the burst: expected 429 too_many_attempts, got {right!r}")
        return (f"{attempts} wrong passwords released together over nodes 1-3 in {elapsed:.2f} s (final bytes in "
                f"{replies.release_seconds * 1000:.1f} ms) -> {tally(replies)}; the right password then -> 429 "
                f"too_many_attempts (Retry-After {right.header('Retry-After')} s)")

    # m. A check holds until its write (issue 40): requests authenticated on node 1, their bodies
    # held back while the owner signs out everywhere on node 2, then completed: every one 401,
    # nothing written. Then password changes from two sessions on nodes 1 and 3 released with the
    # owner's on node 2: the owner's stands.
    def held_requests_and_password_race(self):
        email, account = self.new_account(self.a, "held")
        stolen = account["session"]["access_token"]
        owner = login(self.b.url, email)
        require(owner.status == 200, f"the owner's login on {self.b.name}: {owner!r}")
        bearer = {"Authorization": f"Bearer {stolen}"}
        held = [
            ("127.0.0.1", self.a.port, "POST", "/v1/auth/password/change",
             {"current_password": PASSWORD, "new_password": "the attacker's own password 9"}, bearer),
            ("127.0.0.1", self.a.port, "PATCH", "/v1/me", {"display_name": "Attacker"}, bearer),
            ("127.0.0.1", self.c.port, "POST", "/v1/auth/identities/email",
             {"email": self.email("attacker"), "password": "the attacker's own password 9"}, bearer),
        ]

        def sign_out_everywhere():
            reply = call(self.b.url, "POST", "/v1/auth/logout", {"scope": "global"}, token=owner.json["session"]["access_token"])
            require(reply.status == 204, f"the owner's global logout on {self.b.name}: {reply!r}")

        replies = last_byte_burst(held, meanwhile=sign_out_everywhere)
        require(all(reply.status == 401 for reply in replies),
                f"requests held past the owner's logout: expected 3 x 401, got {tally(replies)}")
        require(login(self.c.url, email).status == 200, "the owner's password no longer signs in after the held change")
        require(login(self.c.url, email, "the attacker's own password 9").status == 401, "the held change's password signs in")

        # The race: two other sessions change "old -> old" while the owner changes it.
        sessions = []
        for node in (self.b, self.a, self.c):
            reply = login(node.url, email)
            require(reply.status == 200, f"login on {node.name}: {reply!r}")
            sessions.append(reply.json["session"]["access_token"])
        new = "the owner's new password 2026"
        race = [("127.0.0.1", self.b.port, "POST", "/v1/auth/password/change",
                 {"current_password": PASSWORD, "new_password": new, "sign_out_other_sessions": True},
                 {"Authorization": f"Bearer {sessions[0]}"})]
        race += [("127.0.0.1", node.port, "POST", "/v1/auth/password/change",
                  {"current_password": PASSWORD, "new_password": PASSWORD}, {"Authorization": f"Bearer {token}"})
                 for node, token in ((self.a, sessions[1]), (self.c, sessions[2]))]
        answers = last_byte_burst(race)
        require(answers[0].status == 200, f"the owner's change on {self.b.name}: {answers[0]!r}")
        require(all(reply.status in (200, 401) for reply in answers[1:]), f"the other changes: {tally(answers[1:])}")
        require(login(self.a.url, email).status == 401, "the old password signs in again after the owner's change")
        require(login(self.a.url, email, new).status == 200, "the owner's new password does not sign in")
        return (f"3 requests held on nodes 1 and 3 past a global logout on node 2 -> {tally(replies)}; "
                f"the owner's change on node 2 released with 2 others on nodes 1 and 3 -> 200, the others "
                f"{tally(answers[1:])}; the owner's password stands")

    # k. A Gatehouse-held usage meter reserved across nodes (issue 19): the app backend's uses of
    # a Free account's share links, released together on the three nodes.
    def usage_meter_race(self):
        limit = self.settings["share_links_per_day"]
        email, account = self.new_account(self.a, "meter")
        user_id = account["user"]["id"]
        self.cluster.postgres.query(f"UPDATE users SET email_verified_at = 1700000000 WHERE id = '{user_id}'")
        attempts = 30
        replies, elapsed = self.burst(
            attempts, "POST", "/v1/usage/share_links", lambda index: {"user_id": user_id, "idempotency_key": f"use-{index}"},
            headers={"Authorization": f"Bearer {SERVICE_KEY}"})
        counted = sorted(reply.json.get("used") for reply in replies if reply.status == 200)
        refused = sum(1 for reply in replies if reply.status == 403 and reply.code == "plan_required"
                      and (reply.json["error"].get("details") or {}).get("reason_code") == "share_limit_reached")
        require(counted == list(range(1, limit + 1)) and refused == attempts - limit,
                f"{attempts} uses released together with a limit of {limit}: expected used 1..{limit} and "
                f"{attempts - limit} x 403 share_limit_reached, got {tally(replies)} (used {counted})")
        rows = self.cluster.postgres.query(f"SELECT used FROM usage_meters WHERE user_id = '{user_id}'")
        require(rows == [[str(limit)]], f"usage_meters rows for the account: {rows}")
        return (f"{attempts} uses released together over nodes 1-3 in {elapsed:.2f} s -> used {counted}, "
                f"{refused} x 403 share_limit_reached; one counter row holding {limit}")

    # i. Replays of an anonymous start's Idempotency-Key released together (finding 3).
    def anonymous_key_race(self):
        key = f"anon-{self.run_id}-{secrets.token_hex(8)}"
        first = call(self.a.url, "POST", "/v1/auth/anonymous", headers={"Idempotency-Key": key})
        require(first.status == 201, f"POST /v1/auth/anonymous on {self.a.name}: expected 201, got {first!r}")
        user_id = first.json["user"]["id"]
        token = first.json["session"]["access_token"]

        def users():
            return int(self.cluster.postgres.query("SELECT count(*) FROM users")[0][0])

        replays = 12
        before = users()
        replies, elapsed = self.burst(replays, "POST", "/v1/auth/anonymous", headers={"Idempotency-Key": key})
        after = users()
        others = [reply for reply in replies
                  if not (reply.status == 201 and (reply.json or {}).get("user", {}).get("id") == user_id)]
        require(not others, f"{replays} replays of the key released together: expected 201 with the first account "
                            f"every time, got {tally(replies)}, e.g. {others[:2]}")
        require(after == before, f"{replays} replays of the key released together made {after - before} accounts")

        upgraded = call(self.b.url, "POST", "/v1/auth/identities/email",
                        {"email": self.email("anonup"), "password": PASSWORD}, token=token)
        require(upgraded.status == 200,
                f"POST /v1/auth/identities/email on {self.b.name} for the anonymous account: expected 200, got {upgraded!r}")
        before = users()
        late, late_elapsed = self.burst(replays, "POST", "/v1/auth/anonymous", headers={"Idempotency-Key": key})
        made = users() - before
        leaked = [reply for reply in late if (reply.json or {}).get("user", {}).get("id") == user_id]
        require(not leaked, f"{replays} replays of the key after the upgrade released together: {len(leaked)} "
                            f"signed in to the upgraded account ({tally(late)})")
        broken = [reply for reply in late if reply.status >= 500]
        require(not broken, f"{replays} replays of the key after the upgrade: server errors {tally(late)}")
        fresh = {reply.json["user"]["id"] for reply in late if reply.status == 201}
        return (f"{replays} replays released together over nodes 1-3 in {elapsed:.2f} s -> {replays} x 201 the same "
                f"account, no new users row; after the upgrade {replays} replays in {late_elapsed:.2f} s -> "
                f"{tally(late)}, none the upgraded account ({len(fresh)} other account(s), {made} new users row(s))")

    # j. Verification resends released together over the nodes (finding 6).
    def resend_race(self):
        email, account = self.new_account(self.a, "resend")
        user_id = account["user"]["id"]
        token = account["session"]["access_token"]

        def tokens():
            return int(self.cluster.postgres.query(
                f"SELECT count(*) FROM email_tokens WHERE user_id = '{user_id}' AND purpose = 'verify_email'")[0][0])

        require(tokens() == 1, f"verification tokens after sign-up: expected 1, got {tokens()}")
        # The sign-up's mail as if sent long enough ago that one resend is due now.
        back = max(120, self.settings["resend_interval"] + 60)
        self.cluster.postgres.query(
            f"UPDATE email_tokens SET created_at = created_at - {back} "
            f"WHERE user_id = '{user_id}' AND purpose = 'verify_email'")
        attempts = 30
        replies, elapsed = self.burst(attempts, "POST", "/v1/auth/email/verification",
                                      headers={"Authorization": f"Bearer {token}"})
        sent = sum(1 for reply in replies if reply.status == 202)
        limited = sum(1 for reply in replies if reply.status == 429 and reply.code == "rate_limited")
        require(sent == 1 and limited == attempts - 1,
                f"{attempts} resends released together: expected 1 x 202 and {attempts - 1} x 429 rate_limited, "
                f"got {tally(replies)}")
        stored = tokens()
        require(stored == 2, f"verification tokens after the resends: expected 2 (sign-up and one resend), got {stored}")
        return (f"sign-up's mail moved {back} s back; {attempts} resends released together over nodes 1-3 in "
                f"{elapsed:.2f} s (final bytes in {replies.release_seconds * 1000:.1f} ms) -> {tally(replies)}; "
                f"{stored} verify_email tokens")


def shutdown(cluster):
    alive = [node for node in cluster.nodes if node.alive()]
    started = time.monotonic()
    for node in alive:
        node.signal(signal.SIGTERM)
    exits = []
    for node in alive:
        try:
            node.process.wait(max(0.1, started + 15 - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"{node.name} did not exit within 15 s of SIGTERM")
        exits.append((node, node.process.returncode, time.monotonic() - started))
    bad = [(node.name, code) for node, code, _ in exits if code != 0]
    require(not bad, f"exit statuses after SIGTERM: {bad}")
    # A node exits at its shutdown's grace (10 s) whatever still runs; one that needed it has
    # logged what held it 5 s after the signal (ShutdownWatch), and that is a failure too.
    for node, _, _ in exits:
        with open(node.log_path) as log:
            held = [line.strip() for line in log if "shutdown is still waiting" in line]
        require(not held, f"{node.name}'s shutdown was held: {held}")
    cluster.nginx.stop()
    return ", ".join(f"{node.name} exited 0 after {seconds:.2f} s" for node, _, seconds in exits) + "; nginx stopped"


def run_checks(binary):
    started = time.monotonic()
    settings = preset_settings()
    cluster = Cluster(binary, nodes=3)
    # Magic links and anonymous starts are off in handz: g. and i. run on a second cluster with
    # the `default` preset (every method on) once the first one is shut down.
    second = None
    third = None
    stripe = None
    play = None
    active = cluster
    current = "start"
    try:
        timing = cluster.start()
        report(current, f"PostgreSQL on :{cluster.postgres.port} ({timing['postgres']:.1f} s), "
                        f"node 1 :{cluster.nodes[0].port} healthy after {timing['first']:.1f} s (migrations), "
                        f"nodes 2-3 :{cluster.nodes[1].port} :{cluster.nodes[2].port}, nginx :{cluster.nginx.port}; "
                        f"{timing['total']:.1f} s")
        checks = Checks(cluster, settings)

        current = "a. refresh reuse across nodes"
        reuse = checks.refresh_reuse_begin()

        current = "c. key rotation across nodes"
        t = time.monotonic()
        details, propagation = checks.key_rotation()
        report(current, f"{details}; {time.monotonic() - t:.1f} s")

        current = "b. login throttling across nodes"
        t = time.monotonic()
        report(current, f"{checks.login_throttling()}; {time.monotonic() - t:.1f} s")

        current = "d. credits never overspend"
        t = time.monotonic()
        report(current, f"{checks.credits()}; {time.monotonic() - t:.1f} s")

        current = "s. account facts reach every node"
        t = time.monotonic()
        report(current, f"{checks.account_facts_reach_every_node()}; {time.monotonic() - t:.1f} s")

        current = "l. revocation reaches every node"
        t = time.monotonic()
        report(current, f"{checks.revocation_reaches_every_node()}; {time.monotonic() - t:.1f} s")

        current = "f. client address through nginx"
        report(current, checks.client_address())

        # While the reuse interval of a. runs out.
        current = "h. login lockout race"
        t = time.monotonic()
        report(current, f"{checks.login_lockout_race()}; {time.monotonic() - t:.1f} s")

        current = "j. verification resend race"
        t = time.monotonic()
        report(current, f"{checks.resend_race()}; {time.monotonic() - t:.1f} s")

        current = "m. a check holds until its write"
        t = time.monotonic()
        report(current, f"{checks.held_requests_and_password_race()}; {time.monotonic() - t:.1f} s")

        current = "k. usage meter race"
        t = time.monotonic()
        report(current, f"{checks.usage_meter_race()}; {time.monotonic() - t:.1f} s")

        current = "r. OpenID provider code race"
        t = time.monotonic()
        report(current, f"{checks.oauth_code_race()}; {time.monotonic() - t:.1f} s")

        current = "a. refresh reuse across nodes"
        t = time.monotonic()
        report(current, f"{checks.refresh_reuse_finish(reuse)}; waited {time.monotonic() - t:.1f} s for the interval")

        current = "e. node killed mid-load"
        t = time.monotonic()
        report(current, f"{checks.node_killed(cluster.nodes[1])}; {time.monotonic() - t:.1f} s")

        current = "shutdown"
        report(current, shutdown(cluster))
        cluster.stop()

        current = f"start ({ALL_METHODS_PRESET} preset)"
        second = Cluster(binary, nodes=3, overrides={"GATEHOUSE_PRESET": ALL_METHODS_PRESET})
        active = second
        timing = second.start()
        report(current, f"PostgreSQL on :{second.postgres.port}, nodes :{second.nodes[0].port} :{second.nodes[1].port} "
                        f":{second.nodes[2].port}, nginx :{second.nginx.port}; {timing['total']:.1f} s")
        others = Checks(second, preset_settings(ALL_METHODS_PRESET))

        current = "g. magic-link code race"
        t = time.monotonic()
        report(current, f"{others.magic_code_race()}; {time.monotonic() - t:.1f} s")

        current = "i. anonymous Idempotency-Key race"
        t = time.monotonic()
        report(current, f"{others.anonymous_key_race()}; {time.monotonic() - t:.1f} s")

        current = f"shutdown ({ALL_METHODS_PRESET} preset)"
        report(current, shutdown(second))
        second.stop()

        current = f"start ({PHONE_PRESET} preset)"
        # Every node of the third cluster calls the one Stripe stand-in and checks its signatures.
        stripe = StripeStandIn()
        stripe.start()
        play = GooglePlayStandIn()
        play.start()
        third = Cluster(binary, nodes=3,
                        overrides={"GATEHOUSE_PRESET": phone_preset_file(tempfile.mkdtemp(prefix="gatehouse-preset-")),
                                   "GATEHOUSE_SUPABASE_ANON_KEY": ANON_KEY, **stripe.environment(STRIPE_ORIGIN),
                                   **play.environment()})
        active = third
        timing = third.start()
        report(current, f"PostgreSQL on :{third.postgres.port}, nodes :{third.nodes[0].port} :{third.nodes[1].port} "
                        f":{third.nodes[2].port}, nginx :{third.nginx.port}, Stripe stand-in {stripe.url}, Play stand-in {play.url}; "
                        f"{timing['total']:.1f} s")
        phones = Checks(third, preset_settings(PHONE_PRESET))

        current = "n. SMS code race"
        t = time.monotonic()
        report(current, f"{phones.sms_code_race()}; {time.monotonic() - t:.1f} s")

        current = "o. SMS send race"
        t = time.monotonic()
        report(current, f"{phones.sms_send_race()}; {time.monotonic() - t:.1f} s")

        current = "p. Stripe webhook race"
        t = time.monotonic()
        report(current, f"{phones.stripe_webhook_race(stripe)}; {time.monotonic() - t:.1f} s")

        current = "q. Stripe first checkout race"
        t = time.monotonic()
        report(current, f"{phones.stripe_checkout_race(stripe)}; {time.monotonic() - t:.1f} s")

        current = "v. Google Play purchase claim race"
        t = time.monotonic()
        report(current, f"{phones.google_play_claim_race(play)}; {time.monotonic() - t:.1f} s")

        current = "t. phone pre-hijack through resend"
        t = time.monotonic()
        report(current, f"{phones.phone_takeover()}; {time.monotonic() - t:.1f} s")

        current = "u. two accounts' changes to one number"
        t = time.monotonic()
        report(current, f"{phones.phone_change_hijack()}; {time.monotonic() - t:.1f} s")

        current = f"shutdown ({PHONE_PRESET} preset)"
        report(current, shutdown(third))

        report("total", f"{time.monotonic() - started:.1f} s; key propagation {propagation:.2f} s")
        return 0
    except CheckFailed as error:
        report(current, str(error), status="FAILED")
        diagnostics = (active.diagnostics() + (stripe.diagnostics() if stripe is not None else "")
                       + (play.diagnostics() if play is not None else ""))
        if diagnostics:
            print(diagnostics, file=sys.stderr)
        return 1
    except Exception as error:  # an unexpected answer shape, a connection error, ...
        report(current, f"{type(error).__name__}: {error}", status="FAILED")
        diagnostics = (active.diagnostics() + (stripe.diagnostics() if stripe is not None else "")
                       + (play.diagnostics() if play is not None else ""))
        if diagnostics:
            print(diagnostics, file=sys.stderr)
        raise
    finally:
        try:
            cluster.stop()
        finally:
            try:
                if second is not None:
                    second.stop()
            finally:
                try:
                    if third is not None:
                        third.stop()
                finally:
                    try:
                        if stripe is not None:
                            stripe.stop()
                    finally:
                        if play is not None:
                            play.stop()


# ---------------------------------------------------------------------------------------------
# --serve: the same topology for exploring by hand


def serve(binary, nodes, database_url=None):
    # GATEHOUSE_* variables of the caller's environment override the cluster's settings (e.g.
    # GATEHOUSE_PRESET=default, GATEHOUSE_LOG_LEVEL=info), except where each node listens and
    # the database. Hashing keeps the server's production cost unless overridden. With
    # database_url the nodes share that database (its server needs nodes × POOL_PER_NODE + 20
    # connections) instead of a throwaway PostgreSQL's.
    overrides = {key: value for key, value in os.environ.items()
                 if key.startswith("GATEHOUSE_") and key not in ("GATEHOUSE_PORT", "GATEHOUSE_DATABASE_URL", "GATEHOUSE_HOST")
                 and not key.startswith("GATEHOUSE_TEST_")}
    cluster = Cluster(binary, nodes=nodes, durable=True, overrides=overrides, cheap_hashing=False, database_url=database_url)
    stopping = threading.Event()

    def on_signal(number, frame):
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        print(f"==> starting PostgreSQL, {nodes} Gatehouse nodes and nginx", flush=True)
        cluster.start()
        key_file = os.path.join(cluster.directory, "admin-key.txt")
        with open(os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(cluster.admin_key + "\n")
        print(f"""
Gatehouse cluster ({nodes} nodes, preset {cluster.environment['GATEHOUSE_PRESET']}) — Ctrl-C stops everything
  nginx (use this)  {cluster.nginx.url}
{chr(10).join(f'  {node.name:<16}  {node.url}   log {node.log_path}' for node in cluster.nodes)}
  PostgreSQL        {cluster.postgres.url}
                    psql: {' '.join(cluster.postgres.psql_command())}
  admin key file    {key_file}   (curl -H "Authorization: Bearer $(cat {key_file})" {cluster.nginx.url}/admin/v1/keys)
  nginx logs        {cluster.nginx.access_log}
  stop one node     kill -9 <pid> ({', '.join(f'{node.name}: {node.process.pid}' for node in cluster.nodes)})
""", flush=True)
        reported = set()
        while not stopping.wait(1):
            for node in cluster.nodes:
                if not node.alive() and node.number not in reported:
                    reported.add(node.number)
                    print(f"==> {node.name} exited ({node.process.returncode}); the others go on", flush=True)
        print("\n==> stopping", flush=True)
        return 0
    except CheckFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        cluster.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary", help="the gatehouse executable")
    parser.add_argument("--serve", action="store_true", help="start the topology and wait for Ctrl-C instead of checking")
    parser.add_argument("--nodes", type=int, default=3, help="nodes for --serve (the checks use 3)")
    parser.add_argument("--database-url", help="for --serve: a PostgreSQL database made beforehand, used as it is "
                        "(default: a throwaway cluster)")
    arguments = parser.parse_args()
    if not os.access(arguments.binary, os.X_OK):
        sys.exit(f"error: {arguments.binary} is not an executable")
    if arguments.serve:
        if arguments.nodes < 1:
            sys.exit("error: --nodes must be at least 1")
        sys.exit(serve(arguments.binary, arguments.nodes, arguments.database_url))
    if arguments.database_url:
        sys.exit("error: --database-url is for --serve (the checks make their own database)")
    sys.exit(run_checks(arguments.binary))


if __name__ == "__main__":
    main()
