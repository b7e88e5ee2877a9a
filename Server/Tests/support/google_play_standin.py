"""A stand-in for the Google Play Developer API and Google's auth servers around it, for Gatehouse's Google Play
tests (http.server, in memory).

The API, under /androidpublisher/v3/ (the document's rootUrl is the stand-in's URL): every request is checked
against the androidpublisher v3 discovery document that the pinned google-api-python-client package ships
(google_play_discovery.py): the method (HTTP method and path), every query parameter, the JSON body against
the method's request schema. What the document does not describe is answered as Google's front end would
(404 for a path, 400 for a parameter or body) and recorded as a violation; so is a described request the
stand-in does not serve (another method, a global parameter such as `fields`), answered 501, and an answer
of its own that breaks the response schema (a stand-in bug, answered 500). A test fails on any violation
(GET /_control/violations). Every call needs `Authorization: Bearer <access token from POST /token>`.

  GET  .../applications/{packageName}/purchases/subscriptionsv2/tokens/{token}
       androidpublisher.purchases.subscriptionsv2.get: SubscriptionPurchaseV2
  POST .../applications/{packageName}/purchases/subscriptions/{subscriptionId}/tokens/{token}:acknowledge
       androidpublisher.purchases.subscriptions.acknowledge: empty answer; a second one is 400 invalidPurchaseState
  POST .../applications/{packageName}/purchases/subscriptionsv2/tokens/{token}:cancel
       androidpublisher.purchases.subscriptionsv2.cancel: {} (cancellationContext.cancellationType required);
       stops renewing, paid until the expiry; again: 200; an ended or pending purchase: 400 invalidPurchaseState
  GET  .../applications/{packageName}/purchases/voidedpurchases
       androidpublisher.purchases.voidedpurchases.list: startTime, endTime, type (0, the default, lists no
       subscription), maxResults, token (tokenPagination.nextPageToken)

A token Google no longer knows answers 410 {"error": {"code": 410, "message", "errors": [{"domain":
"androidpublisher", "reason": "purchaseTokenNoLongerValid", ...}]}}; an unknown token 400; another app's package
401 permissionDenied; a missing or expired access token 401 UNAUTHENTICATED. Those are Google's answers to
described requests: they are listed under /_control/rejections, not as violations.

Google's auth servers:
  POST /token                  the OAuth token endpoint (the key file's token_uri): the JWT bearer grant
                               (google_play_auth.py) -> {"access_token", "expires_in", "token_type"}
  GET  /oauth2/v3/certs        the JWKS that verifies Pub/Sub push tokens
  GET  /.well-known/openid-configuration

The control API, under /_control/ (JSON in and out, not Google's); times are Unix seconds or RFC 3339:
  GET  /_control/info                      versions, URLs, package name, emails
  GET  /_control/service_account           the service account key file (also written to --service-account-file)
  POST /_control/purchases                 {"product_id", "expiry", "token"?, "state"?, "start"?, "linked_token"?,
                                            "obfuscated_account_id"?, "obfuscated_profile_id"?, "test_purchase"?,
                                            "acknowledged"?, "auto_renew"?, "base_plan_id"?, "region_code"?,
                                            "canceled_by"?, "cancel_time"?, "paused_until"?, "line_items"?}
                                           -> {"purchase", "resource", "gone"}
  GET  /_control/purchases/{token}         the same view
  POST /_control/purchases/{token}         any of those fields, and "renew": true (a new order id)
  POST /_control/purchases/{token}/void    {"reason"?, "source"?, "voided_time"?, "order_id"?, "revoke"?}
  POST /_control/purchases/{token}/forget  {"reason"?: "purchaseTokenNoLongerValid" |
                                            "subscriptionPurchaseNoLongerAvailable"}: from now on 410
  GET  /_control/acknowledgements          every acknowledge call {"token", "subscription_id", "body", "status",
                                           "outcome", "time", ...}
  GET  /_control/cancellations             every subscriptionsv2.cancel call {"token", "cancellation_type", "status",
                                           "outcome", "time", ...}
  GET  /_control/calls                     {"counts": {method id: n}, "calls": [{"method", "http_method", "path",
                                           "query", "body", "status", "time"}]} (described calls only)
  GET  /_control/violations, /_control/rejections, /_control/token_requests
  POST /_control/fail                      {"method": method id, "count", "status"?: 500|503|429|409}: the next
                                           valid authenticated calls of that method get Google's error
  POST /_control/clock                     {"now"?, "advance"?} -> {"now"}: the stand-in's time (tokens, windows)
  POST /_control/access_tokens/expire      every access token issued so far stops working
  POST /_control/push_token                {"audience"?, "email"?, "email_verified"?, "issuer"?, "issued_at"?,
                                            "expires_at"?, "expires_in"?, "subject"?, "claims"?, "remove"?,
                                            "signer"?: google|next|retired|foreign|none|hs256, "kid"?}
                                           -> {"token", "authorization", "claims", "header"}
  POST /_control/push_body                 {"kind": subscription|voided|test|one_time, "purchase_token"?,
                                            "subscription_id"?, "notification_type"? (number or name),
                                            "order_id"?, "product_type"?, "refund_type"?, "sku"?,
                                            "package_name"?, "event_time"?, "message_id"?, "publish_time"?,
                                            "subscription"?, "attributes"?}
                                           -> {"body", "text", "notification", "message_id"}
  POST /_control/push                      both in one: {"token": push_token's options, ...push_body's}
                                           -> {"text", "body", "notification", "message_id", "authorization"}
  POST /_control/push_keys/rotate          {"keep_old"?: true} -> {"kid", "retired"}

Prints "READY <port>" when it listens (--port 0 picks a free port); stops when its standard input closes.
With --client-version, refuses to start unless the installed google-api-python-client is that version."""
import argparse
import collections
import copy
import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google_play_auth import GOOGLE_ISSUER, GRANT_TYPE, AccessTokens, PushSigner, Refused, ServiceAccount, check_grant
from google_play_discovery import Discovery, Undescribed
from google_play_notifications import push_body
from google_play_store import Answer, Clock, Play, google_error
from http_body import read_body

SCOPE = "https://www.googleapis.com/auth/androidpublisher"
SERVED = {
    "androidpublisher.purchases.subscriptionsv2.get",
    "androidpublisher.purchases.subscriptionsv2.cancel",
    "androidpublisher.purchases.subscriptions.acknowledge",
    "androidpublisher.purchases.voidedpurchases.list",
}
# Global parameters that change nothing the stand-in answers; the others (fields, callback, alt other than
# json, access_token, ...) are described by the document but not served, so a request with them is a violation.
HARMLESS = {"prettyPrint", "quotaUser", "$.xgafv"}
VIOLATION_REASONS = {400: "badRequest", 404: "notFound", 501: "notImplemented"}
FAILURES = {
    500: ("Internal error encountered.", "backendError"),
    503: ("The service is currently unavailable.", "backendError"),
    429: ("Rate limit exceeded.", "rateLimitExceeded"),
    409: ("The operation could not be performed since the object was already in the process of being updated.",
          "concurrentUpdate"),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--package-name", default="app.gatehouse.test", help="the app's package name")
    parser.add_argument("--project-id", default="gatehouse-standin", help="the Google Cloud project")
    parser.add_argument("--service-account-file", help="where to write the service account's key file")
    parser.add_argument("--push-audience", default="https://gatehouse.test/webhooks/google-play",
                        help="the aud of push tokens unless a test names another")
    parser.add_argument("--push-email", help="the email of push tokens (default: a service account of the project)")
    parser.add_argument("--push-subscription", default="play-rtdn-push",
                        help="the Pub/Sub subscription's short name")
    parser.add_argument("--client-version", help="the google-api-python-client version the test expects")
    options = parser.parse_args()

    discovery = Discovery()
    if options.client_version and discovery.client_version != options.client_version:
        print(f"google-api-python-client is {discovery.client_version}, the test expects {options.client_version}",
              file=sys.stderr)
        sys.exit(2)
    states = discovery.schemas["SubscriptionPurchaseV2"]["properties"]["subscriptionState"]["enum"]
    clock = Clock()
    play = Play(options.package_name, states, clock)
    account = ServiceAccount(options.project_id)
    push_email = options.push_email or f"rtdn-push@{options.project_id}.iam.gserviceaccount.com"
    signer = PushSigner(push_email)
    tokens = AccessTokens()
    subscription_name = f"projects/{options.project_id}/subscriptions/{options.push_subscription}"
    # The stand-in's records; each list and the counter are guarded by play.lock.
    records = {"violations": [], "rejections": [], "token_requests": [], "calls": []}
    counts = collections.Counter()
    fail_rules = []
    server = ThreadingHTTPServer(("127.0.0.1", options.port), None)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    token_uri = f"{base}/token"

    def record(kind, entry):
        with play.lock:
            records[kind].append({**entry, "time": clock.now()})

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, status, value, headers=None, pretty=False):
            """JSON (`value` None: an empty body), as Google sends it."""
            if value is None:
                body = b""
            else:
                body = json.dumps(value, indent=2 if pretty else None).encode()
            self.send_response(status)
            for name, header in (headers or {}).items():
                self.send_header(name, header)
            if value is not None:
                self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def violation(self, status, reason, method=None, body=None, kind="undescribed"):
            """Answers a request Gatehouse should not have sent, and records it for the test to fail on."""
            record("violations", {"kind": kind, "status": status, "method": method, "http_method": self.command,
                                  "path": self.path, "reason": reason, "body": body})
            self.reply(status, google_error(status, reason, VIOLATION_REASONS.get(status, "backendError")))

        def rejection(self, status, answer, method=None, headers=None):
            """Answers a described request as Google would refuse it, and lists it."""
            record("rejections", {"status": status, "method": method, "http_method": self.command,
                                  "path": self.path, "error": (answer or {}).get("error")})
            self.reply(status, answer, headers)

        # Google's API

        def api(self, path, query, body):
            try:
                method, params = discovery.resolve(self.command, path)
            except Undescribed as error:
                return self.violation(error.status, error.reason, body=body.decode("utf-8", "replace") or None,
                                      kind="unserved" if error.status == 501 else "undescribed")
            try:
                values = discovery.check_query(method, query)
                document = discovery.check_body(method, self.headers.get("Content-Type", ""),
                                                body.decode("utf-8"))
            except Undescribed as error:
                return self.violation(error.status, error.reason, method.id, body.decode("utf-8", "replace"))
            except UnicodeDecodeError as error:
                return self.violation(400, f"the body is not UTF-8: {error}", method.id)
            if method.id not in SERVED:
                return self.violation(501, f"{method.id} is in the document but the stand-in does not serve it",
                                      method.id, document, kind="unserved")
            unserved = sorted(name for name in values if name in discovery.globals and name not in HARMLESS
                              and not (name == "alt" and values[name] == "json"))
            if unserved:
                return self.violation(501, f"the global parameters {unserved} are in the document but the stand-in "
                                      "does not serve them", method.id, document, kind="unserved")
            denied = self.authenticate(method)
            if denied:
                return self.rejection(*denied, method=method.id,
                                      headers={"WWW-Authenticate": f'Bearer realm="{GOOGLE_ISSUER}/"'})
            call = {"method": method.id, "http_method": self.command, "path": path, "query": values,
                    "body": document, "time": clock.now()}
            status, answer = self.serve(method, params, values, document, call)
            with play.lock:
                counts[method.id] += 1
                records["calls"].append({**call, "status": status})
            if status != 200:
                return self.rejection(status, answer, method.id)
            try:
                discovery.check_response(method, answer)
            except Undescribed as error:
                return self.violation(500, f"the stand-in's own answer breaks {method.response}: {error.reason}",
                                      method.id, kind="response")
            self.reply(200, answer, pretty=values.get("prettyPrint", "true") != "false")

        def authenticate(self, method):
            """None, or the (status, body) of Google's refusal of the request's credentials."""
            scheme, _, token = self.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return 401, google_error(401, "Request is missing required authentication credential. Expected "
                                         "OAuth 2 access token, login cookie or other valid authentication "
                                         "credential.", "required", location="Authorization")
            with play.lock:
                grant = tokens.find(token.strip(), clock.now())
            if grant is None:
                return 401, google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 "
                                         "access token, login cookie or other valid authentication credential.",
                                         "authError", location="Authorization")
            if not set(method.description.get("scopes", [])) & set(grant["scopes"]):
                return 403, google_error(403, "Request had insufficient authentication scopes.",
                                         "insufficientPermissions")
            return None

        def serve(self, method, params, values, document, call):
            """(status, body) of a served method, after any failure a test asked for."""
            with play.lock:
                rule = next((r for r in fail_rules if r["method"] == method.id and r["count"] > 0), None)
                if rule:
                    rule["count"] -= 1
            if rule:
                message, reason = FAILURES[rule["status"]]
                return rule["status"], google_error(rule["status"], message, reason)
            package = params.get("packageName")
            try:
                if method.id == "androidpublisher.purchases.subscriptionsv2.get":
                    return 200, play.get_subscription(package, params["token"])
                if method.id == "androidpublisher.purchases.subscriptionsv2.cancel":
                    return 200, play.cancel(package, params["token"], document, {"time": call["time"], "package_name": package})
                if method.id == "androidpublisher.purchases.subscriptions.acknowledge":
                    return 200, play.acknowledge(package, params["subscriptionId"], params["token"], document,
                                                 {"time": call["time"], "package_name": package})
                return 200, play.list_voided(package, values)
            except Answer as answer:
                return answer.status, answer.body

        # Google's OAuth token endpoint and key server

        def token_endpoint(self, body):
            media = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
            entry = {"content_type": media}
            try:
                if media != "application/x-www-form-urlencoded":
                    raise Refused("invalid_request", f"The body is {media or 'untyped'}, not a form.")
                try:
                    form = urllib.parse.parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
                except (ValueError, UnicodeDecodeError):
                    raise Refused("invalid_request", "The body does not parse as a form.")
                claims = check_grant(form, account, token_uri, SCOPE, clock.now())
            except Refused as refused:
                record("token_requests", {**entry, "status": refused.status, "error": refused.error,
                                          "error_description": refused.description})
                return self.reply(refused.status, {"error": refused.error,
                                                   "error_description": refused.description})
            with play.lock:
                access_token, expires_in = tokens.issue(claims["iss"], claims["scope"].split(), clock.now())
            record("token_requests", {**entry, "status": 200, "claims": claims})
            self.reply(200, {"access_token": access_token, "expires_in": expires_in, "token_type": "Bearer"},
                       {"Cache-Control": "no-cache, no-store, max-age=0, must-revalidate", "Pragma": "no-cache"})

        # The control API

        def control(self, path, body):
            parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")[1:]]
            try:
                data = json.loads(body or b"{}")
                if not isinstance(data, dict):
                    raise ValueError("the body is not a JSON object")
                if self.command == "GET":
                    return self.reply(200, self.control_get(parts))
                if self.command != "POST":
                    raise Answer(405, {"error": f"{self.command} {path}"})
                return self.reply(200, self.control_post(parts, data))
            except Answer as answer:
                self.reply(answer.status, answer.body)
            except (ValueError, KeyError, TypeError, IndexError) as error:
                self.reply(400, {"error": f"bad control request: {error!r}"})

        def control_get(self, parts):
            if parts == ["info"]:
                return {"google_api_python_client": discovery.client_version, "discovery_revision": discovery.revision,
                        "discovery_document": discovery.path, "package_name": options.package_name,
                        "api_root": f"{base}/", "token_uri": token_uri, "jwks_uri": f"{base}/oauth2/v3/certs",
                        "service_account_email": account.email, "push_email": push_email,
                        "push_audience": options.push_audience, "push_subscription": subscription_name,
                        "scope": SCOPE, "now": clock.now()}
            if parts == ["service_account"]:
                return account.key_file(token_uri)
            if len(parts) == 2 and parts[0] == "purchases":
                return play.purchase(parts[1])
            if parts == ["acknowledgements"]:
                with play.lock:
                    return {"acknowledgements": copy.deepcopy(play.acknowledgements)}
            if parts == ["cancellations"]:
                with play.lock:
                    return {"cancellations": copy.deepcopy(play.cancellations)}
            if parts == ["calls"]:
                with play.lock:
                    return {"counts": dict(counts), "calls": copy.deepcopy(records["calls"])}
            if len(parts) == 1 and parts[0] in ("violations", "rejections", "token_requests"):
                with play.lock:
                    return {parts[0]: copy.deepcopy(records[parts[0]])}
            raise Answer(404, {"error": f"no control endpoint GET /_control/{'/'.join(parts)}"})

        def control_post(self, parts, data):
            if parts == ["purchases"]:
                return play.create_purchase(data)
            if len(parts) == 2 and parts[0] == "purchases":
                return play.update_purchase(parts[1], data)
            if len(parts) == 3 and parts[0] == "purchases" and parts[2] == "void":
                return play.void(parts[1], data)
            if len(parts) == 3 and parts[0] == "purchases" and parts[2] == "forget":
                return play.forget(parts[1], data)
            if parts == ["fail"]:
                status = int(data.get("status", 500))
                if data["method"] not in SERVED or status not in FAILURES:
                    raise ValueError(f"method is one of {sorted(SERVED)}, status one of {sorted(FAILURES)}")
                with play.lock:
                    fail_rules.append({"method": data["method"], "count": int(data["count"]), "status": status})
                return {"ok": True}
            if parts == ["clock"]:
                with play.lock:
                    return {"now": clock.set(data.get("now"), data.get("advance"))}
            if parts == ["access_tokens", "expire"]:
                with play.lock:
                    return {"expired": tokens.expire_all()}
            if parts == ["push_token"]:
                with play.lock:
                    return signer.mint(data, options.push_audience, clock.now())
            if parts == ["push_body"]:
                return self.push_body(data)
            if parts == ["push"]:
                with play.lock:
                    minted = signer.mint(data.pop("token", {}), options.push_audience, clock.now())
                return {**self.push_body(data), "authorization": minted["authorization"]}
            if parts == ["push_keys", "rotate"]:
                with play.lock:
                    return signer.rotate(bool(data.get("keep_old", True)))
            raise Answer(404, {"error": f"no control endpoint POST /_control/{'/'.join(parts)}"})

        def push_body(self, data):
            return push_body(data, options.package_name, subscription_name, clock.now())

        def route(self):
            try:
                body = read_body(self)
            except (ValueError, OSError) as error:
                self.close_connection = True
                return self.violation(400, f"cannot read the body: {error}")
            path, _, query = self.path.partition("?")
            if path.startswith("/_control/"):
                return self.control(path, body)
            if path == "/token" and self.command == "POST":
                return self.token_endpoint(body)
            if path == "/oauth2/v3/certs" and self.command == "GET":
                with play.lock:
                    keys = signer.jwks()
                return self.reply(200, keys, {"Cache-Control": "public, max-age=300, must-revalidate"})
            if path == "/.well-known/openid-configuration" and self.command == "GET":
                return self.reply(200, {"issuer": GOOGLE_ISSUER, "jwks_uri": f"{base}/oauth2/v3/certs",
                                        "token_endpoint": token_uri, "id_token_signing_alg_values_supported":
                                        ["RS256"], "grant_types_supported": [GRANT_TYPE]})
            self.api(path, query, body)

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = route

        def log_message(self, *args):
            pass  # quiet: /_control/calls, /_control/violations and /_control/rejections are the record

    server.RequestHandlerClass = Handler
    server.daemon_threads = True
    if options.service_account_file:
        with open(options.service_account_file, "w") as file:
            json.dump(account.key_file(token_uri), file, indent=2)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"READY {server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
