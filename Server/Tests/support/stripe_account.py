"""The Stripe account behind stripe_standin.py: customers, checkout and portal sessions, subscriptions and
events in memory, Stripe's operations on them and the stand-in's control operations. Its public methods
take `lock` themselves; HTTP, validation, idempotency and recording stay in stripe_standin.py."""
import copy
import hashlib
import hmac
import json
import threading
import time

import stripe

import stripe_objects as objects

CUSTOMER_DELAY = 0.05  # seconds a customer creation takes, holding its idempotency key but not the lock
LISTED = {"ended": {"canceled", "incomplete_expired"}}  # GET /v1/subscriptions?status= beyond one status


class Answer(Exception):
    """An answer decided part way: its status, JSON body and headers."""

    def __init__(self, status, body, headers=None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def missing(kind, identifier, param="id"):
    return Answer(404 if param == "id" else 400, objects.error(
        "invalid_request_error", f"No such {kind}: '{identifier}'", "resource_missing", param))


class Account:
    """The Stripe account's state. Every field is guarded by `lock`."""

    def __init__(self, base_url, api_version, webhook_secret):
        self.base_url, self.api_version, self.webhook_secret = base_url, api_version, webhook_secret
        self.lock = threading.Lock()
        self.customers, self.sessions, self.subscriptions = {}, {}, {}
        self.checkout = {}  # session id -> (price, subscription_data.metadata), kept off the session object
        self.charges = {}  # customer id -> (charge id, payment intent): one charge per customer, reused
        self.events = {}  # event id -> payload text, byte for byte as it will be delivered
        self.idempotency = {}  # key -> {"fingerprint", "answer": None while in progress, else (status, body)}
        self.requests, self.rejections, self.failures, self.fail_rules = [], [], [], []

    # Stripe's operations; each returns the JSON body of a 200 or raises Answer.

    def create_customer(self, form):
        time.sleep(CUSTOMER_DELAY)
        metadata = form.get("metadata") or {}
        created = objects.customer(form.get("email"), metadata)
        with self.lock:
            self.customers[created["id"]] = created
            return copy.deepcopy(created)

    def create_checkout_session(self, form):
        with self.lock:
            if form.get("customer") and form["customer"] not in self.customers:
                raise missing("customer", form["customer"], "customer")
            if form.get("mode") == "subscription" and not form.get("line_items"):
                raise Answer(400, objects.error("invalid_request_error", "`line_items` is required in "
                                                "`subscription` mode.", "parameter_missing", "line_items"))
            session = objects.checkout_session(self.base_url, form)
            price = (form.get("line_items") or [{}])[0].get("price")
            self.sessions[session["id"]] = session
            self.checkout[session["id"]] = (price, form.get("subscription_data", {}).get("metadata", {}))
            return copy.deepcopy(session)

    def create_portal_session(self, form):
        with self.lock:
            if not form.get("customer"):
                raise Answer(400, objects.error("invalid_request_error", "Missing required param: customer.",
                                                "parameter_missing", "customer"))
            if form["customer"] not in self.customers:
                raise missing("customer", form["customer"], "customer")
            return objects.portal_session(self.base_url, form["customer"], form.get("return_url"))

    def list_subscriptions(self, query):
        status, limit = query.get("status"), int(query.get("limit", 10))

        def listed(sub):  # no status: all but canceled ones; "all": every one; "ended": canceled or expired
            if query.get("customer", sub["customer"]) != sub["customer"]:
                return False
            if status is None:
                return sub["status"] != "canceled"
            return status == "all" or sub["status"] in LISTED.get(status, {status})

        with self.lock:
            found = [s for s in reversed(self.subscriptions.values()) if listed(s)]  # newest first
            return {"object": "list", "data": copy.deepcopy(found[:limit]), "has_more": len(found) > limit,
                    "url": "/v1/subscriptions"}

    def retrieve_subscription(self, sub_id):
        with self.lock:
            if sub_id not in self.subscriptions:
                raise missing("subscription", sub_id)
            return copy.deepcopy(self.subscriptions[sub_id])

    def cancel_subscription(self, sub_id):
        with self.lock:
            sub = self.subscriptions.get(sub_id)
            if sub is None or sub["status"] == "canceled":  # a canceled subscription cannot be canceled again
                raise missing("subscription", sub_id)
            sub.update(status="canceled", canceled_at=objects.now(), ended_at=objects.now())
            sub["cancellation_details"]["reason"] = "cancellation_requested"
            return copy.deepcopy(sub)

    # The control API; each returns a JSON body or raises Answer.

    def complete_checkout(self, session_id, body):
        with self.lock:
            session = self.sessions.get(session_id)
            if session is None:
                raise Answer(404, {"error": f"no checkout session {session_id}"})
            if session["status"] != "open":
                raise Answer(409, {"error": f"checkout session {session_id} is {session['status']}"})
            price, metadata = self.checkout[session_id]
            sub = self._add_subscription(session["customer"], price, body, dict(metadata))
            session.update(status="complete", subscription=sub["id"],
                           payment_status="no_payment_required" if body.get("trial_end") else "paid")
            return {"subscription": copy.deepcopy(sub)}

    def create_subscription(self, body):
        with self.lock:
            if body["customer"] not in self.customers:  # a customer made in the dashboard too
                self.customers[body["customer"]] = dict(objects.customer(None, {}), id=body["customer"])
            sub = self._add_subscription(body["customer"], body["price"], body, body.get("metadata", {}))
            return {"subscription": copy.deepcopy(sub)}

    def _add_subscription(self, customer_id, price, body, metadata):
        sub = objects.subscription(customer_id, price, body.get("status", "active"), int(body["period_start"]),
                                   int(body["period_end"]), metadata, body.get("trial_end"))
        self.subscriptions[sub["id"]] = sub
        return sub

    def update_subscription(self, sub_id, body):
        with self.lock:
            sub = self.subscriptions.get(sub_id)
            if sub is None:
                raise Answer(404, {"error": f"no subscription {sub_id}"})
            item = sub["items"]["data"][0]
            for key in ("period_start", "period_end"):
                if key in body:
                    item[f"current_{key}"] = int(body[key])
            sub.update({k: body[k] for k in ("status", "cancel_at_period_end", "trial_end", "canceled_at",
                                             "ended_at") if k in body})
            if body.get("status") == "canceled":
                sub["canceled_at"] = sub["canceled_at"] or objects.now()
                sub["ended_at"] = sub["ended_at"] or objects.now()
            if "cancel_at_period_end" in body:  # Stripe sets cancel_at to the period's end with it
                sub["cancel_at"] = item["current_period_end"] if sub["cancel_at_period_end"] else None
            return {"subscription": copy.deepcopy(sub)}

    def make_event(self, body):
        kind = body["type"]
        with self.lock:
            sub = self.subscriptions.get(body.get("subscription"))
            if body.get("subscription") and sub is None:
                raise Answer(404, {"error": f"no subscription {body['subscription']}"})
            if kind.startswith("customer.subscription.") and sub:
                snapshot = sub
            elif kind.startswith("checkout.session.") and body.get("session") in self.sessions:
                snapshot = self.sessions[body["session"]]
            elif kind in ("invoice.paid", "invoice.payment_failed") and sub:
                snapshot = objects.invoice(sub, paid=kind == "invoice.paid")
                sub["latest_invoice"] = snapshot["id"]
            elif kind in ("charge.refunded", "charge.dispute.created") and (sub or body.get("customer")):
                customer_id = sub["customer"] if sub else body["customer"]
                charge_id, intent = self.charges.setdefault(customer_id, (objects.new_id("ch_"),
                                                                          objects.new_id("pi_")))
                snapshot = (objects.charge(charge_id, customer_id, intent, refunded=True)
                            if kind == "charge.refunded" else objects.dispute(charge_id, intent))
            else:
                raise Answer(400, {"error": f"cannot make a {kind} event from {body}"})
            event = objects.event(kind, copy.deepcopy(snapshot), self.api_version, body.get("created"))
            payload = json.dumps(event, indent=2)  # Stripe delivers pretty-printed JSON
            self.events[event["id"]] = payload
            return {"id": event["id"], "payload": payload}

    def sign(self, body):
        with self.lock:
            payload = self.events.get(body.get("event"))
        if payload is None:
            raise Answer(404, {"error": f"no event {body.get('event')}"})
        keys = body.get("secrets") or [body.get("secret") or self.webhook_secret]
        timestamp = int(body.get("timestamp") or time.time())
        signed = f"{timestamp}.{payload}".encode()
        header = ",".join([f"t={timestamp}"] + [
            "v1=" + hmac.new(key.encode(), signed, hashlib.sha256).hexdigest() for key in keys])
        for key in keys:  # the format must be Stripe's, so Stripe's own package must accept it
            try:
                stripe.Webhook.construct_event(payload, header, key, tolerance=None if "timestamp" in body else 300)
            except Exception as error:
                raise Answer(500, {"error": f"stripe.Webhook.construct_event rejects it: {error!r}"})
        return {"payload": payload, "header": header}

    def take_failure(self, method, path):
        with self.lock:
            for rule in self.fail_rules:
                if rule["count"] > 0 and rule["method"] == method and path.startswith(rule["path_prefix"]):
                    rule["count"] -= 1
                    return rule
        return None
