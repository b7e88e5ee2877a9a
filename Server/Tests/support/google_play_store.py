"""The Play Console behind google_play_standin.py: subscription purchases, voided purchases and acknowledgements
in memory, the three API methods Gatehouse uses on them, and the control operations that play the buyer and
Google (a purchase, a renewal, a cancellation, a refund, a token Google no longer knows).

Answers are built as Google writes them (proto3 JSON: unset fields left out, int64 as strings, times in RFC 3339
UTC), and the stand-in checks each against the discovery document before it is sent. Public methods take
`lock` themselves; HTTP, validation, authentication and recording stay in google_play_standin.py."""
import base64
import copy
import datetime
import json
import secrets
import string
import threading
import time

VOIDED_WINDOW = 30 * 24 * 3600  # voidedpurchases.list looks back at most 30 days
VOIDED_PAGE = 1000  # its default and largest page
SKEW = 5  # seconds an endTime may run ahead of the stand-in's clock
CANONICAL = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
             409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE"}
GONE = {  # the two 410 reasons Google has been seen to give, with their messages
    "purchaseTokenNoLongerValid": "The purchase token is no longer valid.",
    "subscriptionPurchaseNoLongerAvailable": "The subscription purchase is no longer available for query because "
                                             "it has been expired for too long.",
}
CANCELLATIONS = {"user": "userInitiatedCancellation", "system": "systemInitiatedCancellation",
                 "developer": "developerInitiatedCancellation", "replacement": "replacementCancellation"}
ENDED = ("SUBSCRIPTION_STATE_CANCELED", "SUBSCRIPTION_STATE_EXPIRED", "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED")


class Answer(Exception):
    """An answer decided part way: its status and JSON body (None: an empty body)."""

    def __init__(self, status, body, headers=None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def google_error(code, message, reason, domain="global", location=None, status=None):
    """Google's JSON error: {"error": {"code", "message", "errors": [{"message", "domain", "reason",
    "location"?, "locationType"?}], "status"}}. `status` is the canonical code's name; 410 has none (Google's
    canonical codes have no "gone", and the 410 bodies seen from the Play API carry no status), so it is
    left out there."""
    item = {"message": message, "domain": domain, "reason": reason}
    if location:
        item.update({"location": location, "locationType": "parameter"})
    body = {"code": code, "message": message, "errors": [item]}
    status = status or CANONICAL.get(code)
    if status:
        body["status"] = status
    return {"error": body}


def invalid_token():
    """Google's answer for a token it never issued."""
    return Answer(400, google_error(400, "The purchase token is invalid.", "invalid", location="token"))


class Clock:
    """The stand-in's time: the machine's plus an offset a test may set (POST /_control/clock)."""

    def __init__(self):
        self.offset = 0.0

    def now(self):
        return time.time() + self.offset

    def set(self, now=None, advance=None):
        if now is not None:
            self.offset = instant(now) - time.time()
        if advance is not None:
            self.offset += float(advance)
        return self.now()


def instant(value):
    """Seconds since the epoch from a number (seconds) or an RFC 3339 string."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a time")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).replace("Z", "+00:00")
    moment = datetime.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return moment.timestamp()


def rfc3339(seconds):
    """RFC 3339 in UTC as Google writes it: whole seconds, or milliseconds when there are any."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    millis = int(round(moment.microsecond / 1000))
    if millis == 1000:  # rounding reached the next second
        moment, millis = moment.replace(microsecond=0) + datetime.timedelta(seconds=1), 0
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{millis:03d}Z" if millis else f"{text}Z"


def millis(seconds):
    return str(int(round(seconds * 1000)))


def new_token():
    """A purchase token shaped like Play's: lower-case letters, a dot, then a long URL-safe tail."""
    letters = "".join(secrets.choice(string.ascii_lowercase) for _ in range(24))
    return f"{letters}.AO-J1O{secrets.token_urlsafe(90)}"


def new_order_id():
    digits = [secrets.randbelow(10 ** n) for n in (4, 4, 4, 5)]
    return "GPA.{:04d}-{:04d}-{:04d}-{:05d}".format(*digits)


# A control request's purchase fields: name -> (stored field, conversion); None clears a field.
PURCHASE_FIELDS = {
    "linked_token": ("linked_token", str), "obfuscated_account_id": ("obfuscated_account_id", str),
    "obfuscated_profile_id": ("obfuscated_profile_id", str), "region_code": ("region_code", str),
    "test_purchase": ("test", bool), "acknowledged": ("acknowledged", bool), "start": ("start", instant),
    "canceled_by": ("canceled_by", str), "cancel_time": ("cancel_time", instant),
    "paused_until": ("paused_until", instant),
}
LINE_ITEM_FIELDS = {"product_id": str, "expiry": instant, "base_plan_id": str}


def line_item(data):
    """One line item from a control request: product_id and expiry, base_plan_id and auto_renew optional."""
    return {"product_id": str(data["product_id"]), "expiry": instant(data["expiry"]),
            "base_plan_id": str(data.get("base_plan_id", "monthly")),
            "auto_renew": None if data.get("auto_renew") is None else bool(data["auto_renew"])}


class Play:
    """The Play Console's state for one app. Every field is guarded by `lock`."""

    def __init__(self, package_name, states, clock):
        self.package_name, self.clock = package_name, clock
        self.states = states  # SubscriptionPurchaseV2.subscriptionState's enum, from the document
        self.lock = threading.Lock()
        self.purchases = {}  # token -> the stored purchase (see create_purchase)
        self.forgotten = {}  # token -> the 410 reason Google now answers with
        self.voided = []  # voided purchase records, in the order Google saw them
        self.acknowledgements = []  # every acknowledge call, with its outcome
        self.cancellations = []  # every subscriptionsv2.cancel call, with its outcome

    # The API's methods; each returns the JSON body of a 200 (None: empty) or raises Answer.

    def get_subscription(self, package, token):
        with self.lock:
            purchase = self._known(package, token)
            return self.resource(purchase)

    def acknowledge(self, package, subscription_id, token, body, record):
        """purchases.subscriptions.acknowledge. `record` (the call as the stand-in logged it) is listed with
        its outcome whatever happens."""
        with self.lock:
            entry = {**record, "token": token, "subscription_id": subscription_id, "body": body}
            self.acknowledgements.append(entry)
            try:
                purchase = self._known(package, token)
                products = [item["product_id"] for item in purchase["line_items"]]
                if subscription_id not in products:
                    raise Answer(400, google_error(400, f"The subscription ID {subscription_id} does not match the "
                                                   "purchase token.", "invalid", location="subscriptionId"))
                if purchase["acknowledged"] or purchase["state"] in (
                        "SUBSCRIPTION_STATE_PENDING", "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED",
                        "SUBSCRIPTION_STATE_EXPIRED"):
                    raise Answer(400, google_error(400, "The purchase is not in a valid state to perform the "
                                                   "desired operation.", "invalidPurchaseState", "androidpublisher",
                                                   location="token", status="FAILED_PRECONDITION"))
                claimed = ((body or {}).get("externalAccountIds") or {}).get("obfuscatedAccountId")
                if claimed and purchase["obfuscated_account_id"] not in (None, claimed):
                    raise Answer(400, google_error(400, "The obfuscated account id does not match the purchase.",
                                                   "invalid", location="externalAccountIds.obfuscatedAccountId"))
                if claimed:
                    purchase["obfuscated_account_id"] = claimed
                purchase["acknowledged"] = True
                purchase["acknowledged_at"] = self.clock.now()
                entry.update({"status": 200, "outcome": "acknowledged"})
                return None
            except Answer as answer:
                entry.update({"status": answer.status, "outcome": answer.body["error"]["message"]})
                raise

    def cancel(self, package, token, body, record):
        """purchases.subscriptionsv2.cancel: a running subscription stops renewing (the developer's
        cancellation, cancellationContext.cancellationType names which); it stays paid until its expiry.
        One cancelled already answers 200 again; one that has ended or never began is 400
        invalidPurchaseState. Listed with its outcome whatever happens."""
        with self.lock:
            kind = ((body or {}).get("cancellationContext") or {}).get("cancellationType")
            entry = {**record, "token": token, "cancellation_type": kind}
            self.cancellations.append(entry)
            try:
                purchase = self._known(package, token)
                if kind not in ("USER_REQUESTED_STOP_RENEWALS", "DEVELOPER_REQUESTED_STOP_PAYMENTS"):
                    raise Answer(400, google_error(400, "cancellationContext.cancellationType is required.", "invalid",
                                                   location="cancellationContext.cancellationType"))
                if purchase["state"] in ("SUBSCRIPTION_STATE_PENDING", "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED",
                                         "SUBSCRIPTION_STATE_EXPIRED"):
                    raise Answer(400, google_error(400, "The purchase is not in a valid state to perform the "
                                                   "desired operation.", "invalidPurchaseState", "androidpublisher",
                                                   location="token", status="FAILED_PRECONDITION"))
                if purchase["state"] != "SUBSCRIPTION_STATE_CANCELED":
                    purchase["state"] = "SUBSCRIPTION_STATE_CANCELED"
                    purchase["canceled_by"] = "developer" if kind == "DEVELOPER_REQUESTED_STOP_PAYMENTS" else "user"
                    purchase["cancel_time"] = self.clock.now()
                    for item in purchase["line_items"]:
                        item["auto_renew"] = False
                entry.update({"status": 200, "outcome": "cancelled"})
                return {}
            except Answer as answer:
                entry.update({"status": answer.status, "outcome": answer.body["error"]["message"]})
                raise

    def list_voided(self, package, query):
        """purchases.voidedpurchases.list with its time window, type and token paging."""
        with self.lock:
            self._package(package)
            now = self.clock.now()
            if "startIndex" in query:
                raise Answer(400, google_error(400, "Indexed paging is not enabled for this app: page with the "
                                               "token from tokenPagination.", "invalid", location="startIndex"))
            size = int(query.get("maxResults") or VOIDED_PAGE)
            size = min(max(size, 1), VOIDED_PAGE)
            if "token" in query:  # a page token carries the first page's window; startTime and endTime are ignored
                try:
                    page = json.loads(base64.urlsafe_b64decode(query["token"] + "=" * (-len(query["token"]) % 4)))
                    offset, start, end, kind = page["offset"], page["start"], page["end"], page["type"]
                except (ValueError, KeyError, TypeError):
                    raise Answer(400, google_error(400, "The pagination token is invalid.", "invalid",
                                                   location="token"))
            else:
                offset = 0
                end = int(query.get("endTime", int(now * 1000)))
                start = int(query.get("startTime", int((now - VOIDED_WINDOW) * 1000)))
                kind = int(query.get("type", 0))
                if end > (now + SKEW) * 1000:
                    raise Answer(400, google_error(400, "endTime cannot be later than the current time.",
                                                   "invalid", location="endTime"))
                if start < (now - VOIDED_WINDOW - SKEW) * 1000:
                    raise Answer(400, google_error(400, "startTime cannot be more than 30 days ago.",
                                                   "invalid", location="startTime"))
                if start > end:
                    raise Answer(400, google_error(400, "startTime is later than endTime.", "invalid",
                                                   location="startTime"))
                if kind not in (0, 1):
                    raise Answer(400, google_error(400, "type must be 0 or 1.", "invalid", location="type"))
            # type 0 (the default) lists voided in-app products only: every purchase here is a subscription.
            matching = [v for v in self.voided if start <= v["recorded_ms"] <= end and kind == 1]
            listed = matching[offset:offset + size]
            answer = {}
            if listed:
                answer["voidedPurchases"] = [self.voided_resource(v) for v in listed]
            if offset + size < len(matching):
                following = {"offset": offset + size, "start": start, "end": end, "type": kind}
                answer["tokenPagination"] = {"nextPageToken": base64.urlsafe_b64encode(
                    json.dumps(following).encode()).rstrip(b"=").decode()}
            return answer

    def _package(self, package):
        if package != self.package_name:  # the service account has no access to another app
            raise Answer(401, google_error(401, "The current user has insufficient permissions to perform the "
                                           "requested operation.", "permissionDenied", "androidpublisher"))

    def _known(self, package, token):
        self._package(package)
        if token in self.forgotten:
            reason = self.forgotten[token]
            raise Answer(410, google_error(410, GONE[reason], reason, "androidpublisher"))
        if token not in self.purchases:
            raise invalid_token()
        return self.purchases[token]

    # Google's answers, built from the stored purchase

    def resource(self, purchase):
        """The SubscriptionPurchaseV2 Google would answer for a stored purchase (caller holds the lock)."""
        state = purchase["state"]
        answer = {"kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": purchase["region_code"]}
        items = []
        for item in purchase["line_items"]:
            line = {"productId": item["product_id"], "expiryTime": rfc3339(item["expiry"]),
                    "autoRenewingPlan": {"autoRenewEnabled": item["auto_renew"]},
                    "offerDetails": {"basePlanId": item["base_plan_id"]},
                    "latestSuccessfulOrderId": purchase["orders"][-1]}
            items.append(line)
        answer["lineItems"] = items
        if state != "SUBSCRIPTION_STATE_PENDING":
            answer["startTime"] = rfc3339(purchase["start"])
        answer["subscriptionState"] = state
        if purchase["linked_token"]:
            answer["linkedPurchaseToken"] = purchase["linked_token"]
        if state == "SUBSCRIPTION_STATE_PAUSED" and purchase["paused_until"] is not None:
            answer["pausedStateContext"] = {"autoResumeTime": rfc3339(purchase["paused_until"])}
        if state == "SUBSCRIPTION_STATE_CANCELED":
            context = {}
            if purchase["canceled_by"] == "user":
                context["cancelTime"] = rfc3339(purchase["cancel_time"])
            answer["canceledStateContext"] = {CANCELLATIONS[purchase["canceled_by"]]: context}
        if purchase["test"]:
            answer["testPurchase"] = {}
        answer["acknowledgementState"] = ("ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" if purchase["acknowledged"]
                                          else "ACKNOWLEDGEMENT_STATE_PENDING")
        identifiers = {}
        if purchase["obfuscated_account_id"]:
            identifiers["obfuscatedExternalAccountId"] = purchase["obfuscated_account_id"]
        if purchase["obfuscated_profile_id"]:
            identifiers["obfuscatedExternalProfileId"] = purchase["obfuscated_profile_id"]
        if identifiers:
            answer["externalAccountIdentifiers"] = identifiers
        return answer

    @staticmethod
    def voided_resource(voided):
        return {"kind": "androidpublisher#voidedPurchase", "purchaseToken": voided["token"],
                "purchaseTimeMillis": millis(voided["purchase_time"]),
                "voidedTimeMillis": millis(voided["voided_time"]), "orderId": voided["order_id"],
                "voidedSource": voided["source"], "voidedReason": voided["reason"]}

    # The control API: the buyer's and Google's side

    def state_name(self, value):
        """ACTIVE or SUBSCRIPTION_STATE_ACTIVE (any case) into the document's enum value."""
        name = str(value).upper()
        full = name if name.startswith("SUBSCRIPTION_STATE_") else f"SUBSCRIPTION_STATE_{name}"
        if full not in self.states or full.endswith("_UNSPECIFIED"):
            raise ValueError(f"state {value!r} is not one of {[s[19:] for s in self.states[1:]]}")
        return full

    def create_purchase(self, data):
        """A purchase as the buyer's device made it. Fields (only product_id and expiry are needed): token,
        product_id, expiry, state (ACTIVE), start (now), linked_token, obfuscated_account_id,
        obfuscated_profile_id, test_purchase (false), acknowledged (false), auto_renew (by state),
        base_plan_id ("monthly"), region_code ("US"), canceled_by ("user"), cancel_time, paused_until,
        line_items [{product_id, expiry, auto_renew?, base_plan_id?}] (instead of product_id and expiry)."""
        now = self.clock.now()
        with self.lock:
            token = data.get("token") or new_token()
            if token in self.purchases:
                raise Answer(409, {"error": f"the purchase token {token} exists; update it instead"})
            purchase = {"token": token, "package_name": self.package_name, "state": "SUBSCRIPTION_STATE_ACTIVE",
                        "start": now, "line_items": [], "linked_token": None, "obfuscated_account_id": None,
                        "obfuscated_profile_id": None, "test": False, "acknowledged": False,
                        "acknowledged_at": None, "region_code": "US", "canceled_by": "user", "cancel_time": None,
                        "paused_until": None, "orders": [new_order_id()], "created": now}
            if "line_items" not in data and not ("product_id" in data and "expiry" in data):
                raise ValueError("a purchase needs product_id and expiry (or line_items)")
            self._apply(purchase, data, creating=True)
            self.purchases[token] = purchase
            return self.view(purchase)

    def update_purchase(self, token, data):
        """Changes a purchase as Google would (a renewal, grace, hold, pause, cancellation, expiry). Takes
        create_purchase's fields, and renew: true to add a renewal order (its latestSuccessfulOrderId)."""
        with self.lock:
            purchase = self._stored(token)
            self._apply(purchase, data, creating=False)
            if data.get("renew"):
                purchase["orders"].append(f"{purchase['orders'][0]}..{len(purchase['orders']) - 1}")
            return self.view(purchase)

    def _apply(self, purchase, data, creating):
        """Sets a purchase's fields from a control request (create_purchase's names)."""
        allowed = set(PURCHASE_FIELDS) | set(LINE_ITEM_FIELDS) | {"state", "auto_renew", "line_items", "renew"}
        allowed |= {"token"} if creating else set()
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ValueError(f"unknown purchase fields {unknown}; known: {sorted(allowed)}")
        if data.get("canceled_by", "user") not in CANCELLATIONS:
            raise ValueError(f"canceled_by is one of {sorted(CANCELLATIONS)}")
        if "state" in data:
            purchase["state"] = self.state_name(data["state"])
            purchase["cancel_time"] = None  # a new state: a cancellation time is the new one's, if any
        if "line_items" in data:
            purchase["line_items"] = [line_item(item) for item in data["line_items"]]
        elif creating:
            purchase["line_items"] = [line_item(data)]
        else:  # product_id, expiry and base_plan_id name the first line item
            first = purchase["line_items"][0]
            for name, convert in LINE_ITEM_FIELDS.items():
                if name in data:
                    first[name] = convert(data[name])
        for item in purchase["line_items"]:
            if "auto_renew" in data:
                item["auto_renew"] = bool(data["auto_renew"])
            elif item["auto_renew"] is None or "state" in data:  # unless told: on while it can still renew
                item["auto_renew"] = purchase["state"] not in ENDED
        for name, (field, convert) in PURCHASE_FIELDS.items():
            if name in data:
                purchase[field] = None if data[name] is None else convert(data[name])
        if purchase["state"] == "SUBSCRIPTION_STATE_CANCELED" and purchase["cancel_time"] is None:
            purchase["cancel_time"] = self.clock.now()  # cancelled now, unless told when

    def void(self, token, data):
        """A refund or chargeback: a voided purchase record for the purchase's latest order (or `order_id`),
        seen by Google now. Fields: reason (voidedReason, 0), source (voidedSource, 0), voided_time (now),
        order_id, revoke (true: the subscription ends now, as a refund with revocation does)."""
        with self.lock:
            purchase = self._stored(token)
            now = self.clock.now()
            voided_time = instant(data.get("voided_time", now))
            record = {"token": token, "order_id": data.get("order_id", purchase["orders"][-1]),
                      "purchase_time": purchase["start"], "voided_time": voided_time,
                      "recorded_ms": int(now * 1000), "source": int(data.get("source", 0)),
                      "reason": int(data.get("reason", 0))}
            self.voided.append(record)
            if data.get("revoke", True):
                purchase["state"] = "SUBSCRIPTION_STATE_EXPIRED"
                for item in purchase["line_items"]:
                    item["expiry"] = min(item["expiry"], voided_time)
                    item["auto_renew"] = False
            return {"voided": self.voided_resource(record), **self.view(purchase)}

    def forget(self, token, data):
        """From now on the API answers 410 for this token (Google no longer knows it)."""
        reason = data.get("reason", "purchaseTokenNoLongerValid")
        if reason not in GONE:
            raise ValueError(f"reason is one of {sorted(GONE)}")
        with self.lock:
            self._stored(token)
            self.forgotten[token] = reason
            return {"token": token, "reason": reason}

    def purchase(self, token):
        with self.lock:
            return self.view(self._stored(token))

    def _stored(self, token):
        if token not in self.purchases:
            raise Answer(404, {"error": f"no purchase with the token {token}"})
        return self.purchases[token]

    def view(self, purchase):
        """The stored purchase and the resource the API would answer (caller holds the lock)."""
        return {"purchase": copy.deepcopy(purchase), "resource": self.resource(purchase),
                "gone": self.forgotten.get(purchase["token"])}
