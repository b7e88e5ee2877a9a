"""An app's auth-hook endpoint for Gatehouse's hook tests (http.server).

Every POST must be signed as Standard Webhooks under --secret: the signature is checked with the
`standardwebhooks` package (webhook-id, webhook-timestamp, webhook-signature), and an unsigned or
wrongly signed request is answered 401 and recorded in --rejects. A verified call is appended to
--out as one JSON line {"webhook_id", "path", "body"} (the body parsed as JSON), then answered as
the plan file (--plan, read again for every call, so a test changes it between requests) says:

  {"status": 200, "body": {...}}        the JSON answer (default {"decision": "allow"})
  {"raw": "text"}                       these bytes instead of JSON
  {"delay_ms": 7000}                    sleeps first (a hook slower than Gatehouse waits)
  {"redirect": "http://…"}              307 to that place
  {"pad": 100000}                       a JSON answer padded past that many bytes
  {"add_claims": {...}}                 Supabase's custom access token hook as its documentation
                                        writes one: the claims it was sent, with these added
  {"by_path": {"/created": {...}}}      a plan per request path (the rest as above)

Prints "READY <port>" when it listens (--port 0 picks a free port); stops when its standard
input closes."""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook
from http_body import read_body


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rejects", required=True)
    options = parser.parse_args()
    webhook = Webhook(options.secret)
    lock = threading.Lock()

    def append(path, record):
        with lock, open(path, "a") as handle:
            handle.write(json.dumps(record) + "\n")

    def plan_for(path):
        try:
            with open(options.plan) as handle:
                plan = json.load(handle)
        except (OSError, ValueError):
            plan = {}
        return {**plan, **plan.get("by_path", {}).get(path, {})}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, body, headers=()):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            raw = read_body(self)
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                webhook.verify(raw, headers)
            except Exception as error:  # the package raises its own verification errors
                append(options.rejects, {"reason": str(error), "path": self.path})
                self.answer(401, b"unsigned")
                return
            append(options.out, {"webhook_id": headers.get("webhook-id"), "path": self.path, "body": json.loads(raw)})
            plan = plan_for(self.path)
            if plan.get("delay_ms"):
                time.sleep(plan["delay_ms"] / 1000)
            if plan.get("redirect"):
                self.answer(307, b"", [("Location", plan["redirect"])])
                return
            if "raw" in plan:
                self.answer(plan.get("status", 200), plan["raw"].encode(), [("Content-Type", "application/json")])
                return
            body = plan.get("body", {"decision": "allow"})
            if "add_claims" in plan:
                body = {"claims": {**json.loads(raw)["claims"], **plan["add_claims"]}}
            encoded = json.dumps(body).encode()
            if plan.get("pad"):
                encoded = json.dumps({**body, "padding": "x" * plan["pad"]}).encode()
            self.answer(plan.get("status", 200), encoded, [("Content-Type", "application/json")])

    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"READY {server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
