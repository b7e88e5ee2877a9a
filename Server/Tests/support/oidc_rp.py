#!/usr/bin/env python3
"""Plays a relying party against Gatehouse's OpenID Provider: Authlib for OAuth 2.1 / OpenID Connect,
headless Chromium (Selenium) for the hosted pages.

Used by the Swift tests (through $GATEHOUSE_TEST_PYTHON). Needs Authlib, requests, pyotp and Selenium
in that Python. Like browser.py it never downloads a browser or a driver: it uses the installed
Chromium and chromedriver, overridable with GATEHOUSE_CHROMIUM and GATEHOUSE_CHROMEDRIVER.

Every subcommand registers its own client through the admin API (POST BASE/admin/v1/oauth/clients
with the admin key) and finds the provider's endpoints by discovery (BASE/.well-known/
openid-configuration; the issuer must be BASE without a trailing slash). It runs its own small web
server on 127.0.0.1 at an ephemeral port (RP below; another port is another origin) serving
/callback (the redirect URI), /logged-out (the post-logout redirect URI), /login (the initiate-login
URI: redirects to a fresh authorization request), /frame (frames a URL) and /cross-site-consent
(auto-posts copied consent fields from RP's origin). The provider's clock is assumed to be the real
one (TOTP codes, exp and iat are computed from this machine's time).

  oidc_rp.py flow --base BASE --admin-key KEY --email E --password P
                  --kind public|confidential-basic|confidential-post [--first-party]
                  [--totp-secret B32] [--screenshots DIR [--prefix NAME]]
      Registers a client (public with no client authentication, or confidential authenticating with
      client_secret_basic or client_secret_post at the token and revocation endpoints) for the
      scopes openid email profile offline_access, then signs E in through the hosted pages with the
      authorization code flow (PKCE S256, state, nonce), checks the callback, the tokens, the ID token
      against the provider's JWKS, userinfo, refresh rotation, revocation, introspection (confidential
      kinds) and RP-initiated logout. Prints, in order:
        client CLIENT_ID
        discovery ok
        wrong password refused              (a wrong password re-renders sign-in with .errors)
        mfa passed                          (only when the provider asked for a TOTP code)
        consent scopes openid email profile offline_access   (not --first-party)
        consent given                       (not --first-party)
        consent skipped                     (--first-party: no consent page was shown)
        callback state ok                   (state and iss on the callback)
        tokens issued
        id token valid sub=SUB
        nonce ok
        at_hash ok
        amr AMR,...                         (the ID token's amr joined by commas)
        acr ACR
        access token at+jwt
        userinfo email=EMAIL
        refreshed                           (a new, different refresh token)
        replayed nonce refused              (the first ID token checked against another nonce)
        public client shown continue        (public kind: a second authorization shows only "Continue as …")
        consent remembered                  (a second authorization shows neither sign-in nor consent)
        introspect active                   (confidential kinds)
        revoked
        refresh after revoke refused        (invalid_grant)
        userinfo after revoke refused       (401)
        introspect inactive                 (confidential kinds)
        logout csrf refused                 (--foreign-email: that account's logout link asked this browser first)
        logged out                          (RP-initiated logout came back to /logged-out with the state)
        signed out at provider              (a new authorization shows sign-in)
        no csp violations
      With --screenshots, saves DIR/PREFIX-sign-in.png and (not --first-party) DIR/PREFIX-consent.png;
      PREFIX is "oidc" unless --prefix is given. Fails on any Content-Security-Policy violation (or
      other refusal) the browser logged.

  oidc_rp.py client-credentials --base BASE --admin-key KEY --audience AUD
      Registers a confidential client for the scope api:read with audience AUD (and the redirect URI
      http://127.0.0.1/unused-callback, which it never uses: the admin API wants one), fetches a token with
      the client_credentials grant and verifies it with the JWKS (typ at+jwt, sub and client_id the
      client's id, aud AUD, scope api:read). Prints:
        client CLIENT_ID
        token TOKEN                         (the raw access token, one line)
        client credentials ok
        wrong secret refused                (401 invalid_client)
        no secret refused                   (client_credentials with client_id and no secret)

  oidc_rp.py handover --base BASE --admin-key KEY
      Registers a first-party public client whose initiate_login_uri is RP/login and prints
        client CLIENT_ID
      as its first line, then reads one line from stdin (within 60 s): the hand-over URL. Opens it in
      Chromium, which must arrive at RP/login with iss=ISSUER and from there (a fresh authorization
      request) at RP/callback without showing the sign-in page; exchanges the code and validates the
      ID token. Then opens the same URL in a fresh browser (no cookies), which must show
      main[data-state="error"]. Prints:
        handover interstitial               (the link showed "Continue as ACCOUNT on CLIENT", no cookie yet)
        signed in sub=SUB
        reuse refused

  oidc_rp.py attacks --base BASE --admin-key KEY --email E --password P [--totp-secret B32]
      Registers a public client (not first party) and checks that the browser will not render the
      authorization page in a frame, that the consent form posted from another origin (RP) with the
      consent page's own hidden fields is refused (main[data-state="forbidden"]), and that a
      redirect_uri differing from the registered one by a trailing slash gets the error page and never
      reaches RP. Prints:
        frame refused
        cross-origin consent refused
        redirect mismatch refused

Every subcommand prints OK and exits 0 on success; prints "FAIL: " and a one-line reason naming the
step and exits 1 otherwise. Browser refusals (Content-Security-Policy violations and the like) are
printed to stderr as warnings, as are the RP server's requests ("rp: GET ...") and other notes.
"""

import argparse
import base64
import contextlib
import hashlib
import html
import json
import os
import secrets
import select
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import pyotp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser as browser_driver  # noqa: E402 (this folder's Chromium driver)
import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, JsonWebToken, JWTClaims
from authlib.jose.errors import JoseError
from authlib.oidc.core import CodeIDToken
from selenium.common.exceptions import (
    NoSuchElementException,
    NoSuchFrameException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions

# Every wait (a page, a redirect, an HTTP answer) gives up after this long.
TIMEOUT = 20.0
# A page whose state stays the same this long after it has finished loading has settled.
SETTLE = 1.0
# How long handover waits for the Swift test to write the hand-over URL.
STDIN_TIMEOUT = 60.0
# Clock allowance when checking exp and iat.
LEEWAY = 10
DEVICE_METRICS = {"width": 390, "height": 844, "pixelRatio": 2.0, "mobile": True, "touch": True}
USER_AGENT = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)

USER_SCOPES = ["openid", "email", "profile", "offline_access"]
HANDOVER_SCOPES = ["openid", "email", "profile"]
MACHINE_SCOPE = "api:read"
# --kind: whether the client is public, and how it authenticates at the token endpoint.
KINDS = {
    "public": (True, "none"),
    "confidential-basic": (False, "client_secret_basic"),
    "confidential-post": (False, "client_secret_post"),
}
# The endpoints the discovery document must name.
ENDPOINTS = (
    "authorization_endpoint",
    "token_endpoint",
    "userinfo_endpoint",
    "jwks_uri",
    "revocation_endpoint",
    "introspection_endpoint",
    "end_session_endpoint",
)
# What the registration answer must give back as it was sent.
ECHOED = ("redirect_uris", "post_logout_redirect_uris", "public", "first_party", "audience", "initiate_login_uri")
# The redirect URI of the client_credentials client, which never uses it.
UNUSED_REDIRECT = "http://127.0.0.1/unused-callback"
# States a hosted page may pass through on its way to the next one.
TRANSIENT = ("loading", "submitting")

# Only ES256: an ID token or access token signed any other way (or not at all) is refused.
JWT = JsonWebToken(["ES256"])

# The document's readyState and the state main[data-state] names.
STATE_JS = """
const main = document.querySelector('main[data-state]');
return [document.readyState, main ? main.getAttribute('data-state') : null];
"""
TEXT_JS = "return document.body ? document.body.innerText : '';"
# The submit button of the form arguments[0] (form.elements honours form=).
SUBMIT_JS = """
return Array.from(arguments[0].elements).find(e => e.type === 'submit') || null;
"""
# The hidden fields of the form arguments[0] and where it posts (form.action is absolute).
HIDDEN_JS = """
const form = arguments[0];
const fields = Array.from(form.querySelectorAll('input[type=hidden]')).map(e => [e.name, e.value]);
return [form.action, (form.getAttribute('method') || 'get').toLowerCase(), fields];
"""


class Failure(Exception):
    def __init__(self, message, named=False):
        super().__init__(message)
        self.named = named


def one_line(text, limit=400):
    return " ".join(str(text or "").split())[:limit]


def say(line):
    print(line, flush=True)


def note(line):
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def step(name):
    """Names the step in whatever goes wrong inside it (the innermost name wins)."""
    try:
        yield
    except Failure as failure:
        if failure.named:
            raise
        raise Failure(f"{name}: {failure}", named=True) from None
    except AuthlibBaseError as error:  # Authlib's OAuth and JOSE errors
        description = one_line(getattr(error, "description", "") or "")
        raise Failure(f"{name}: {error.error}{': ' + description if description else ''}", named=True) from None
    except requests.RequestException as error:
        raise Failure(f"{name}: HTTP: {one_line(error)}", named=True) from None
    except WebDriverException as error:
        raise Failure(f"{name}: webdriver: {one_line(error.msg or str(error))}", named=True) from None


# The browser.


class Browser:
    """Headless Chromium emulating a phone, each one a fresh profile (no cookies), and the refusals
    (CSP violations and the like) it has logged."""

    def __init__(self, label):
        self.label = label
        self.refusals = []
        # The same headless Chromium at a phone's size as the hosted pages' driver (browser.py).
        try:
            self.driver = browser_driver.start_driver(phone=True)
        except browser_driver.Failure as error:
            raise Failure(str(error)) from None
        self.driver.set_page_load_timeout(TIMEOUT)

    def quit(self):
        self.collect()
        try:
            self.driver.quit()
        except Exception:
            pass

    def collect(self, expected=False):
        """Moves what the browser refused since the last call into self.refusals, warning on stderr, and
        returns it; with expected=True (a refusal the check wants) only notes it and keeps it out."""
        try:
            entries = self.driver.get_log("browser")
        except Exception:
            return []
        refused = []
        for entry in entries:
            message = entry.get("message", "")
            if entry.get("level") == "SEVERE" and ("Content Security Policy" in message or "Refused to" in message):
                if expected:
                    note(f"note: browser ({self.label}, expected): {one_line(message, 1000)}")
                else:
                    note(f"warning: browser ({self.label}): {one_line(message, 1000)}")
                    self.refusals.append(message)
                refused.append(message)
        return refused

    def open(self, url):
        try:
            self.driver.get(url)
        except WebDriverException as error:
            raise self.failure(f"could not open {url}: {one_line(error.msg or str(error), 300)}")

    def state(self):
        """(document.readyState, main's data-state or None); None, None while a navigation swaps documents."""
        try:
            ready, state = self.driver.execute_script(STATE_JS)
            return ready, state
        except WebDriverException:
            return None, None

    def url(self):
        try:
            return self.driver.current_url
        except WebDriverException:
            return "?"

    def failure(self, reason):
        _, state = self.state()
        try:
            text = one_line(self.driver.execute_script(TEXT_JS), 300)
        except WebDriverException:
            text = ""
        self.collect()
        refused = f", browser refused: {one_line(self.refusals[-1], 300)!r}" if self.refusals else ""
        return Failure(f"{reason} (data-state={state!r}, url={self.url()}, text={text!r}{refused})")

    def wait_for(self, wanted, keep_waiting_on=TRANSIENT, seen=None):
        """Waits for main[data-state] in wanted (a state or a tuple of them) and returns it.

        Gives up early once the page has finished loading and sat on a state neither wanted nor in
        keep_waiting_on for SETTLE seconds, so a wrong page fails fast. Adds every state it saw to
        the set seen, if given.
        """
        wanted = (wanted,) if isinstance(wanted, str) else tuple(wanted)
        deadline = time.monotonic() + TIMEOUT
        last, since = object(), time.monotonic()
        while True:
            ready, state = self.state()
            if seen is not None and state is not None:
                seen.add(state)
            if state in wanted:
                return state
            now = time.monotonic()
            if (ready, state) != last:
                last, since = (ready, state), now
            elif ready == "complete" and state is not None and state not in keep_waiting_on and now - since >= SETTLE:
                raise self.failure(f"expected data-state {' or '.join(wanted)}, the page settled on {state!r}")
            if now >= deadline:
                raise self.failure(f"timed out after {TIMEOUT:g}s waiting for data-state {' or '.join(wanted)}")
            time.sleep(0.05)

    def find(self, selector):
        try:
            return self.driver.find_element(By.CSS_SELECTOR, selector)
        except NoSuchElementException:
            raise self.failure(f"no {selector} on the page")

    def fill(self, selector, text):
        field = self.find(selector)
        field.clear()
        field.send_keys(text)

    def click_and_wait(self, element, wanted, action, keep_waiting_on=TRANSIENT, seen=None):
        """Clicks a submit button, waits for the document to be replaced (so a page answering with the
        same state is not taken for the answer) and then for a state in wanted."""
        old = self.driver.find_element(By.TAG_NAME, "html")
        try:
            element.click()
        except WebDriverException as error:
            raise self.failure(f"{action}: could not click: {one_line(error.msg or str(error), 200)}")
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                old.tag_name
            except StaleElementReferenceException:
                break
            except WebDriverException:
                pass  # the navigation is under way
            if time.monotonic() >= deadline:
                raise self.failure(f"{action}: the page did not change within {TIMEOUT:g}s")
            time.sleep(0.05)
        return self.wait_for(wanted, keep_waiting_on, seen)

    def submit(self, form_selector, wanted, seen=None):
        button = self.driver.execute_script(SUBMIT_JS, self.find(form_selector))
        if button is None:
            raise self.failure(f"{form_selector} has no submit button")
        return self.click_and_wait(button, wanted, f"submitting {form_selector}", seen=seen)

    def screenshot(self, directory, name):
        if not directory:
            return
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name)
        if not self.driver.save_screenshot(path):
            raise Failure(f"could not save a screenshot to {path}")


# The relying party's own web server.


class Hit:
    """One request the RP server answered: its path and query (every value of every name)."""

    def __init__(self, path, query, url):
        self.path = path
        self.query = query
        self.url = url

    def one(self, name):
        """The single value of name in the query; fails when it is missing or repeated."""
        values = self.query.get(name, [])
        if len(values) != 1:
            query = urlsplit(self.url).query
            raise Failure(f"{self.path} got {len(values)} {name!r} parameters, expected one (query: {query!r})")
        return values[0]


def page(state, title, body=""):
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><title>{html.escape(title)}</title></head>'
        f'<body><main data-state="{html.escape(state)}"><h1>{html.escape(title)}</h1>{body}</main></body></html>'
    )


class RelyingParty:
    """The RP's web server on 127.0.0.1 at an ephemeral port, served from a thread.

    on_login, when set, is called with the /login hit and returns the URL to redirect to; forged,
    when set, is (action, [(name, value), ...]) for /cross-site-consent.
    """

    def __init__(self):
        self.hits = []
        self.errors = []
        self.on_login = None
        self.forged = None
        self.changed = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), RelyingPartyHandler)
        self.server.daemon_threads = True
        self.server.rp = self
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="rp", daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def record(self, hit):
        with self.changed:
            self.hits.append(hit)
            self.changed.notify_all()

    def mark(self):
        with self.changed:
            return len(self.hits)

    def since(self, mark, path):
        with self.changed:
            return [hit for hit in self.hits[mark:] if hit.path == path]

    def touched(self, mark, prefix):
        """The hits since mark whose path starts with prefix (/callback also matches /callback/)."""
        with self.changed:
            return [hit for hit in self.hits[mark:] if hit.path.startswith(prefix)]

    def wait_for_hit(self, mark, path, what):
        """The one request to path since mark, waiting for it; fails on none or more than one."""
        deadline = time.monotonic() + TIMEOUT
        with self.changed:
            while True:
                if self.errors:
                    raise Failure(f"the RP server failed: {self.errors[0]}")
                hits = [hit for hit in self.hits[mark:] if hit.path == path]
                if hits:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Failure(f"{what}: no request reached {self.base}{path} within {TIMEOUT:g}s")
                self.changed.wait(remaining)
        time.sleep(0.2)  # a duplicate would be right behind
        hits = self.since(mark, path)
        if len(hits) != 1:
            raise Failure(f"{what}: {len(hits)} requests reached {path}, expected one")
        return hits[0]


class RelyingPartyHandler(BaseHTTPRequestHandler):
    server_version = "oidc-rp"

    def log_message(self, format, *args):
        note(f"rp: {format % args}")

    def answer(self, status, body, headers=()):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        rp = self.server.rp
        parts = urlsplit(self.path)
        hit = Hit(parts.path, parse_qs(parts.query, keep_blank_values=True), rp.base + self.path)
        try:
            if parts.path == "/callback":
                rp.record(hit)
                self.answer(200, page("callback", "Signed in"))
            elif parts.path == "/logged-out":
                rp.record(hit)
                self.answer(200, page("logged-out", "Signed out"))
            elif parts.path == "/login":
                rp.record(hit)
                if rp.on_login is None:
                    self.answer(404, page("not-found", "No sign-in is expected"))
                    return
                self.answer(302, page("redirect", "Redirecting"), [("Location", rp.on_login(hit))])
            elif parts.path == "/frame":
                rp.record(hit)
                target = hit.one("url")
                frame = (
                    f'<iframe id="target" title="framed" width="360" height="600" src="{html.escape(target)}" '
                    "onload=\"document.body.setAttribute('data-framed', 'loaded')\"></iframe>"
                )
                self.answer(200, page("frame", "Framed", frame))
            elif parts.path == "/cross-site-consent":
                rp.record(hit)
                if rp.forged is None:
                    self.answer(404, page("not-found", "Nothing to post"))
                    return
                action, fields = rp.forged
                inputs = "".join(
                    f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">'
                    for name, value in fields
                )
                form = (
                    f'<form id="forged" method="post" action="{html.escape(action)}">{inputs}'
                    '<input type="hidden" name="decision" value="allow"></form>'
                    "<script>document.getElementById('forged').submit();</script>"
                )
                self.answer(200, page("cross-site-consent", "Posting", form))
            else:
                rp.record(hit)
                self.answer(404, page("not-found", "Not found"))
        except Exception as error:  # the main thread reports it
            with rp.changed:
                rp.errors.append(f"{parts.path}: {type(error).__name__}: {one_line(error)}")
                rp.changed.notify_all()
            try:
                self.answer(500, page("rp-error", "RP error", f"<p>{html.escape(str(error))}</p>"))
            except Exception:
                pass


# HTTP, discovery and the admin API.


def http_session():
    session = requests.Session()
    session.headers["User-Agent"] = "gatehouse-oidc-rp-test"
    return session


def json_answer(response, what, expected=200):
    if response.status_code != expected:
        raise Failure(f"{what}: HTTP {response.status_code} (expected {expected}): {one_line(response.text, 300)!r}")
    try:
        body = response.json()
    except ValueError:
        raise Failure(f"{what}: the answer is not JSON: {one_line(response.text, 300)!r}")
    if not isinstance(body, dict):
        raise Failure(f"{what}: the answer is not a JSON object: {one_line(response.text, 300)!r}")
    return body


class Provider:
    """The provider as found by discovery, and its signing keys."""

    def __init__(self, base):
        self.base = base
        self.issuer = base
        self.http = http_session()
        with step("discovery"):
            url = f"{base}/.well-known/openid-configuration"
            self.config = json_answer(self.http.get(url, timeout=TIMEOUT), f"GET {url}")
            if self.config.get("issuer") != self.issuer:
                raise Failure(f"issuer is {self.config.get('issuer')!r}, expected {self.issuer!r}")
            for name in ENDPOINTS:
                value = self.config.get(name)
                if not absolute_url(value):
                    raise Failure(f"{name} is {value!r}, not an absolute URL")
            require_listed(self.config, "code_challenge_methods_supported", "S256")
            require_listed(self.config, "id_token_signing_alg_values_supported", "ES256")
            for method in ("client_secret_basic", "client_secret_post", "none"):
                require_listed(self.config, "token_endpoint_auth_methods_supported", method)
            if self.config.get("authorization_response_iss_parameter_supported") is not True:
                raise Failure(
                    "authorization_response_iss_parameter_supported is "
                    f"{self.config.get('authorization_response_iss_parameter_supported')!r}, expected true"
                )
        with step("JWKS"):
            url = self.config["jwks_uri"]
            jwks = json_answer(self.http.get(url, timeout=TIMEOUT), f"GET {url}")
            if not isinstance(jwks.get("keys"), list) or not jwks["keys"]:
                raise Failure(f"{url} lists no keys")
            for key in jwks["keys"]:
                if any(name in key for name in ("d", "p", "q", "dp", "dq", "qi", "k")):
                    raise Failure(f"{url} publishes private key material (key {key.get('kid')!r})")
            self.keys = JsonWebKey.import_key_set(jwks)

    def endpoint(self, name):
        return self.config[name]

    def register(self, admin_key, payload):
        """POST /admin/v1/oauth/clients: the registered client (201), checked against payload."""
        with step("registering the client"):
            response = self.http.post(
                f"{self.base}/admin/v1/oauth/clients",
                json=payload,
                headers={"Authorization": f"Bearer {admin_key}"},
                timeout=TIMEOUT,
            )
            client = json_answer(response, "POST /admin/v1/oauth/clients", 201)
            if not isinstance(client.get("client_id"), str) or not client["client_id"]:
                raise Failure(f"no client_id in {one_line(json.dumps(client), 300)}")
            for name in ECHOED:
                if client.get(name) != payload[name]:
                    raise Failure(f"{name} came back as {client.get(name)!r}, registered {payload[name]!r}")
            if not isinstance(client.get("scopes"), list) or sorted(client["scopes"]) != sorted(payload["scopes"]):
                raise Failure(f"scopes came back as {client.get('scopes')!r}, registered {payload['scopes']!r}")
            secret = client.get("client_secret")
            if payload["public"] and secret:
                raise Failure("a public client was given a client_secret")
            if not payload["public"] and (not isinstance(secret, str) or not secret):
                raise Failure("a confidential client came back without a client_secret")
            return client


def absolute_url(value):
    return isinstance(value, str) and urlsplit(value).scheme in ("http", "https") and bool(urlsplit(value).netloc)


def require_listed(config, name, value):
    listed = config.get(name)
    if not isinstance(listed, list) or value not in listed:
        raise Failure(f"{name} is {listed!r}, which does not list {value!r}")


def client_payload(name, scopes, rp=None, public=True, first_party=False, audience=None, login=False):
    """The registration of a client; without rp (a client that never sends a browser anywhere), its
    redirect URI is UNUSED_REDIRECT, as the admin API wants at least one."""
    return {
        "name": name,
        "redirect_uris": [f"{rp.base}/callback"] if rp else [UNUSED_REDIRECT],
        "post_logout_redirect_uris": [f"{rp.base}/logged-out"] if rp else [],
        "scopes": list(scopes),
        "public": public,
        "first_party": first_party,
        "audience": audience,
        "initiate_login_uri": f"{rp.base}/login" if login else None,
    }


# OAuth and tokens.


def code_verifier():
    """A PKCE code verifier: 64 characters of [A-Za-z0-9_-] (RFC 7636 allows 43 to 128)."""
    return secrets.token_urlsafe(48)


def s256(verifier):
    """The S256 code challenge of verifier, computed here rather than by Authlib."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


def half_hash(token):
    """at_hash for an ES256 ID token: base64url of the left half of SHA-256 of the token."""
    digest = hashlib.sha256(token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest[: len(digest) // 2]).rstrip(b"=").decode("ascii")


def jwt_header(token):
    """The unverified JOSE header of a compact JWS."""
    try:
        segment = token.split(".")[0]
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, IndexError):
        header = None
    if token.count(".") != 2 or not isinstance(header, dict):
        raise Failure(f"{one_line(token, 40)!r} is not a compact JWS")
    return header


class Client:
    """A registered client as Authlib's OAuth2Session, and what each authorization request it started
    is waiting for (state -> nonce and code verifier)."""

    def __init__(self, provider, client_id, secret, auth_method, scopes, redirect_uri):
        self.provider = provider
        self.client_id = client_id
        self.secret = secret
        self.auth_method = auth_method
        self.redirect_uri = redirect_uri
        self.pending = {}
        self.lock = threading.Lock()
        self.responses = []
        self.session = OAuth2Session(
            client_id=client_id,
            client_secret=secret,
            token_endpoint_auth_method=auth_method,
            revocation_endpoint_auth_method=auth_method,
            scope=" ".join(scopes),
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            leeway=0,
            default_timeout=TIMEOUT,
        )
        self.session.headers["User-Agent"] = "gatehouse-oidc-rp-test"
        for hook in ("access_token_response", "refresh_token_response"):
            self.session.register_compliance_hook(hook, self.remember_response)

    def remember_response(self, response):
        self.responses.append(response)
        return response

    def authorization_url(self, **extra):
        """A fresh authorization request (state, nonce, PKCE S256) built by Authlib; returns (url, state)."""
        state, nonce, verifier = secrets.token_urlsafe(24), secrets.token_urlsafe(24), code_verifier()
        url, _ = self.session.create_authorization_url(
            self.provider.endpoint("authorization_endpoint"), state=state, code_verifier=verifier, nonce=nonce, **extra
        )
        query = parse_qs(urlsplit(url).query)
        if query.get("code_challenge") != [s256(verifier)] or query.get("code_challenge_method") != ["S256"]:
            raise Failure(f"Authlib built an authorization URL without the S256 challenge: {url}")
        with self.lock:
            self.pending[state] = (nonce, verifier)
        return url, state

    def callback(self, hit, state):
        """Checks a callback hit (no error, the state expected, iss the issuer) and returns its code."""
        if "error" in hit.query:
            raise Failure(f"the callback got error={hit.query['error']} ({hit.query.get('error_description')})")
        if hit.one("state") != state:
            raise Failure(f"the callback's state {hit.one('state')!r} is not the one sent ({state!r})")
        if hit.one("iss") != self.provider.issuer:
            raise Failure(f"the callback's iss {hit.one('iss')!r} is not the issuer {self.provider.issuer!r}")
        return hit.one("code")

    def exchange(self, hit, state):
        """The token answer for the callback hit of the request started with state (Authlib's fetch_token)."""
        self.callback(hit, state)
        with self.lock:
            nonce, verifier = self.pending.pop(state)
        token = self.session.fetch_token(
            self.provider.endpoint("token_endpoint"),
            authorization_response=hit.url,
            state=state,
            code_verifier=verifier,
        )
        for name in ("access_token", "id_token"):
            if not isinstance(token.get(name), str) or not token[name]:
                raise Failure(f"the token answer has no {name} (keys: {', '.join(sorted(token))})")
        if str(token.get("token_type", "")).lower() != "bearer":
            raise Failure(f"token_type is {token.get('token_type')!r}, expected Bearer")
        return dict(token), nonce

    def id_token(self, id_token, nonce, access_token, scopes, email=None):
        """Validates an ID token with the provider's JWKS; returns its claims."""
        claims = JWT.decode(
            id_token,
            self.provider.keys,
            claims_cls=CodeIDToken,
            claims_options={
                "iss": {"essential": True, "value": self.provider.issuer},
                "aud": {"essential": True, "value": self.client_id},
                "sub": {"essential": True},
                "nonce": {"essential": True},
                "at_hash": {"essential": True},
                "sid": {"essential": True},
            },
            claims_params={"nonce": nonce, "client_id": self.client_id, "access_token": access_token},
        )
        claims.validate(leeway=LEEWAY)
        if claims.header.get("alg") != "ES256":
            raise Failure(f"alg is {claims.header.get('alg')!r}, expected ES256")
        aud = claims["aud"]
        if aud != self.client_id and aud != [self.client_id]:
            raise Failure(f"aud is {aud!r}, expected {self.client_id!r} alone")
        if claims["nonce"] != nonce:
            raise Failure("nonce is not the one sent")
        if claims["at_hash"] != half_hash(access_token):
            raise Failure(f"at_hash {claims['at_hash']!r} is not the access token's ({half_hash(access_token)!r})")
        if not isinstance(claims.get("auth_time"), int) or claims["auth_time"] > time.time() + LEEWAY:
            raise Failure(f"auth_time is {claims.get('auth_time')!r}")
        amr = claims.get("amr")
        if not isinstance(amr, list) or not amr or not all(isinstance(method, str) and method for method in amr):
            raise Failure(f"amr is {amr!r}, expected a list of strings")
        if not isinstance(claims.get("acr"), str) or not claims["acr"]:
            raise Failure(f"acr is {claims.get('acr')!r}")
        if not isinstance(claims["sid"], str):
            raise Failure(f"sid is {claims['sid']!r}")
        if "email" in scopes:
            if email is not None and str(claims.get("email", "")).lower() != email.lower():
                raise Failure(f"email is {claims.get('email')!r}, expected {email!r}")
            if not isinstance(claims.get("email_verified"), bool):
                raise Failure(f"email_verified is {claims.get('email_verified')!r}")
        if "profile" in scopes and "name" in claims and not isinstance(claims["name"], str):
            raise Failure(f"name is {claims['name']!r}")
        return claims

    def access_token(self, token, audience=None):
        """Verifies an access token (ES256 with the JWKS, typ at+jwt); returns its claims."""
        header = jwt_header(token)
        if str(header.get("typ", "")).lower() not in ("at+jwt", "application/at+jwt"):
            raise Failure(f"the access token's typ is {header.get('typ')!r}, expected at+jwt")
        options = {name: {"essential": True} for name in ("sub", "exp", "iat", "client_id", "scope")}
        options["iss"] = {"essential": True, "value": self.provider.issuer}
        options["aud"] = {"essential": True, "value": audience} if audience else {"essential": True}
        claims = JWT.decode(token, self.provider.keys, claims_cls=JWTClaims, claims_options=options)
        claims.validate(leeway=LEEWAY)
        if claims["client_id"] != self.client_id:
            raise Failure(f"the access token's client_id is {claims['client_id']!r}, expected {self.client_id!r}")
        if audience and claims["aud"] != audience and claims["aud"] != [audience]:
            raise Failure(f"the access token's aud is {claims['aud']!r}, expected {audience!r} alone")
        return claims

    def introspect(self, token):
        """RFC 7662 with client_secret_basic (whatever the token endpoint uses)."""
        response = self.session.introspect_token(
            self.provider.endpoint("introspection_endpoint"),
            token=token,
            token_type_hint="access_token",
            auth=self.session.client_auth("client_secret_basic"),
        )
        return json_answer(response, "introspection")

    def last_status(self):
        return self.responses[-1].status_code if self.responses else None


def userinfo(provider, access_token):
    """GET userinfo with the token as a Bearer (plain requests: Authlib would refresh on its own)."""
    return provider.http.get(
        provider.endpoint("userinfo_endpoint"), headers={"Authorization": f"Bearer {access_token}"}, timeout=TIMEOUT
    )


# The hosted pages.


def sign_in(browser, email, password, totp_secret, after, wrong_first=False, screenshots=None, prefix=None):
    """From main[data-state="sign-in"]: signs in (after a wrong password first, when told), answers
    an MFA page when one comes, and returns the state reached among after."""
    if screenshots:
        browser.screenshot(screenshots, f"{prefix}-sign-in.png")
    if wrong_first:
        with step("wrong password"):
            browser.fill('form#sign-in input[name="email"]', email)
            browser.fill('form#sign-in input[name="password"]', password + "-not-it")
            browser.submit("form#sign-in", "sign-in")
            errors = browser.driver.find_elements(By.CSS_SELECTOR, ".errors")
            if not any((error.get_attribute("textContent") or "").strip() for error in errors):
                others = browser.driver.find_elements(By.CSS_SELECTOR, ".error, [role=alert]")
                found = f" (it has {len(others)} .error or [role=alert] element(s) instead)" if others else ""
                raise browser.failure(f"sign-in came back without a message in .errors{found}")
            say("wrong password refused")
    with step("sign-in"):
        browser.fill('form#sign-in input[name="email"]', email)
        browser.fill('form#sign-in input[name="password"]', password)
        state = browser.submit("form#sign-in", ("mfa",) + tuple(after))
    if state != "mfa":
        return state
    with step("mfa"):
        if not totp_secret:
            raise browser.failure("the provider asked for a TOTP code, but no --totp-secret was given")
        totp = pyotp.TOTP(totp_secret)
        browser.fill('form#mfa input[name="code"]', totp.now())
        state = browser.submit("form#mfa", ("mfa",) + tuple(after))
        if state == "mfa":
            # This step's code may have been taken already (the factor was just confirmed with it);
            # the provider accepts the next step's once.
            note("note: the current TOTP code was refused, trying the next step's")
            browser.fill('form#mfa input[name="code"]', totp.at(time.time() + totp.interval))
            state = browser.submit("form#mfa", after)
        say("mfa passed")
        return state


def consent_scopes(browser):
    items = browser.driver.find_elements(By.CSS_SELECTOR, "li[data-scope]")
    return [item.get_attribute("data-scope") for item in items]


# flow


def run_flow(args):
    public, auth_method = KINDS[args.kind]
    provider = Provider(args.base)
    rp = RelyingParty()
    browser = None
    try:
        registered = provider.register(
            args.admin_key,
            client_payload(f"oidc_rp flow {args.kind}", USER_SCOPES, rp, public=public, first_party=args.first_party),
        )
        say(f"client {registered['client_id']}")
        say("discovery ok")
        secret = registered.get("client_secret")
        client = Client(provider, registered["client_id"], secret, auth_method, USER_SCOPES, f"{rp.base}/callback")
        prefix = args.prefix or "oidc"
        browser = Browser("flow")

        with step("authorization"):
            mark = rp.mark()
            url, state = client.authorization_url()
            browser.open(url)
            browser.wait_for("sign-in")
            reached = sign_in(
                browser,
                args.email,
                args.password,
                args.totp_secret,
                ("consent", "callback"),
                wrong_first=True,
                screenshots=args.screenshots,
                prefix=prefix,
            )
        with step("consent"):
            if args.first_party:
                if reached == "consent":
                    raise browser.failure("a first-party client was shown the consent page")
                say("consent skipped")
            else:
                if reached != "consent":
                    raise browser.failure("no consent page for a client that is not first party")
                browser.screenshot(args.screenshots, f"{prefix}-consent.png")
                scopes = consent_scopes(browser)
                if sorted(scopes) != sorted(USER_SCOPES):
                    raise browser.failure(f"the consent page lists {scopes}, expected {USER_SCOPES}")
                say(f"consent scopes {' '.join(USER_SCOPES)}")
                allow = browser.find('form#consent button[name="decision"][value="allow"]')
                browser.find('form#consent button[name="decision"][value="deny"]')
                browser.click_and_wait(allow, "callback", "allowing")
                say("consent given")
        with step("callback"):
            browser.wait_for("callback")
            hit = rp.wait_for_hit(mark, "/callback", "the callback")
            client.callback(hit, state)
            say("callback state ok")
        with step("token exchange"):
            token, nonce = client.exchange(hit, state)
            if not token.get("refresh_token"):
                raise Failure("no refresh_token, though offline_access was granted")
            say("tokens issued")
        with step("ID token"):
            claims = client.id_token(token["id_token"], nonce, token["access_token"], USER_SCOPES, args.email)
            sub = claims["sub"]
            say(f"id token valid sub={sub}")
            say("nonce ok")
            say("at_hash ok")
            say(f"amr {','.join(claims['amr'])}")
            say(f"acr {claims['acr']}")
        with step("access token"):
            access = client.access_token(token["access_token"])
            if access["sub"] != sub:
                raise Failure(f"the access token's sub {access['sub']!r} is not the ID token's {sub!r}")
            if access.get("sid") != claims["sid"]:
                raise Failure(f"the access token's sid {access.get('sid')!r} is not the ID token's {claims['sid']!r}")
            if set(str(access["scope"]).split()) != set(USER_SCOPES):
                raise Failure(f"the access token's scope is {access['scope']!r}, expected {' '.join(USER_SCOPES)!r}")
            say("access token at+jwt")
        with step("userinfo"):
            info = json_answer(userinfo(provider, token["access_token"]), "userinfo")
            if info.get("sub") != sub:
                raise Failure(f"sub is {info.get('sub')!r}, expected {sub!r}")
            if str(info.get("email", "")).lower() != args.email.lower():
                raise Failure(f"email is {info.get('email')!r}, expected {args.email!r}")
            if not isinstance(info.get("email_verified"), bool):
                raise Failure(f"email_verified is {info.get('email_verified')!r}")
            say(f"userinfo email={info['email']}")

        first_id_token, first_access, latest_id_token = token["id_token"], token["access_token"], token["id_token"]
        with step("refresh"):
            old_refresh = token["refresh_token"]
            client.session.refresh_token(provider.endpoint("token_endpoint"), refresh_token=old_refresh)
            answer = client.responses[-1].json()
            new_refresh = answer.get("refresh_token")
            if not new_refresh:
                raise Failure("the refresh answer carries no new refresh_token")
            if new_refresh == old_refresh:
                raise Failure("the refresh answer carries the same refresh_token (not rotated)")
            if not answer.get("access_token"):
                raise Failure("the refresh answer carries no access_token")
            refreshed = client.access_token(answer["access_token"])
            if refreshed["sub"] != sub:
                raise Failure(f"the refreshed access token's sub is {refreshed['sub']!r}, expected {sub!r}")
            if answer.get("id_token"):
                renewed = JWT.decode(
                    answer["id_token"],
                    provider.keys,
                    claims_options={
                        "iss": {"essential": True, "value": provider.issuer},
                        "aud": {"essential": True, "value": client.client_id},
                        "sub": {"essential": True, "value": sub},
                    },
                )
                renewed.validate(leeway=LEEWAY)
                latest_id_token = answer["id_token"]
            token = {"access_token": answer["access_token"], "refresh_token": new_refresh}
            say("refreshed")
        with step("nonce replay"):
            try:
                client.id_token(first_id_token, secrets.token_urlsafe(24), first_access, USER_SCOPES)
            except JoseError as error:
                if error.error != "invalid_claim" or "nonce" not in str(error.description or ""):
                    raise Failure(f"refused for another reason: {error.error}: {error.description}")
            else:
                raise Failure("the ID token was accepted for a request with another nonce")
            say("replayed nonce refused")
        with step("second authorization"):
            mark = rp.mark()
            url, state = client.authorization_url()
            browser.open(url)
            seen = set()
            try:
                reached = browser.wait_for(("callback", "continue"), seen=seen)
            except Failure:
                if "consent" in seen:
                    raise browser.failure("the consent page was shown again")
                if "sign-in" in seen:
                    raise browser.failure("the sign-in page was shown again (no browser session)")
                raise
            if seen & {"consent", "sign-in", "mfa"}:
                raise browser.failure(f"passed through {', '.join(sorted(seen))} on the way to the callback")
            if public:
                # RFC 8252 §8.6: any local process can listen on a public client's loopback
                # port and open this URL, so a code goes only after the person taps Continue.
                if reached != "continue":
                    raise browser.failure("a public client got a code with no page shown")
                if args.email not in browser.driver.find_element(By.TAG_NAME, "main").text:
                    raise browser.failure("the Continue page does not name the account")
                allow = browser.find('form#continue button[name="decision"][value="allow"]')
                browser.click_and_wait(allow, "callback", "continuing")
                say("public client shown continue")
            elif reached != "callback":
                raise browser.failure("a confidential client was shown the Continue page")
            client.callback(rp.wait_for_hit(mark, "/callback", "the second callback"), state)
            with client.lock:
                client.pending.pop(state, None)
            say("consent remembered")

        if not public:
            with step("introspection"):
                answer = client.introspect(token["access_token"])
                if answer.get("active") is not True:
                    raise Failure(f"active is {answer.get('active')!r} for a live access token")
                if "client_id" in answer and answer["client_id"] != client.client_id:
                    raise Failure(f"client_id is {answer['client_id']!r}, expected {client.client_id!r}")
                if "sub" in answer and answer["sub"] != sub:
                    raise Failure(f"sub is {answer['sub']!r}, expected {sub!r}")
                say("introspect active")
        with step("revocation"):
            response = client.session.revoke_token(
                provider.endpoint("revocation_endpoint"), token=token["refresh_token"], token_type_hint="refresh_token"
            )
            if response.status_code != 200:
                raise Failure(f"HTTP {response.status_code}: {one_line(response.text, 300)!r}")
            say("revoked")
        with step("refresh after revocation"):
            try:
                client.session.refresh_token(provider.endpoint("token_endpoint"), refresh_token=token["refresh_token"])
            except AuthlibBaseError as error:
                if error.error != "invalid_grant":
                    raise Failure(f"refused with {error.error} (HTTP {client.last_status()}), expected invalid_grant")
            else:
                raise Failure("the revoked refresh token was accepted")
            say("refresh after revoke refused")
        with step("userinfo after revocation"):
            response = userinfo(provider, token["access_token"])
            if response.status_code != 401:
                raise Failure(f"HTTP {response.status_code}, expected 401: {one_line(response.text, 200)!r}")
            say("userinfo after revoke refused")
        if not public:
            with step("introspection after revocation"):
                answer = client.introspect(token["access_token"])
                if answer.get("active") is not False:
                    raise Failure(f"active is {answer.get('active')!r} after revocation")
                say("introspect inactive")

        if args.foreign_email:
            with step("logout csrf"):
                # Another person's ID token, from their own sign-in in another browser.
                other = Browser("foreign")
                try:
                    mark = rp.mark()
                    foreign_url, foreign_state = client.authorization_url()
                    other.open(foreign_url)
                    other.wait_for("sign-in")
                    reached = sign_in(other, args.foreign_email, args.password, None, ("consent", "callback"))
                    if reached == "consent":
                        other.click_and_wait(other.find('form#consent button[name="decision"][value="allow"]'), "callback", "allowing")
                    foreign_hit = rp.wait_for_hit(mark, "/callback", "the other person's callback")
                    foreign_token, _ = client.exchange(foreign_hit, foreign_state)
                finally:
                    other.quit()
                # This browser follows a logout link made with that token (a cross-site link).
                # (Its sign-in cookie is scoped to /oauth: it is read on the provider's page.)
                browser.open(
                    provider.endpoint("end_session_endpoint")
                    + ("&" if "?" in provider.endpoint("end_session_endpoint") else "?")
                    + urlencode({"id_token_hint": foreign_token["id_token"]})
                )
                browser.wait_for("logout-confirm")
                if args.email not in browser.driver.find_element(By.TAG_NAME, "main").text:
                    raise browser.failure("the confirmation does not name this browser's account")
                def signed_in_cookie():
                    return [c["value"] for c in browser.driver.get_cookies() if c["name"].endswith("gatehouse_op") and c["value"]]
                kept = signed_in_cookie()
                if not kept:
                    raise browser.failure("another person's logout link cleared this browser's sign-in")
                browser.click_and_wait(
                    browser.find('form#logout button[name="decision"][value="stay"]'), "still-signed-in", "staying signed in")
                if signed_in_cookie() != kept:
                    raise browser.failure("staying signed in changed this browser's sign-in")
                say("logout csrf refused")
        with step("logout"):
            hints = [latest_id_token] + ([first_id_token] if first_id_token != latest_id_token else [])
            for index, hint in enumerate(hints):
                mark = rp.mark()
                logout_state = secrets.token_urlsafe(16)
                browser.open(
                    provider.endpoint("end_session_endpoint")
                    + ("&" if "?" in provider.endpoint("end_session_endpoint") else "?")
                    + urlencode(
                        {
                            "id_token_hint": hint,
                            "post_logout_redirect_uri": f"{rp.base}/logged-out",
                            "state": logout_state,
                            "client_id": client.client_id,
                        }
                    )
                )
                reached = browser.wait_for(("logged-out", "error"))
                if reached == "logged-out" and not browser.url().startswith(rp.base + "/"):
                    raise browser.failure("the provider showed its own signed-out page instead of redirecting to RP")
                if reached == "logged-out":
                    break
                if index + 1 == len(hints):
                    raise browser.failure("the logout request was refused")
                note("note: logout refused the refreshed ID token as id_token_hint, trying the first one")
            hit = rp.wait_for_hit(mark, "/logged-out", "the post-logout redirect")
            if hit.one("state") != logout_state:
                raise Failure(f"/logged-out got state {hit.one('state')!r}, expected {logout_state!r}")
            say("logged out")
        with step("authorization after logout"):
            url, state = client.authorization_url()
            browser.open(url)
            browser.wait_for("sign-in")
            say("signed out at provider")

        browser.collect()
        if browser.refusals:
            first = one_line(browser.refusals[0], 500)
            raise Failure(f"{len(browser.refusals)} CSP violation(s) logged (warnings above), the first: {first}")
        say("no csp violations")
    finally:
        if browser is not None:
            browser.quit()
        rp.close()


# client-credentials


def run_client_credentials(args):
    provider = Provider(args.base)
    registered = provider.register(
        args.admin_key,
        client_payload(f"oidc_rp machine {args.audience}", [MACHINE_SCOPE], public=False, audience=args.audience),
    )
    client_id, secret = registered["client_id"], registered["client_secret"]
    say(f"client {client_id}")
    client = Client(provider, client_id, secret, "client_secret_basic", [MACHINE_SCOPE], None)
    token_endpoint = provider.endpoint("token_endpoint")
    with step("client_credentials grant"):
        token = client.session.fetch_token(token_endpoint, grant_type="client_credentials")
        if not token.get("access_token"):
            raise Failure(f"no access_token (keys: {', '.join(sorted(token))})")
        if str(token.get("token_type", "")).lower() != "bearer":
            raise Failure(f"token_type is {token.get('token_type')!r}, expected Bearer")
        if token.get("id_token"):
            raise Failure("an id_token was issued to the client_credentials grant")
    with step("client_credentials token"):
        claims = client.access_token(token["access_token"], audience=args.audience)
        if claims["sub"] != client_id:
            raise Failure(f"sub is {claims['sub']!r}, expected the client_id {client_id!r}")
        if claims["scope"] != MACHINE_SCOPE:
            raise Failure(f"scope is {claims['scope']!r}, expected {MACHINE_SCOPE!r}")
        say(f"token {token['access_token']}")
        say("client credentials ok")
    with step("wrong secret"):
        response = provider.http.post(
            token_endpoint,
            data={"grant_type": "client_credentials", "scope": MACHINE_SCOPE},
            auth=(client_id, secret + "x"),
            timeout=TIMEOUT,
        )
        error = json_answer(response, "the token endpoint", 401)
        if error.get("error") != "invalid_client" or "access_token" in error:
            raise Failure(f"answered {one_line(json.dumps(error), 300)}, expected error invalid_client")
        say("wrong secret refused")
    with step("no secret"):
        response = provider.http.post(
            token_endpoint,
            data={"grant_type": "client_credentials", "scope": MACHINE_SCOPE, "client_id": client_id},
            timeout=TIMEOUT,
        )
        if response.status_code not in (400, 401):
            raise Failure(f"HTTP {response.status_code}, expected 400 or 401: {one_line(response.text, 300)!r}")
        error = json_answer(response, "the token endpoint", response.status_code)
        if error.get("error") not in ("invalid_client", "unauthorized_client") or "access_token" in error:
            answered = one_line(json.dumps(error), 300)
            raise Failure(f"answered {answered}, expected error invalid_client or unauthorized_client")
        say("no secret refused")


# handover


def read_handover_url():
    ready, _, _ = select.select([sys.stdin], [], [], STDIN_TIMEOUT)
    if not ready:
        raise Failure(f"no hand-over URL on stdin within {STDIN_TIMEOUT:g}s")
    line = sys.stdin.readline()
    if not line:
        raise Failure("stdin closed before a hand-over URL came")
    url = line.strip()
    if not absolute_url(url):
        raise Failure(f"{url!r} from stdin is not an absolute URL")
    return url


def run_handover(args):
    provider = Provider(args.base)
    rp = RelyingParty()
    browsers = []
    try:
        registered = provider.register(
            args.admin_key,
            client_payload("oidc_rp handover", HANDOVER_SCOPES, rp, public=True, first_party=True, login=True),
        )
        client = Client(provider, registered["client_id"], None, "none", HANDOVER_SCOPES, f"{rp.base}/callback")
        started = {}

        def on_login(hit):
            url, state = client.authorization_url()
            started["state"] = state
            return url

        rp.on_login = on_login
        browsers.append(Browser("handover"))
        say(f"client {client.client_id}")
        with step("reading stdin"):
            handover_url = read_handover_url()

        with step("hand-over"):
            browser = browsers[0]
            mark = rp.mark()
            browser.open(handover_url)
            # R124: the link lands on a page naming the account and the client; nothing is
            # signed in until the person confirms it in this browser.
            browser.wait_for("handover")
            if args.email not in browser.driver.find_element(By.TAG_NAME, "main").text:
                raise browser.failure("the hand-over page does not name the account")
            if any(cookie["name"].endswith("gatehouse_op") for cookie in browser.driver.get_cookies()):
                raise browser.failure("the browser was signed in before the hand-over was confirmed")
            say("handover interstitial")
            seen = set()
            reached = browser.click_and_wait(
                browser.find('form#handover button[name="decision"][value="continue"]'), ("callback", "continue"), "continuing",
                keep_waiting_on=TRANSIENT + ("redirect",), seen=seen)
            if reached == "continue":
                # The client is public on a loopback redirect: its request shows Continue too.
                browser.click_and_wait(browser.find('form#continue button[name="decision"][value="allow"]'), "callback", "continuing")
            if seen & {"sign-in", "mfa", "consent"}:
                raise browser.failure(f"passed through {', '.join(sorted(seen))} on the way to the callback")
            logins = rp.since(mark, "/login")
            if len(logins) != 1:
                raise Failure(f"{len(logins)} requests reached /login, expected one")
            if logins[0].one("iss") != provider.issuer:
                raise Failure(f"/login got iss={logins[0].one('iss')!r}, expected {provider.issuer!r}")
            hit = rp.wait_for_hit(mark, "/callback", "the callback")
            if "state" not in started:
                raise Failure("the callback came without an authorization request from /login")
        with step("token exchange"):
            token, nonce = client.exchange(hit, started["state"])
        with step("ID token"):
            claims = client.id_token(token["id_token"], nonce, token["access_token"], HANDOVER_SCOPES)
            say(f"signed in sub={claims['sub']}")
        browsers[0].quit()

        with step("hand-over reuse"):
            browser = Browser("handover reuse")
            browsers.append(browser)
            mark = rp.mark()
            browser.open(handover_url)
            browser.wait_for("error")
            if rp.touched(mark, "/"):
                raise Failure(f"the reused link still reached the RP at {rp.touched(mark, '/')[0].path}")
            say("reuse refused")
    finally:
        for browser in browsers:
            browser.quit()
        rp.close()


# attacks


def run_attacks(args):
    provider = Provider(args.base)
    rp = RelyingParty()
    browser = None
    try:
        payload = client_payload("oidc_rp attacks", HANDOVER_SCOPES, rp, public=True)
        registered = provider.register(args.admin_key, payload)
        client = Client(provider, registered["client_id"], None, "none", HANDOVER_SCOPES, f"{rp.base}/callback")
        browser = Browser("attacks")
        driver = browser.driver

        with step("framing"):
            browser.collect()
            url, _ = client.authorization_url()
            browser.open(f"{rp.base}/frame?{urlencode({'url': url})}")
            browser.wait_for("frame")
            deadline = time.monotonic() + TIMEOUT
            while driver.execute_script("return document.body.getAttribute('data-framed');") != "loaded":
                if time.monotonic() >= deadline:
                    raise browser.failure(f"the frame did not finish loading within {TIMEOUT:g}s")
                time.sleep(0.05)
            time.sleep(SETTLE)
            try:
                driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, "iframe#target"))
            except (NoSuchElementException, NoSuchFrameException):
                raise browser.failure("could not switch into the frame")
            try:
                rendered = driver.find_elements(By.CSS_SELECTOR, "main[data-state]")
                states = [element.get_attribute("data-state") for element in rendered]
            finally:
                driver.switch_to.default_content()
            if states:
                raise browser.failure(f"the provider's page rendered inside a frame (data-state {states[0]!r})")
            if not browser.collect(expected=True):
                note("note: the browser logged no refusal for the frame (it rendered no page in it)")
            say("frame refused")

        with step("cross-origin consent"):
            mark = rp.mark()
            url, _ = client.authorization_url()
            browser.open(url)
            browser.wait_for("sign-in")
            reached = sign_in(browser, args.email, args.password, args.totp_secret, ("consent", "callback"))
            if reached != "consent":
                raise browser.failure("no consent page for a client that is not first party")
            action, method, fields = driver.execute_script(HIDDEN_JS, browser.find("form#consent"))
            if method != "post":
                raise browser.failure(f"form#consent uses method {method!r}, expected post")
            if urlsplit(action).netloc != urlsplit(provider.issuer).netloc:
                raise browser.failure(f"form#consent posts to {action!r}, not to the provider")
            rp.forged = (action, [(name, value) for name, value in fields if name and name != "decision"])
            browser.open(f"{rp.base}/cross-site-consent")
            browser.wait_for("forbidden", keep_waiting_on=TRANSIENT + ("cross-site-consent",))
            if rp.touched(mark, "/callback"):
                raise Failure("the forged consent still reached the callback")
            say("cross-origin consent refused")

        with step("redirect mismatch"):
            mark = rp.mark()
            url, _ = client.authorization_url(redirect_uri=f"{rp.base}/callback/")
            browser.open(url)
            browser.wait_for("error")
            time.sleep(SETTLE)
            if rp.touched(mark, "/callback"):
                raise Failure(f"the RP was reached at {rp.touched(mark, '/callback')[0].url}")
            say("redirect mismatch refused")
    finally:
        if browser is not None:
            browser.quit()
        rp.close()


# main


# passkeys


# Registers a passkey for the signed-in account (its Bearer token, arguments[0]) with the browser's
# own WebAuthn (the virtual authenticator answers), through the app's JSON routes, from a page of
# the provider's origin; calls back with {status, body} or {error}.
REGISTER_PASSKEY_JS = """
const token = arguments[0], done = arguments[arguments.length - 1];
const bytes = t => Uint8Array.from(atob(t.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((t.length + 3) % 4)), c => c.charCodeAt(0));
const text = b => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
(async () => {
  const headers = {'Content-Type': 'application/json', 'Authorization': 'Bearer ' + token};
  const asked = await fetch('/v1/passkeys/registration/options', {method: 'POST', headers, body: '{}'});
  const ceremony = await asked.json();
  if (!asked.ok) { done({error: 'options: ' + asked.status + ' ' + JSON.stringify(ceremony)}); return; }
  const o = ceremony.options;
  const made = await navigator.credentials.create({publicKey: {
    rp: o.rp, user: {id: bytes(o.user.id), name: o.user.name, displayName: o.user.displayName},
    challenge: bytes(o.challenge), pubKeyCredParams: o.pubKeyCredParams, timeout: o.timeout,
    excludeCredentials: (o.excludeCredentials || []).map(c => ({type: c.type, id: bytes(c.id)})),
    authenticatorSelection: o.authenticatorSelection, attestation: o.attestation}});
  const body = {challenge_id: ceremony.challenge_id, name: 'Chromium', credential: {id: made.id, rawId: text(made.rawId), type: made.type,
    authenticatorAttachment: made.authenticatorAttachment,
    response: {clientDataJSON: text(made.response.clientDataJSON), attestationObject: text(made.response.attestationObject),
      transports: made.response.getTransports ? made.response.getTransports() : []}}};
  const verified = await fetch('/v1/passkeys/registration/verify', {method: 'POST', headers, body: JSON.stringify(body)});
  done({status: verified.status, body: await verified.text()});
})().catch(error => done({error: String(error)}));
"""


def run_passkey(args):
    """A passkey made in Chromium (a virtual platform authenticator) signs in on the provider's page."""
    provider = Provider(args.base)
    rp = RelyingParty()
    browser = None
    scopes = ["openid", "email"]
    try:
        registered = provider.register(args.admin_key, client_payload("oidc_rp passkey", scopes, rp, public=True))
        client = Client(provider, registered["client_id"], None, "none", scopes, f"{rp.base}/callback")
        say(f"client {client.client_id}")
        browser = Browser("passkey")
        options = VirtualAuthenticatorOptions()
        options.protocol = VirtualAuthenticatorOptions.Protocol.CTAP2
        options.transport = VirtualAuthenticatorOptions.Transport.INTERNAL
        options.has_resident_key = True
        options.has_user_verification = True
        options.is_user_verified = True
        browser.driver.add_virtual_authenticator(options)
        with step("sign-in page"):
            url, state = client.authorization_url()
            browser.open(url)
            browser.wait_for("sign-in")
            if not browser.driver.find_elements(By.CSS_SELECTOR, "#passkey-button"):
                raise browser.failure("the sign-in page offers no passkey")
        with step("passkey registration"):
            session = http_session()
            login = json_answer(
                session.post(f"{provider.base}/v1/auth/login", json={"email": args.email, "password": args.password}, timeout=TIMEOUT),
                "password login",
            )
            browser.driver.set_script_timeout(TIMEOUT)
            made = browser.driver.execute_async_script(REGISTER_PASSKEY_JS, login["session"]["access_token"])
            if "error" in made or made.get("status") not in (200, 201):
                raise Failure(f"the browser's passkey was not registered: {one_line(made, 500)}")
            say("passkey registered")
        with step("passkey sign-in"):
            mark = rp.mark()
            browser.fill("#email", args.email)
            browser.click_and_wait(browser.find("#passkey-button"), "consent", "the passkey button")
            browser.submit("form#consent", "callback")
            hit = rp.wait_for_hit(mark, "/callback", "the callback")
        with step("token exchange"):
            token, nonce = client.exchange(hit, state)
        with step("ID token"):
            claims = client.id_token(token["id_token"], nonce, token["access_token"], scopes, email=args.email)
            say(f"passkey signed in sub={claims['sub']} amr {','.join(claims.get('amr', []))}")
    finally:
        if browser:
            browser.quit()
        rp.close()


def base_url(text):
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http(s) base URL")
    return text.rstrip("/")


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description="Plays an OpenID Connect relying party against Gatehouse.")
    commands = parser.add_subparsers(dest="command", required=True)

    def common(command, help):
        sub = commands.add_parser(command, help=help)
        sub.add_argument("--base", required=True, type=base_url, metavar="BASE")
        sub.add_argument("--admin-key", required=True, metavar="KEY")
        return sub

    flow = common("flow", "sign in with the authorization code flow and use the tokens")
    flow.add_argument("--email", required=True)
    flow.add_argument("--password", required=True)
    flow.add_argument("--kind", required=True, choices=sorted(KINDS))
    flow.add_argument("--first-party", action="store_true")
    flow.add_argument("--totp-secret", metavar="B32")
    flow.add_argument("--screenshots", metavar="DIR")
    flow.add_argument("--prefix", metavar="NAME")
    flow.add_argument("--foreign-email", metavar="E", help="another account (same password) whose logout link must not sign this browser out")
    machine = common("client-credentials", "the client_credentials grant")
    machine.add_argument("--audience", required=True, metavar="AUD")
    handover = common("handover", "sign a browser in with a hand-over URL read from stdin")
    handover.add_argument("--email", required=True, help="the account the hand-over page must name")
    attacks = common("attacks", "framing, cross-origin consent and a tampered redirect_uri")
    attacks.add_argument("--email", required=True)
    attacks.add_argument("--password", required=True)
    attacks.add_argument("--totp-secret", metavar="B32")
    passkey = common("passkey", "register a passkey in Chromium and sign in with it on the provider's page")
    passkey.add_argument("--email", required=True)
    passkey.add_argument("--password", required=True)
    args = parser.parse_args(argv)
    if getattr(args, "prefix", None) and not args.screenshots:
        parser.error("--prefix needs --screenshots")
    if getattr(args, "totp_secret", None):
        try:
            pyotp.TOTP(args.totp_secret).now()
        except Exception:
            parser.error("--totp-secret is not a base32 secret")
    return args


RUNS = {
    "flow": run_flow,
    "client-credentials": run_client_credentials,
    "handover": run_handover,
    "attacks": run_attacks,
    "passkey": run_passkey,
}


def main(argv=None):
    args = parse_arguments(argv)
    try:
        RUNS[args.command](args)
    except Failure as failure:
        say(f"FAIL: {one_line(failure, 2000)}")
        return 1
    except WebDriverException as error:
        say(f"FAIL: webdriver: {one_line(error.msg or str(error))}")
        return 1
    except Exception as error:
        traceback.print_exc()
        say(f"FAIL: internal error: {type(error).__name__}: {one_line(error)}")
        return 1
    say("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
