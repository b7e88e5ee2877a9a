"""A receiver for Gatehouse's SMS delivery tests (http.server), in one of two modes:

  --mode hook --secret whsec_...    an app's send hook: POST to any path, signed as Standard
      Webhooks (checked with the `standardwebhooks` package: webhook-id, webhook-timestamp,
      webhook-signature), with the JSON body {"type": "sms.send", "data": {"to", "text", "code",
      "purpose"}} (purpose sign_in or verify_phone; a notice has purpose notice and no code).
      Answers 204. Records
      {"webhook_id", "to", "text", "code", "purpose"}.
  --mode twilio --account-sid AC... --auth-token ...    Twilio's Messages API: only
      POST /2010-04-01/Accounts/{AccountSid}/Messages.json, HTTP Basic auth as sid:token, a form
      body with To (E.164), Body and exactly one of From or MessagingServiceSid. Answers 201 with a
      message resource shaped like Twilio's, errors with Twilio's JSON error shape. Records
      {"sid", "to", "from", "messaging_service_sid", "body"}.

Each accepted message is appended to --out as one JSON line; each rejected request to --rejects
as {"status", "reason", "method", "path"}. With --fail-first N the first N otherwise valid
requests are answered --fail-status (500 unless given) and appended to --failures (the record
they would have made, plus "status") instead. With --redirect-to URL every valid request is
answered 307 (or --redirect-status) with that Location, and recorded in --failures too. Prints "READY <port>" when it listens (--port 0 picks a free port);
stops when its standard input closes."""
import argparse
import base64
import email.utils
import json
import re
import secrets
import sys
import threading
import urllib.parse
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook
from http_body import read_body

PURPOSES = {"sign_in", "verify_phone"}
E164 = re.compile(r"\+[1-9][0-9]{1,14}")
MESSAGES_PATH = re.compile(r"/2010-04-01/Accounts/([^/]+)/Messages\.json")


class Rejected(Exception):
    """A request that is not accepted: its HTTP status, the reason recorded and, in twilio mode,
    the Twilio error code of the answer."""

    def __init__(self, status, reason, code=None, headers=None, message=None):
        super().__init__(reason)
        self.status, self.reason, self.code, self.headers = status, reason, code, headers or {}
        self.message = message or reason  # what a twilio-mode answer says (Twilio's wording)


def twilio_error(code, message, status):
    return {"code": code, "message": message, "more_info": f"https://www.twilio.com/docs/errors/{code}",
            "status": status}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=["hook", "twilio"], required=True)
    parser.add_argument("--out", required=True, help="accepted messages, one JSON line each")
    parser.add_argument("--rejects", help="rejected requests, one JSON line each")
    parser.add_argument("--failures", help="requests answered 500 by --fail-first, one JSON line each")
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--fail-status", type=int, default=500)
    parser.add_argument("--redirect-to", help="answer every valid request with a redirect to this URL")
    parser.add_argument("--redirect-status", type=int, default=307)
    parser.add_argument("--secret", help="hook mode: the whsec_ signing secret")
    parser.add_argument("--account-sid", help="twilio mode: the AC account sid")
    parser.add_argument("--auth-token", help="twilio mode: the auth token")
    options = parser.parse_args()
    if options.mode == "hook" and not options.secret:
        parser.error("--mode hook needs --secret")
    if options.mode == "twilio" and not (options.account_sid and options.auth_token):
        parser.error("--mode twilio needs --account-sid and --auth-token")
    webhook = Webhook(options.secret) if options.mode == "hook" else None
    expected_authorization = None
    if options.mode == "twilio":
        credentials = f"{options.account_sid}:{options.auth_token}".encode()
        expected_authorization = base64.b64encode(credentials).decode()

    lock = threading.Lock()
    failed = [0]

    def append(path, record):
        if not path:
            return
        line = json.dumps(record) + "\n"
        with lock, open(path, "a") as out:
            out.write(line)
            out.flush()

    def verify_hook(handler, body):
        headers = {name.lower(): value for name, value in handler.headers.items()}
        try:
            webhook.verify(body, headers, json_parse=False)
        except Exception as error:  # WebhookVerificationError, or headers too malformed to parse
            raise Rejected(401, f"signature: {type(error).__name__}: {error}")
        content_type = handler.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise Rejected(400, f"Content-Type is {content_type or 'missing'}, not application/json")
        try:
            payload = json.loads(body)
        except ValueError as error:
            raise Rejected(400, f"the body is not JSON: {error}")
        if not isinstance(payload, dict) or payload.get("type") != "sms.send":
            raise Rejected(400, "the body is not {\"type\": \"sms.send\", ...}")
        data = payload.get("data")
        if not isinstance(data, dict):
            raise Rejected(400, "data is not an object")
        # A code's SMS carries its code; a notice (a number that left an account) carries none.
        notice = data.get("purpose") == "notice"
        for key in ("to", "text", "purpose") + (() if notice else ("code",)):
            if not isinstance(data.get(key), str) or not data[key]:
                raise Rejected(400, f"data.{key} is missing or not a non-empty string")
        if notice and "code" in data:
            raise Rejected(400, "a notice carries no code")
        if not notice and data["purpose"] not in PURPOSES:
            raise Rejected(400, f"data.purpose {data['purpose']!r} is not sign_in, verify_phone or notice")
        return {"webhook_id": headers["webhook-id"], "to": data["to"], "text": data["text"],
                "code": data.get("code"), "purpose": data["purpose"]}

    def verify_twilio(handler, body):
        authorization = handler.headers.get("Authorization", "")
        # No WWW-Authenticate in the answer: swift-corelibs-foundation's URLSession (the tests' HTTP
        # helper) never completes a request answered 401 with a Basic challenge.
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "basic" or not secrets.compare_digest(value.strip(), expected_authorization):
            raise Rejected(401, f"authentication: {'wrong credentials' if authorization else 'no Authorization'}",
                           20003, message="Authenticate")
        match = MESSAGES_PATH.fullmatch(handler.path.split("?")[0])
        if not match:
            raise Rejected(404, f"no such resource: {handler.path}", 20404,
                           message=f"The requested resource {handler.path} was not found")
        if match.group(1) != options.account_sid:
            raise Rejected(404, f"account sid {match.group(1)} in the path is not {options.account_sid}", 20404,
                           message=f"The requested resource {handler.path} was not found")
        content_type = handler.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            raise Rejected(400, f"Content-Type is {content_type or 'missing'}, not application/x-www-form-urlencoded",
                           20001)
        try:
            form = urllib.parse.parse_qs(body.decode("ascii"), keep_blank_values=True, strict_parsing=bool(body),
                                         encoding="utf-8", errors="strict")
        except (UnicodeDecodeError, ValueError) as error:
            raise Rejected(400, f"the form body does not parse: {error}", 20001)
        for key, values in form.items():
            if len(values) > 1:
                raise Rejected(400, f"{key} is given {len(values)} times", 20001)
        fields = {key: values[0] for key, values in form.items()}
        to, text = fields.get("To", ""), fields.get("Body", "")
        sender, service = fields.get("From", ""), fields.get("MessagingServiceSid", "")
        if not to:
            raise Rejected(400, "A 'To' phone number is required.", 21604)
        if not E164.fullmatch(to):
            raise Rejected(400, f"The 'To' number {to} is not a valid phone number.", 21211)
        if not text:
            raise Rejected(400, "Message body is required.", 21602)
        if len(text) > 1600:
            raise Rejected(400, "The concatenated message body exceeds the 1600 character limit.", 21617)
        if not sender and not service:
            raise Rejected(400, "A 'From' phone number or a MessagingServiceSid is required.", 21603)
        if sender and service:
            raise Rejected(400, "Give exactly one of 'From' and 'MessagingServiceSid', not both.", 21603)
        if service and not re.fullmatch(r"MG[0-9a-fA-F]{32}", service):
            raise Rejected(400, f"The Messaging Service Sid {service} is invalid.", 21701)
        return {"sid": "SM" + secrets.token_hex(16), "to": to, "from": sender or None,
                "messaging_service_sid": service or None, "body": text}

    def message_resource(record):
        now = email.utils.format_datetime(datetime.now(timezone.utc))  # "Tue, 26 Jul 2016 12:50:07 +0000"
        segments = 1 if len(record["body"]) <= 160 else -(-len(record["body"]) // 153)
        return {
            "account_sid": options.account_sid, "api_version": "2010-04-01", "body": record["body"],
            "date_created": now, "date_sent": None, "date_updated": now, "direction": "outbound-api",
            "error_code": None, "error_message": None, "from": record["from"],
            "messaging_service_sid": record["messaging_service_sid"], "num_media": "0",
            "num_segments": str(segments), "price": None, "price_unit": "USD", "sid": record["sid"],
            "status": "queued",
            "subresource_uris": {
                "media": f"/2010-04-01/Accounts/{options.account_sid}/Messages/{record['sid']}/Media.json"},
            "to": record["to"],
            "uri": f"/2010-04-01/Accounts/{options.account_sid}/Messages/{record['sid']}.json",
        }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, status, body=b"", content_type="application/json", headers=None):
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if status != 204:
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 204:
                self.wfile.write(body)

        def reply_json(self, status, value, headers=None):
            self.reply(status, json.dumps(value).encode(), headers=headers)

        def read_body(self):
            return read_body(self)

        def reject(self, rejected):
            append(options.rejects, {"status": rejected.status, "reason": rejected.reason,
                                     "method": self.command, "path": self.path})
            if options.mode == "twilio":
                self.reply_json(rejected.status, twilio_error(rejected.code or 20001, rejected.message, rejected.status),
                                rejected.headers)
            else:
                self.reply(rejected.status, rejected.reason.encode(), "text/plain; charset=utf-8", rejected.headers)

        def do_POST(self):
            try:
                body = self.read_body()
            except (ValueError, OSError) as error:
                self.close_connection = True
                return self.reject(Rejected(400, f"cannot read the body: {error}", 20001))
            try:
                record = verify_hook(self, body) if options.mode == "hook" else verify_twilio(self, body)
            except Rejected as rejected:
                return self.reject(rejected)
            if options.redirect_to:
                append(options.failures, {**record, "status": options.redirect_status})
                return self.reply(options.redirect_status, b"", "text/plain; charset=utf-8", {"Location": options.redirect_to})
            with lock:
                fail = failed[0] < options.fail_first
                if fail:
                    failed[0] += 1
            if fail:
                status = options.fail_status
                append(options.failures, {**record, "status": status})
                if options.mode == "twilio":
                    return self.reply_json(status, twilio_error(20500 if status >= 500 else 21211, "failing on purpose", status))
                return self.reply(status, b"failing on purpose (--fail-first)", "text/plain; charset=utf-8")
            append(options.out, record)
            if options.mode == "twilio":
                self.reply_json(201, message_resource(record))
            else:
                self.reply(204)

        def other(self):
            self.read_body()
            self.reject(Rejected(405, f"method {self.command} is not allowed", 20004, {"Allow": "POST"}))

        do_GET = do_PUT = do_PATCH = do_DELETE = other

        def log_message(self, *args):
            pass  # quiet: the files are the record

    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"READY {server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
