#!/usr/bin/env python3
"""Checks google_play_standin.py from the outside, as the Swift tests will use it, and against Google's own
Python libraries where they have a say.

Run it with the Python of .build-venv (scripts/lib/common.sh installs google-api-python-client, PyJWT and
cryptography there):

  .build-venv/bin/python Server/Tests/support/google_play_selftest.py [-v]

It starts the stand-in as a subprocess (the "READY <port>" handshake), then:
- reads the service account key file it wrote and gets an access token with a JWT bearer grant made here
  with PyJWT; refused grants (another audience, no androidpublisher scope, too long, expired, another key,
  another grant type, another account) get the OAuth error Google gives;
- calls the API with google-api-python-client itself (build() on the pinned discovery document, the key file
  through google-auth), which shows that the official client's requests are all described;
- reads subscriptions in each state, acknowledges (once: a second one is refused), cancels (the
  developer's cancellation; again: 200; an ended purchase: refused), lists voided purchases
  (type, window and token paging), and reads a forgotten token (410 in Google's error shape);
- checks that undescribed requests (a path, a query parameter, an unknown body field, a wrongly typed body
  field) and described but unserved ones are refused and listed as violations, and that refusals of
  described requests (credentials, package) are not;
- verifies minted push tokens with PyJWT and with google-auth's verifier against the stand-in's JWKS, and
  the negative ones (audience, email, expiry, email_verified, issuer, a foreign key, none, HS256, a retired
  key) fail for their reason; decodes push bodies.

Prints one line per check (-v: with details) and ends with "N passed, N failed"; exits 1 if any failed."""
import argparse
import base64
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

HERE = os.path.dirname(os.path.abspath(__file__))
SCOPE = "https://www.googleapis.com/auth/androidpublisher"
PACKAGE = "com.example.gatehouse"
AUDIENCE = "https://gatehouse.example/webhooks/google-play"
OVERALL_TIMEOUT = 120
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Results:
    def __init__(self, verbose):
        self.verbose, self.passed, self.failed = verbose, 0, 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}" + (f": {detail}" if self.verbose and detail else ""), flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}", flush=True)
        return ok


class Reply:
    def __init__(self, status, body, headers):
        self.status, self.body, self.headers = status, body, headers
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def __repr__(self):
        return f"{self.status} {self.body[:400]!r}"


def http(method, url, body=None, headers=None, form=None):
    data, headers = None, dict(headers or {})
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with OPENER.open(request, timeout=20) as response:
            return Reply(response.status, response.read().decode(), dict(response.headers))
    except urllib.error.HTTPError as error:
        return Reply(error.code, error.read().decode(), dict(error.headers))


class StandIn:
    """The stand-in as a subprocess, started and driven as a Swift test does."""

    def __init__(self, directory, *extra):
        self.key_file = os.path.join(directory, "service-account.json")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "google_play_standin.py"), "--port", "0", "--package-name", PACKAGE,
             "--service-account-file", self.key_file, "--push-audience", AUDIENCE, *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.process.stdout], [], [], 30)
        self.line = self.process.stdout.readline() if ready else ""
        self.url = f"http://127.0.0.1:{int(self.line.split()[1])}" if self.line.startswith("READY ") else None

    def control(self, method, path, body=None):
        reply = http(method, f"{self.url}/_control/{path}", body if body is not None else
                     ({} if method == "POST" else None))
        if reply.status != 200:
            raise RuntimeError(f"{method} /_control/{path}: {reply!r}")
        return reply.json

    def close(self):
        self.process.stdin.close()
        try:
            code = self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(5)
        return code, self.process.stderr.read()


def assertion(key_file, now=None, key=None, **changes):
    """A JWT bearer grant's assertion made as Google's client libraries make it, with `changes` to its claims
    (a value of None drops the claim)."""
    now = int(now or time.time())
    claims = {"iss": key_file["client_email"], "scope": SCOPE, "aud": key_file["token_uri"], "iat": now,
              "exp": now + 3600}
    claims.update(changes)
    claims = {k: v for k, v in claims.items() if v is not None}
    signing_key = key or key_file["private_key"]
    return jwt.encode(claims, signing_key, algorithm="RS256", headers={"kid": key_file["private_key_id"]})


def grant(standin, key_file, **kwargs):
    form = kwargs.pop("form", None) or {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                        "assertion": assertion(key_file, **kwargs)}
    return http("POST", key_file["token_uri"], form=form)


def api_path(*parts):
    return "/androidpublisher/v3/applications/" + "/".join(urllib.parse.quote(p, safe=":") for p in parts)


def check_start(results):
    """The handshake, the key file, and the version pin."""
    refused = subprocess.run([sys.executable, os.path.join(HERE, "google_play_standin.py"), "--port", "0",
                              "--client-version", "0.0.0"], input="", capture_output=True, text=True, timeout=60)
    results.check("refuses to start with another google-api-python-client version",
                  refused.returncode == 2 and "READY" not in refused.stdout, refused.stderr.strip())


def check_key_file(results, standin):
    with open(standin.key_file) as file:
        key_file = json.load(file)
    needed = {"type", "project_id", "private_key_id", "private_key", "client_email", "client_id", "auth_uri",
              "token_uri", "auth_provider_x509_cert_url", "client_x509_cert_url", "universe_domain"}
    results.check("the key file has the fields of Google's service account key files",
                  needed <= set(key_file) and key_file["type"] == "service_account", sorted(key_file))
    results.check("its token_uri is the stand-in's token endpoint", key_file["token_uri"] == f"{standin.url}/token",
                  key_file["token_uri"])
    results.check("GET /_control/service_account answers the same file",
                  standin.control("GET", "service_account") == key_file)
    return key_file


def check_token_endpoint(results, standin, key_file):
    reply = grant(standin, key_file, aud="https://oauth2.googleapis.com/token")
    results.check("an assertion for Google's token endpoint URL (as google-auth makes it) is accepted",
                  reply.status == 200, repr(reply))
    reply = grant(standin, key_file)
    ok = reply.status == 200 and reply.json.get("token_type") == "Bearer" and reply.json.get("expires_in") == 3599
    results.check("a JWT bearer grant gets an access token", ok and reply.json.get("access_token"), repr(reply))
    foreign = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    cases = [
        ("another audience", {"aud": "https://login.example/token"}, "invalid_grant"),
        ("no androidpublisher scope", {"scope": "https://www.googleapis.com/auth/cloud-platform"}, "invalid_scope"),
        ("no scope", {"scope": None}, "invalid_scope"),
        ("exp more than an hour after iat", {"exp": now + 3700}, "invalid_grant"),
        ("expired", {"iat": now - 7200, "exp": now - 3600}, "invalid_grant"),
        ("iat in the future", {"iat": now + 1800, "exp": now + 3000}, "invalid_grant"),
        ("signed by another key", {"key": foreign}, "invalid_grant"),
        ("another account as iss", {"iss": "someone@else.iam.gserviceaccount.com"}, "invalid_client"),
        ("a sub (delegation) it may not use", {"sub": "user@example.com"}, "unauthorized_client"),
    ]
    for name, changes, error in cases:
        reply = grant(standin, key_file, **changes)
        results.check(f"the token endpoint refuses an assertion with {name} ({error})",
                      reply.status in (400, 401) and (reply.json or {}).get("error") == error, repr(reply))
    reply = grant(standin, key_file, form={"grant_type": "client_credentials", "assertion": "x"})
    results.check("the token endpoint refuses another grant type",
                  (reply.json or {}).get("error") == "unsupported_grant_type", repr(reply))
    listed = standin.control("GET", "token_requests")["token_requests"]
    results.check("token requests are listed with their outcome",
                  len(listed) == len(cases) + 3 and listed[1]["status"] == 200, f"{len(listed)} listed")
    return grant(standin, key_file).json["access_token"]


def check_official_client(results, standin, token):
    """google-api-python-client and google-auth, unchanged but for the two URLs, against the stand-in."""
    from google.oauth2 import service_account
    from googleapiclient.discovery import build
    credentials = service_account.Credentials.from_service_account_file(standin.key_file, scopes=[SCOPE])
    service = build("androidpublisher", "v3", credentials=credentials, static_discovery=True,
                    client_options={"api_endpoint": f"{standin.url}/"}, cache_discovery=False)
    purchase = service.purchases().subscriptionsv2().get(packageName=PACKAGE, token=token).execute()
    results.check("google-api-python-client reads a subscription (its token through google-auth)",
                  purchase.get("subscriptionState") == "SUBSCRIPTION_STATE_ACTIVE", json.dumps(purchase)[:300])
    answer = service.purchases().subscriptions().acknowledge(
        packageName=PACKAGE, subscriptionId="gatehouse.pro.monthly", token=token,
        body={"developerPayload": "selftest"}).execute()
    results.check("google-api-python-client acknowledges (an empty answer)", answer in ("", b"", None, {}),
                  repr(answer))
    voided = service.purchases().voidedpurchases().list(packageName=PACKAGE, type=1, maxResults=10).execute()
    results.check("google-api-python-client lists voided purchases", isinstance(voided, dict), repr(voided))
    violations = standin.control("GET", "violations")["violations"]
    results.check("the official client's requests are all described (no violation)", violations == [],
                  json.dumps(violations)[:500])


def check_subscriptions(results, standin, headers):
    expiry = int(time.time()) + 30 * 86400
    tokens = {}
    for state in ("ACTIVE", "IN_GRACE_PERIOD", "ON_HOLD", "PAUSED", "CANCELED", "EXPIRED", "PENDING"):
        made = standin.control("POST", "purchases", {"product_id": "gatehouse.pro.monthly", "expiry": expiry,
                                                     "state": state, "paused_until": expiry + 86400})
        token = made["purchase"]["token"]
        tokens[state] = token
        reply = http("GET", standin.url + api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", token),
                     headers=headers)
        body = reply.json or {}
        results.check(f"subscriptionsv2.get answers SUBSCRIPTION_STATE_{state}",
                      reply.status == 200 and body.get("subscriptionState") == f"SUBSCRIPTION_STATE_{state}"
                      and body == made["resource"], repr(reply))
    pending = standin.control("GET", f"purchases/{tokens['PENDING']}")["resource"]
    results.check("a pending subscription has no startTime", "startTime" not in pending, json.dumps(pending))
    results.check("a canceled one says who cancelled, when",
                  "userInitiatedCancellation" in standin.control("GET", f"purchases/{tokens['CANCELED']}")
                  ["resource"].get("canceledStateContext", {}))
    old = standin.control("POST", "purchases", {"product_id": "gatehouse.plus.monthly", "expiry": expiry,
                                                "state": "CANCELED"})["purchase"]["token"]
    made = standin.control("POST", "purchases", {
        "product_id": "gatehouse.pro.yearly", "expiry": "2031-01-02T03:04:05.678Z", "linked_token": old,
        "obfuscated_account_id": "acct-1234", "test_purchase": True})
    token = made["purchase"]["token"]
    body = http("GET", standin.url + api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", token),
                headers=headers).json
    item = (body.get("lineItems") or [{}])[0]
    results.check("lineItems carry productId and expiryTime (RFC 3339, UTC)",
                  item.get("productId") == "gatehouse.pro.yearly"
                  and item.get("expiryTime") == "2031-01-02T03:04:05.678Z",
                  json.dumps(item))
    results.check("linkedPurchaseToken, obfuscatedExternalAccountId and testPurchase are answered",
                  body.get("linkedPurchaseToken") == old and body.get("testPurchase") == {}
                  and body.get("externalAccountIdentifiers") == {"obfuscatedExternalAccountId": "acct-1234"},
                  json.dumps(body))
    results.check("a new purchase is not acknowledged",
                  body.get("acknowledgementState") == "ACKNOWLEDGEMENT_STATE_PENDING", body.get("acknowledgementState"))
    renewed = standin.control("POST", f"purchases/{token}", {"renew": True, "expiry": "2032-01-02T03:04:05Z"})
    order = renewed["resource"]["lineItems"][0]["latestSuccessfulOrderId"]
    results.check("a renewal moves the expiry and names the renewal order",
                  order.endswith("..0") and renewed["resource"]["lineItems"][0]["expiryTime"] == "2032-01-02T03:04:05Z",
                  order)
    reply = http("GET", standin.url + api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", "never-made"),
                 headers=headers)
    results.check("an unknown token is 400", reply.status == 400 and reply.json["error"]["code"] == 400, repr(reply))
    return tokens, token


def check_acknowledge(results, standin, headers, token):
    path = api_path(PACKAGE, "purchases", "subscriptions", "gatehouse.pro.yearly", "tokens", token) + ":acknowledge"
    reply = http("POST", standin.url + path, body={}, headers=headers)
    results.check("acknowledge answers 200 with an empty body", reply.status == 200 and reply.body == "", repr(reply))
    state = standin.control("GET", f"purchases/{token}")["resource"]["acknowledgementState"]
    results.check("acknowledge flips acknowledgementState", state == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED", state)
    reply = http("POST", standin.url + path, body={}, headers=headers)
    error = (reply.json or {}).get("error", {})
    results.check("a second acknowledge is 400 invalidPurchaseState",
                  reply.status == 400 and error.get("errors", [{}])[0].get("reason") == "invalidPurchaseState",
                  repr(reply))
    wrong = api_path(PACKAGE, "purchases", "subscriptions", "another.product", "tokens", token) + ":acknowledge"
    reply = http("POST", standin.url + wrong, body={}, headers=headers)
    results.check("acknowledge under another subscriptionId is 400", reply.status == 400, repr(reply))
    listed = [a for a in standin.control("GET", "acknowledgements")["acknowledgements"] if a["token"] == token]
    results.check("the acknowledge calls are listed with their outcome",
                  [a["status"] for a in listed] == [200, 400, 400], json.dumps(listed)[:400])
    standin.control("POST", "fail", {"method": "androidpublisher.purchases.subscriptions.acknowledge", "count": 1,
                                     "status": 503})
    other = standin.control("POST", "purchases", {"product_id": "p", "expiry": time.time() + 86400})
    path = api_path(PACKAGE, "purchases", "subscriptions", "p", "tokens", other["purchase"]["token"]) + ":acknowledge"
    first = http("POST", standin.url + path, headers=headers)
    second = http("POST", standin.url + path, headers=headers)
    results.check("/_control/fail makes the next acknowledge 503 UNAVAILABLE, then it works",
                  first.status == 503 and first.json["error"]["status"] == "UNAVAILABLE" and second.status == 200,
                  f"{first!r} then {second!r}")


def check_cancel(results, standin, headers):
    token = standin.control("POST", "purchases", {"product_id": "p", "expiry": time.time() + 86400})["purchase"]["token"]
    path = api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", token) + ":cancel"
    body = {"cancellationContext": {"cancellationType": "DEVELOPER_REQUESTED_STOP_PAYMENTS"}}
    reply = http("POST", standin.url + path, body=body, headers=headers)
    results.check("subscriptionsv2.cancel answers 200 {}", reply.status == 200 and reply.json == {}, repr(reply))
    resource = standin.control("GET", f"purchases/{token}")["resource"]
    results.check("a cancelled purchase is CANCELED, no longer renewing, by the developer",
                  resource["subscriptionState"] == "SUBSCRIPTION_STATE_CANCELED"
                  and resource["lineItems"][0].get("autoRenewingPlan", {}).get("autoRenewEnabled") is False
                  and "developerInitiatedCancellation" in resource.get("canceledStateContext", {}), json.dumps(resource)[:400])
    again = http("POST", standin.url + path, body=body, headers=headers)
    results.check("a second cancel answers 200", again.status == 200, repr(again))
    untyped = http("POST", standin.url + path, body={}, headers=headers)
    results.check("a cancel without cancellationType is 400", untyped.status == 400, repr(untyped))
    standin.control("POST", f"purchases/{token}", {"state": "EXPIRED"})
    ended = http("POST", standin.url + path, body=body, headers=headers)
    results.check("cancelling an ended purchase is 400 invalidPurchaseState",
                  ended.status == 400 and ended.json["error"]["errors"][0]["reason"] == "invalidPurchaseState", repr(ended))
    listed = [c for c in standin.control("GET", "cancellations")["cancellations"] if c["token"] == token]
    results.check("the cancel calls are listed with their outcome",
                  [c["status"] for c in listed] == [200, 200, 400, 400], json.dumps(listed)[:400])


def check_voided(results, standin, headers, tokens):
    for state in ("ACTIVE", "IN_GRACE_PERIOD", "ON_HOLD"):
        standin.control("POST", f"purchases/{tokens[state]}/void", {"reason": 7, "source": 2})
    listed = standin.control("GET", f"purchases/{tokens['ACTIVE']}")["resource"]
    results.check("voiding revokes the subscription (EXPIRED)",
                  listed["subscriptionState"] == "SUBSCRIPTION_STATE_EXPIRED", listed["subscriptionState"])
    base = standin.url + api_path(PACKAGE, "purchases", "voidedpurchases")
    reply = http("GET", base, headers=headers)
    results.check("voidedpurchases.list without type=1 lists no subscription (an empty answer)",
                  reply.status == 200 and reply.json == {}, repr(reply))
    pages, query = [], "type=1&maxResults=2"
    while True:
        reply = http("GET", f"{base}?{query}", headers=headers)
        if reply.status != 200:
            break
        pages.append(reply.json)
        following = reply.json.get("tokenPagination", {}).get("nextPageToken")
        if not following:
            break
        query = "token=" + urllib.parse.quote(following)
    found = [v["purchaseToken"] for page in pages for v in page.get("voidedPurchases", [])]
    results.check("type=1 lists the voided subscriptions over token pages (2, then 1)",
                  found == [tokens["ACTIVE"], tokens["IN_GRACE_PERIOD"], tokens["ON_HOLD"]] and len(pages) == 2,
                  json.dumps(pages)[:600])
    first = pages[0]["voidedPurchases"][0] if pages else {}
    results.check("a voided purchase has Google's fields (times as int64 strings, source and reason numbers)",
                  first.get("kind") == "androidpublisher#voidedPurchase" and first.get("voidedReason") == 7
                  and first.get("voidedSource") == 2 and first.get("voidedTimeMillis", "").isdigit()
                  and first.get("orderId", "").startswith("GPA."), json.dumps(first))
    later = int((time.time() + 5) * 1000) - 1
    reply = http("GET", f"{base}?type=1&startTime={later - 100}&endTime={later}", headers=headers)
    results.check("a window after the voiding lists nothing", reply.status == 200 and reply.json == {}, repr(reply))
    old = int((time.time() - 31 * 86400) * 1000)
    reply = http("GET", f"{base}?type=1&startTime={old}", headers=headers)
    results.check("a startTime more than 30 days ago is 400", reply.status == 400, repr(reply))


def check_gone(results, standin, headers, tokens):
    token = tokens["EXPIRED"]
    standin.control("POST", f"purchases/{token}/forget", {})
    reply = http("GET", standin.url + api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", token),
                 headers=headers)
    error = (reply.json or {}).get("error", {})
    shape = (error.get("code") == 410 and error.get("message") and error["errors"][0].get("reason")
             == "purchaseTokenNoLongerValid" and error["errors"][0].get("domain") == "androidpublisher")
    results.check("a token Google no longer knows is 410 in Google's error shape", reply.status == 410 and shape,
                  repr(reply))


def check_credentials(results, standin, headers, tokens):
    path = standin.url + api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", tokens["ACTIVE"])
    before = len(standin.control("GET", "rejections")["rejections"])
    reply = http("GET", path)
    results.check("no Authorization is 401 UNAUTHENTICATED with WWW-Authenticate",
                  reply.status == 401 and reply.json["error"]["status"] == "UNAUTHENTICATED"
                  and "WWW-Authenticate" in reply.headers, repr(reply))
    reply = http("GET", path, headers={"Authorization": "Bearer ya29.made-up"})
    results.check("an access token the endpoint never issued is 401", reply.status == 401, repr(reply))
    other = standin.url + api_path("com.someone.else", "purchases", "subscriptionsv2", "tokens", tokens["ACTIVE"])
    reply = http("GET", other, headers=headers)
    results.check("another app's package is 401 permissionDenied",
                  reply.status == 401 and reply.json["error"]["errors"][0]["reason"] == "permissionDenied", repr(reply))
    after = standin.control("GET", "rejections")["rejections"]
    results.check("those refusals are listed as rejections, not violations",
                  len(after) == before + 3 and standin.control("GET", "violations")["violations"] == [],
                  f"{len(after) - before} new rejections")


def check_clock_and_expiry(results, standin, key_file, headers, tokens):
    path = standin.url + api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", tokens["ACTIVE"])
    standin.control("POST", "clock", {"advance": 7200})
    reply = http("GET", path, headers=headers)
    results.check("two hours on (POST /_control/clock), the access token has expired", reply.status == 401,
                  repr(reply))
    reply = grant(standin, key_file)
    results.check("an assertion made on the machine's clock is then too old", reply.status == 400, repr(reply))
    reply = grant(standin, key_file, now=time.time() + 7200)
    results.check("one made on the stand-in's clock is accepted", reply.status == 200, repr(reply))
    standin.control("POST", "clock", {"advance": -7200})
    fresh = {"Authorization": "Bearer " + grant(standin, key_file).json["access_token"]}
    standin.control("POST", "access_tokens/expire")
    reply = http("GET", path, headers=fresh)
    results.check("POST /_control/access_tokens/expire ends every access token", reply.status == 401, repr(reply))


def check_violations(results, standin, headers, tokens):
    token = tokens["ACTIVE"]
    get = standin.url + api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", token)
    ack = standin.url + api_path(PACKAGE, "purchases", "subscriptions", "p", "tokens", token) + ":acknowledge"
    cases = [
        ("a path no method has", "GET", standin.url + "/androidpublisher/v3/applications/x/nonsense", None, 404),
        ("another HTTP method on a described path", "DELETE", get, None, 404),
        ("an undeclared query parameter", "GET", get + "?expand=all", None, 400),
        ("a wrongly typed query parameter", "GET", standin.url + api_path(PACKAGE, "purchases", "voidedpurchases")
         + "?type=one", None, 400),
        ("a body field the request schema does not have", "POST", ack, {"unknownField": 1}, 400),
        ("a body field of the wrong type", "POST", ack, {"developerPayload": 5}, 400),
        ("a nested unknown field", "POST", ack, {"externalAccountIds": {"obfuscatedAccountId": "a", "x": 1}}, 400),
        ("a body on a method that takes none", "GET", get, {"a": 1}, 400),
        ("a described method the stand-in does not serve", "POST",
         standin.url + api_path(PACKAGE, "purchases", "subscriptionsv2", "tokens", token) + ":revoke", {}, 501),
        ("a described global parameter it does not serve (fields)", "GET", get + "?fields=lineItems", None, 501),
    ]
    for name, method, url, body, status in cases:
        before = len(standin.control("GET", "violations")["violations"])
        reply = http(method, url, body=body, headers=headers)
        after = standin.control("GET", "violations")["violations"]
        results.check(f"{name}: {status}, recorded as a violation",
                      reply.status == status and len(after) == before + 1 and reply.json["error"]["code"] == status,
                      f"{reply!r}; {json.dumps(after[-1:])[:300]}")
    reply = http("POST", ack, body="{not json", headers={**headers, "Content-Type": "application/json"})
    results.check("a body that is not JSON is 400", reply.status == 400, repr(reply))
    counts = standin.control("GET", "calls")["counts"]
    results.check("GET /_control/calls counts calls per method id",
                  counts.get("androidpublisher.purchases.subscriptionsv2.get", 0) >= 9
                  and counts.get("androidpublisher.purchases.voidedpurchases.list", 0) >= 4, json.dumps(counts))
    kinds = {v["kind"] for v in standin.control("GET", "violations")["violations"]}
    results.check("violations say whether the request was undescribed or unserved",
                  kinds == {"undescribed", "unserved"}, sorted(kinds))


def check_push_tokens(results, standin):
    from google.auth.transport.requests import Request
    from google.oauth2 import id_token
    info = standin.control("GET", "info")
    jwks = http("GET", info["jwks_uri"]).json
    keys = {key["kid"]: jwt.PyJWK.from_dict(key) for key in jwks["keys"]}
    results.check("the JWKS lists RS256 signing keys", len(keys) == 2 and all(
        k["alg"] == "RS256" and k["use"] == "sig" and k["kty"] == "RSA" for k in jwks["keys"]), json.dumps(jwks)[:200])

    def verify(token, audience=AUDIENCE):
        header = jwt.get_unverified_header(token)
        if header.get("kid") not in keys:
            raise jwt.InvalidKeyError(f"kid {header.get('kid')} is not in the JWKS")
        return jwt.decode(token, keys[header["kid"]].key, algorithms=["RS256"], audience=audience,
                          issuer="https://accounts.google.com", options={"require": ["exp", "iat", "aud", "iss"]})

    minted = standin.control("POST", "push_token", {})
    try:
        claims = verify(minted["token"])
        ok = (claims["email"] == info["push_email"] and claims["email_verified"] is True
              and claims["exp"] - claims["iat"] == 3600 and claims["aud"] == AUDIENCE)
        results.check("a push token verifies with PyJWT against the JWKS (iss, aud, email, email_verified, exp)",
                      ok, json.dumps(claims))
    except jwt.PyJWTError as error:
        results.check("a push token verifies with PyJWT against the JWKS", False, repr(error))
    try:
        claims = id_token.verify_token(minted["token"], Request(), audience=AUDIENCE, certs_url=info["jwks_uri"])
        results.check("and with google-auth's id_token.verify_token (Pub/Sub's documented check)",
                      claims["iss"] == "https://accounts.google.com", json.dumps(claims))
    except Exception as error:  # google-auth raises several kinds
        results.check("and with google-auth's id_token.verify_token", False, repr(error))
    negatives = [
        ("another audience", {"audience": "https://elsewhere.example/push"}, jwt.InvalidAudienceError),
        ("expired", {"issued_at": int(time.time()) - 7200}, jwt.ExpiredSignatureError),
        ("another issuer", {"issuer": "https://evil.example"}, jwt.InvalidIssuerError),
        ("a foreign key under Google's kid", {"signer": "foreign"}, jwt.InvalidSignatureError),
        ("alg none", {"signer": "none"}, jwt.InvalidAlgorithmError),
        ("HS256 keyed with the public key", {"signer": "hs256"}, jwt.InvalidAlgorithmError),
        ("a foreign key's own kid", {"signer": "foreign", "kid": "not-googles"}, jwt.InvalidKeyError),
    ]
    for name, options, error in negatives:
        token = standin.control("POST", "push_token", options)["token"]
        try:
            verify(token)
            results.check(f"a push token with {name} is refused", False, "it verified")
        except jwt.PyJWTError as raised:
            results.check(f"a push token with {name} is refused ({error.__name__})", isinstance(raised, error),
                          repr(raised))
    for name, options, claim, value in [("another email", {"email": "someone@example.com"}, "email",
                                         "someone@example.com"),
                                        ("email_verified false", {"email_verified": False}, "email_verified", False)]:
        claims = verify(standin.control("POST", "push_token", options)["token"])
        results.check(f"a push token with {name} verifies but carries it (the receiver must check)",
                      claims.get(claim) == value, json.dumps(claims))
    claims = jwt.decode(standin.control("POST", "push_token", {"remove": ["email"]})["token"],
                        options={"verify_signature": False})
    results.check("a claim can be removed", "email" not in claims, json.dumps(claims))
    rotated = standin.control("POST", "push_keys/rotate", {"keep_old": False})
    jwks = http("GET", info["jwks_uri"]).json
    kids = [key["kid"] for key in jwks["keys"]]
    keys.clear()
    keys.update({key["kid"]: jwt.PyJWK.from_dict(key) for key in jwks["keys"]})
    results.check("a rotation lists the new key and drops the retired one",
                  kids[0] == rotated["kid"] and rotated["retired"] not in kids, json.dumps(rotated))
    try:
        verify(standin.control("POST", "push_token", {})["token"])
        results.check("a token signed by the new key verifies", True)
    except jwt.PyJWTError as error:
        results.check("a token signed by the new key verifies", False, repr(error))
    try:
        verify(standin.control("POST", "push_token", {"signer": "retired"})["token"])
        results.check("a token signed by the retired key is refused", False, "it verified")
    except jwt.PyJWTError as error:
        results.check("a token signed by the retired key is refused (its kid is gone)", True, repr(error))


def check_push_bodies(results, standin):
    made = standin.control("POST", "push_body", {"purchase_token": "tok", "subscription_id": "gatehouse.pro.monthly",
                                                 "notification_type": "SUBSCRIPTION_RENEWED"})
    body = json.loads(made["text"])
    message = body["message"]
    data = json.loads(base64.b64decode(message["data"]))
    results.check("a subscription notification is base64 JSON in message.data",
                  data == {"version": "1.0", "packageName": PACKAGE, "eventTimeMillis": data["eventTimeMillis"],
                           "subscriptionNotification": {"version": "1.0", "notificationType": 2, "purchaseToken": "tok",
                                                        "subscriptionId": "gatehouse.pro.monthly"}}
                  and data["eventTimeMillis"].isdigit(), json.dumps(data))
    results.check("the push has messageId (and message_id), publishTime and the subscription's full name",
                  message["messageId"] == message["message_id"] == made["message_id"]
                  and message["publishTime"].endswith("Z") and body["subscription"].startswith("projects/"),
                  made["text"][:300])
    voided = json.loads(base64.b64decode(standin.control("POST", "push_body", {
        "kind": "voided", "purchase_token": "tok", "order_id": "GPA.1"})["body"]["message"]["data"]))
    results.check("a voided purchase notification", voided.get("voidedPurchaseNotification") == {
        "purchaseToken": "tok", "orderId": "GPA.1", "productType": 1, "refundType": 1}, json.dumps(voided))
    test = standin.control("POST", "push_body", {"kind": "test"})["body"]["message"]["data"]
    test = json.loads(base64.b64decode(test))
    results.check("a test notification", test.get("testNotification") == {"version": "1.0"}, json.dumps(test))
    both = standin.control("POST", "push", {"purchase_token": "tok", "subscription_id": "s", "notification_type": 5,
                                            "message_id": "42", "token": {"audience": "https://a.example"}})
    claims = jwt.decode(both["authorization"].split(" ", 1)[1], options={"verify_signature": False})
    results.check("POST /_control/push gives the body and its Authorization together",
                  json.loads(both["text"])["message"]["messageId"] == "42" and claims["aud"] == "https://a.example",
                  json.dumps(claims))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="print details of passing checks too")
    args = parser.parse_args()
    signal.alarm(OVERALL_TIMEOUT)
    results = Results(args.verbose)
    with tempfile.TemporaryDirectory(prefix="google-play-selftest-") as directory:
        check_start(results)
        standin = StandIn(directory)
        if not results.check("starts and prints READY <port>", standin.url is not None, repr(standin.line)):
            print(standin.close()[1], file=sys.stderr)
            print(f"{results.passed} passed, {results.failed + 1} failed", flush=True)
            return 1
        try:
            key_file = check_key_file(results, standin)
            access = check_token_endpoint(results, standin, key_file)
            headers = {"Authorization": f"Bearer {access}"}
            first = standin.control("POST", "purchases", {"product_id": "gatehouse.pro.monthly",
                                                          "expiry": time.time() + 86400})["purchase"]["token"]
            check_official_client(results, standin, first)
            tokens, linked = check_subscriptions(results, standin, headers)
            check_acknowledge(results, standin, headers, linked)
            check_cancel(results, standin, headers)
            check_voided(results, standin, headers, tokens)
            check_gone(results, standin, headers, tokens)
            check_credentials(results, standin, headers, tokens)
            check_clock_and_expiry(results, standin, key_file, headers, tokens)
            headers = {"Authorization": "Bearer " + grant(standin, key_file).json["access_token"]}
            check_violations(results, standin, headers, tokens)
            check_push_tokens(results, standin)
            check_push_bodies(results, standin)
        finally:
            code, stderr = standin.close()
        results.check("exits 0 at end of input, nothing on stderr", code == 0 and not stderr.strip(),
                      f"exit {code}, stderr {stderr.strip()[:500]!r}")
    print(f"{results.passed} passed, {results.failed} failed", flush=True)
    return 0 if results.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
