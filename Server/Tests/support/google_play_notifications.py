"""Real-time developer notifications as Google Play publishes them and Cloud Pub/Sub pushes them, for
google_play_standin.py (POST /_control/push_body and /_control/push).

Play publishes a DeveloperNotification as the data of a Pub/Sub message:
  {"version": "1.0", "packageName", "eventTimeMillis": "<ms>", and exactly one of
   "subscriptionNotification": {"version": "1.0", "notificationType": <number>, "purchaseToken", "subscriptionId"},
   "oneTimeProductNotification": {"version": "1.0", "notificationType": <number>, "purchaseToken", "sku"},
   "voidedPurchaseNotification": {"purchaseToken", "orderId", "productType": <number>, "refundType": <number>},
   "testNotification": {"version": "1.0"}}
and a push subscription POSTs it to the endpoint as
  {"message": {"data": base64(notification JSON), "messageId", "message_id", "publishTime", "publish_time",
               "attributes"?}, "subscription": "projects/<project>/subscriptions/<name>", "deliveryAttempt"?}
(Pub/Sub writes the message id and publish time under both spellings.)"""
import base64
import json
import secrets

from google_play_store import instant, millis, rfc3339

# SubscriptionNotification.notificationType, from the Real-time developer notifications reference.
SUBSCRIPTION_TYPES = {
    "SUBSCRIPTION_RECOVERED": 1, "SUBSCRIPTION_RENEWED": 2, "SUBSCRIPTION_CANCELED": 3,
    "SUBSCRIPTION_PURCHASED": 4, "SUBSCRIPTION_ON_HOLD": 5, "SUBSCRIPTION_IN_GRACE_PERIOD": 6,
    "SUBSCRIPTION_RESTARTED": 7, "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED": 8, "SUBSCRIPTION_DEFERRED": 9,
    "SUBSCRIPTION_PAUSED": 10, "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED": 11, "SUBSCRIPTION_REVOKED": 12,
    "SUBSCRIPTION_EXPIRED": 13, "SUBSCRIPTION_ITEMS_CHANGED": 17, "SUBSCRIPTION_CANCELLATION_SCHEDULED": 18,
    "SUBSCRIPTION_PRICE_CHANGE_UPDATED": 19, "SUBSCRIPTION_PENDING_PURCHASE_CANCELED": 20,
    "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED": 22,
}
ONE_TIME_TYPES = {"ONE_TIME_PRODUCT_PURCHASED": 1, "ONE_TIME_PRODUCT_CANCELED": 2}
PRODUCT_TYPES = {"PRODUCT_TYPE_SUBSCRIPTION": 1, "PRODUCT_TYPE_ONE_TIME": 2}
REFUND_TYPES = {"REFUND_TYPE_FULL_REFUND": 1, "REFUND_TYPE_QUANTITY_BASED_PARTIAL_REFUND": 2}
# The notifications about one purchased item: kind -> (field, its types, the default type, the item's key,
# the push_body option that gives it).
ITEM_NOTIFICATIONS = {
    "subscription": ("subscriptionNotification", SUBSCRIPTION_TYPES, 4, "subscriptionId", "subscription_id"),
    "one_time": ("oneTimeProductNotification", ONE_TIME_TYPES, 1, "sku", "sku"),
}


def number(value, names, what):
    """A notification's numeric code from its number or its name, in full or without its prefix
    (4, "SUBSCRIPTION_PURCHASED" or "PURCHASED"; "PRODUCT_TYPE_SUBSCRIPTION" or "SUBSCRIPTION")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).upper()
    for name, code in names.items():
        short = name
        for prefix in ("ONE_TIME_PRODUCT_", "PRODUCT_TYPE_", "REFUND_TYPE_", "SUBSCRIPTION_"):
            if name.startswith(prefix):
                short = name[len(prefix):]
                break
        if text in (name, short):
            return code
    raise ValueError(f"{what} {value!r} is not one of {sorted(names)}")


def notification(data, package_name, now):
    """The DeveloperNotification of a push_body request."""
    kind = data.get("kind", "subscription")
    developer = {"version": "1.0", "packageName": data.get("package_name", package_name),
                 "eventTimeMillis": millis(instant(data.get("event_time", now)))}
    if kind in ITEM_NOTIFICATIONS:
        field, types, default, item_key, item_option = ITEM_NOTIFICATIONS[kind]
        developer[field] = {
            "version": "1.0",
            "notificationType": number(data.get("notification_type", default), types, "notification_type"),
            "purchaseToken": data["purchase_token"],
            item_key: data[item_option],
        }
    elif kind == "voided":
        developer["voidedPurchaseNotification"] = {
            "purchaseToken": data["purchase_token"],
            "orderId": data["order_id"],
            "productType": number(data.get("product_type", 1), PRODUCT_TYPES, "product_type"),
            "refundType": number(data.get("refund_type", 1), REFUND_TYPES, "refund_type"),
        }
    elif kind == "test":
        developer["testNotification"] = {"version": "1.0"}
    else:
        raise ValueError(f"kind {kind!r} is not one of subscription, one_time, voided, test")
    return developer


def push_body(data, package_name, subscription_name, now):
    """A Pub/Sub push request's body around a notification: {"body", "text" (the exact JSON text to POST),
    "notification" (the decoded data), "message_id"}. `notification_text` replaces the data's JSON text
    (for malformed notifications)."""
    developer = None if "notification_text" in data else notification(data, package_name, now)
    text = data["notification_text"] if developer is None else json.dumps(developer, separators=(",", ":"))
    message_id = str(data.get("message_id") or 10 ** 15 + secrets.randbelow(9 * 10 ** 15))
    published = rfc3339(instant(data.get("publish_time", now)))
    message = {"data": base64.b64encode(text.encode()).decode(), "messageId": message_id, "message_id": message_id,
               "publishTime": published, "publish_time": published}
    if data.get("attributes"):
        message["attributes"] = {str(k): str(v) for k, v in data["attributes"].items()}
    body = {"message": message, "subscription": data.get("subscription", subscription_name)}
    if "delivery_attempt" in data:
        body["deliveryAttempt"] = int(data["delivery_attempt"])
    return {"body": body, "text": json.dumps(body, separators=(",", ":")), "notification": developer,
            "message_id": message_id}
