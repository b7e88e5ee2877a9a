"""A stand-in for Stripe's API, for Gatehouse's billing tests (http.server, in memory).

Stripe's API, under /v1/: every request must carry `Authorization: Bearer <--secret-key>` (or Basic with
the key as user; else 401) and `Stripe-Version: <the spec's info.version>`, and must be an operation of
--spec (Server/Tests/support/stripe-openapi.json, a trimmed copy of stripe/openapi's spec3.json) with
parameters that fit its schemas (stripe_validation.py). Anything else is answered 400 with Stripe's error
shape and recorded as a rejection {"status", "method", "path", "reason"}. Accepted requests are recorded
{"method", "path", "query", "form", "idempotency_key", "stripe_version", "time", "status", "replayed"}
(query and form flattened: the original bracket keys to their values).

  POST /v1/customers                customer (creating one takes ~50 ms, so parallel requests overlap)
  POST /v1/checkout/sessions        checkout.session, url http://127.0.0.1:<port>/pay/<id>
  POST /v1/billing_portal/sessions  billing_portal.session, url http://127.0.0.1:<port>/portal/<id>
  GET  /v1/subscriptions            list (customer, status, limit)
  GET  /v1/subscriptions/{id}       subscription
  DELETE /v1/subscriptions/{id}     cancels at once

Idempotency-Key (POST and DELETE), as Stripe honours it: the same key and parameters replay the first
answer with `Idempotent-Replayed: true`; other parameters are 400 idempotency_error; while the first
request is still running, 409 idempotency_error idempotency_key_in_use. Requests that fail validation
or are failed on purpose (/_control/fail) do not use up the key.

The control API, under /_control/ (JSON in and out, not Stripe's):
  POST /_control/checkout/{session}/complete  {"status", "period_start", "period_end", "trial_end"?}
  POST /_control/subscriptions                {"customer", "price", "status", "period_start", "period_end",
                                               "metadata"?}  (one made in Stripe's dashboard)
  POST /_control/subscriptions/{id}           any of status, cancel_at_period_end, period_start, period_end,
                                              trial_end, canceled_at, ended_at
  POST /_control/events   {"type", "subscription"?, "session"?, "customer"?, "created"?} -> {"id", "payload"}
  POST /_control/sign     {"event", "secret"? | "secrets"?, "timestamp"?} -> {"payload", "header"}: signed as
                          Stripe signs, then checked with the official package's Webhook.construct_event
  POST /_control/fail     {"method", "path_prefix", "count", "stored"?}: the next matching valid requests get 500
                          (with "stored", kept under the request's idempotency key and replayed, as
                          Stripe keeps a 500 that happened once the request had begun)
  GET  /_control/requests, /_control/rejections, /_control/failures

Prints "READY <port>" when it listens (--port 0 picks a free port); stops when its standard input closes."""
import argparse
import base64
import copy
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import stripe_objects as objects
from stripe_account import Account, Answer
from stripe_validation import Invalid, Spec, nest
from http_body import read_body


def authorized(header, key):
    """`Bearer <key>`, or Basic with the key as user (any password), as the spec's securitySchemes allow."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return secrets.compare_digest(value.strip().encode(), key.encode())
    if scheme.lower() == "basic":
        try:
            user = base64.b64decode(value.strip(), validate=True).decode().partition(":")[0]
        except ValueError:  # not base64, or not UTF-8
            return False
        return secrets.compare_digest(user.encode(), key.encode())
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--secret-key", required=True, help="the sk_test_ key requests must carry")
    parser.add_argument("--spec", required=True, help="the trimmed OpenAPI description, stripe-openapi.json")
    parser.add_argument("--webhook-secret", required=True, help="the default whsec_ signing secret")
    options = parser.parse_args()
    spec = Spec(options.spec)
    # Stripe's operations by method and path template; `account` is made below, once the port is known.
    operations = {
        ("POST", "/v1/customers"): lambda form, query, ident: account.create_customer(form),
        ("POST", "/v1/checkout/sessions"): lambda form, query, ident: account.create_checkout_session(form),
        ("POST", "/v1/billing_portal/sessions"): lambda form, query, ident: account.create_portal_session(form),
        ("GET", "/v1/subscriptions"): lambda form, query, ident: account.list_subscriptions(query),
        ("GET", "/v1/subscriptions/{subscription_exposed_id}"):
            lambda form, query, ident: account.retrieve_subscription(ident),
        ("DELETE", "/v1/subscriptions/{subscription_exposed_id}"):
            lambda form, query, ident: account.cancel_subscription(ident),
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, status, value, headers=None, content_type="application/json"):
            body = value.encode() if isinstance(value, str) else json.dumps(value).encode()
            self.send_response(status)
            for name, header in {"Request-Id": objects.new_id("req_", 14), **(headers or {})}.items():
                self.send_header(name, header)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def read_body(self):
            return read_body(self)

        def reject(self, status, reason, kind="invalid_request_error", param=None):
            with account.lock:
                account.rejections.append({"status": status, "method": self.command, "path": self.path,
                                           "reason": reason})
            self.reply(status, objects.error(kind, reason, param=param))

        def api(self, path, query, body):
            authorization = self.headers.get("Authorization", "")
            if not authorized(authorization, options.secret_key):
                return self.reject(401, "Invalid API Key provided" if authorization else
                                   "You did not provide an API key. Provide it in the Authorization header.")
            version = self.headers.get("Stripe-Version")
            if version != spec.version:
                return self.reject(400, f"Stripe-Version is {version!r}; the stand-in's spec is {spec.version}")
            content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
            try:
                template, query_pairs, body_pairs = spec.validate(self.command, path, query, content_type,
                                                                  body.decode("utf-8"))
            except (Invalid, UnicodeDecodeError) as error:
                return self.reject(400, getattr(error, "reason", str(error)), param=getattr(error, "param", None))
            key = self.headers.get("Idempotency-Key") if self.command in ("POST", "DELETE") else None
            record = {"method": self.command, "path": path, "query": dict(query_pairs), "form": dict(body_pairs),
                      "idempotency_key": key, "stripe_version": version, "time": time.time()}
            failure = account.take_failure(self.command, path)
            if failure:
                error = objects.error("api_error", "Failing on purpose (/_control/fail).")
                with account.lock:
                    account.failures.append({**record, "status": 500})
                    if failure.get("stored") and key and key not in account.idempotency:
                        # As Stripe does with a 500 once the request began: the answer is kept
                        # under the key and replayed for 24 hours, whatever happens after.
                        fingerprint = (self.command, path, sorted(query_pairs), sorted(body_pairs))
                        account.idempotency[key] = {"fingerprint": fingerprint, "answer": (500, error)}
                return self.reply(500, error, {"Idempotency-Key": key} if key else {})
            status, answer, headers = self.idempotent(key, (self.command, path, sorted(query_pairs),
                                                            sorted(body_pairs)), template, path,
                                                      nest(body_pairs), nest(query_pairs))
            with account.lock:
                account.requests.append({**record, "status": status,
                                         "replayed": headers.get("Idempotent-Replayed") == "true"})
            self.reply(status, answer, {"Stripe-Version": spec.version, **headers})

        def idempotent(self, key, fingerprint, template, path, form, query):
            """Runs the operation once per idempotency key, as Stripe does; returns (status, body, headers)."""
            headers = {"Idempotency-Key": key} if key else {}
            if key:
                with account.lock:
                    entry = account.idempotency.get(key)
                    if entry is None:  # the first request with this key: it runs, holding the key
                        account.idempotency[key] = {"fingerprint": fingerprint, "answer": None}
                    elif entry["fingerprint"] != fingerprint:
                        return 400, objects.error("idempotency_error", "Keys for idempotent requests can only be "
                                                  "used with the same parameters they were first used with. Try "
                                                  f"using a key other than '{key}' if you meant to execute a "
                                                  "different request."), headers
                    elif entry["answer"] is None:
                        return 409, objects.error("idempotency_error", "There is currently another in-progress "
                                                  f"request using this idempotent key: {key}. Please try again "
                                                  "later.", "idempotency_key_in_use"), headers
                    else:
                        return *entry["answer"], {**headers, "Idempotent-Replayed": "true"}
            try:
                ident = urllib.parse.unquote(path.rsplit("/", 1)[-1])
                answer = (200, operations[(self.command, template)](form, query, ident))
            except Answer as early:
                answer = (early.status, early.body)
            except BaseException:
                if key:  # nothing was done: the key is free again
                    with account.lock:
                        account.idempotency.pop(key, None)
                raise
            if key:
                with account.lock:
                    account.idempotency[key]["answer"] = answer
            return *answer, headers

        def control(self, path, body):
            parts = path.strip("/").split("/")[1:]
            try:
                data = json.loads(body or b"{}")
                if self.command == "GET" and parts[0] in ("requests", "rejections", "failures"):
                    with account.lock:
                        listed = copy.deepcopy(getattr(account, parts[0]))
                    return self.reply(200, {parts[0]: listed})
                if self.command != "POST":
                    raise Answer(405, {"error": f"{self.command} {path}"})
                if parts[0] == "checkout" and len(parts) == 3 and parts[2] == "complete":
                    return self.reply(200, account.complete_checkout(parts[1], data))
                if parts == ["subscriptions"]:
                    return self.reply(200, account.create_subscription(data))
                if parts[0] == "subscriptions" and len(parts) == 2:
                    return self.reply(200, account.update_subscription(parts[1], data))
                if parts == ["events"]:
                    return self.reply(200, account.make_event(data))
                if parts == ["sign"]:
                    return self.reply(200, account.sign(data))
                if parts == ["fail"]:
                    with account.lock:
                        account.fail_rules.append({"method": data["method"], "path_prefix": data["path_prefix"],
                                                   "count": int(data["count"]), "stored": bool(data.get("stored"))})
                    return self.reply(200, {"ok": True})
                raise Answer(404, {"error": f"no control endpoint {self.command} {path}"})
            except Answer as answer:
                self.reply(answer.status, answer.body)
            except (ValueError, KeyError, TypeError, IndexError) as error:
                self.reply(400, {"error": f"bad control request: {error!r}"})

        def route(self):
            try:
                body = self.read_body()
            except (ValueError, OSError) as error:
                self.close_connection = True
                return self.reject(400, f"cannot read the body: {error}")
            path, _, query = self.path.partition("?")
            if path.startswith("/v1/"):
                return self.api(path, query, body)
            if path.startswith("/_control/"):
                return self.control(path, body)
            if path.startswith(("/pay/", "/portal/")) and self.command == "GET":  # where a browser lands
                return self.reply(200, f"<!doctype html><title>Stripe stand-in</title><p>{path}</p>",
                                  content_type="text/html; charset=utf-8")
            self.reject(404, f"Unrecognized request URL ({self.command}: {path})")

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = route

        def log_message(self, *args):
            pass  # quiet: /_control/requests and /_control/rejections are the record

    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    server.daemon_threads = True
    account = Account(f"http://127.0.0.1:{server.server_address[1]}", spec.version, options.webhook_secret)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"READY {server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
