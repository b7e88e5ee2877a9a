"""Stripe's objects as API version 2026-07-29.dahlia shapes them (openapi/fixtures3.json and the spec's
schemas at stripe/openapi af5309ca), for stripe_standin.py. Only the fields Gatehouse could read, and the
ones that tell this version apart, are filled in:

  subscription   the period lives on each item: items.data[].current_period_start / current_period_end;
                 the subscription itself has no current_period_* fields in this version.
  invoice        names its subscription under parent.subscription_details.subscription (with the
                 subscription's metadata beside it); there is no invoice.subscription in this version.
  charge         customer, amount, amount_refunded, refunded, payment_intent (no invoice field).
  dispute        charge, amount, status; a dispute names no customer, only its charge.
  event          api_version, created, data.object (a snapshot), livemode, pending_webhooks, request, type."""
import secrets
import string
import time

ALPHABET = string.ascii_letters + string.digits
UNIT_AMOUNT = 1000  # every price the stand-in invents costs 10.00 USD a month


def new_id(prefix, length=24):
    return prefix + "".join(secrets.choice(ALPHABET) for _ in range(length))


def now():
    return int(time.time())


def error(kind, message, code=None, param=None):
    """Stripe's error body: {"error": {"type", "message", "code"?, "param"?}}."""
    body = {"type": kind, "message": message}
    if code:
        body["code"] = code
    if param:
        body["param"] = param
    return {"error": body}


def customer(email, metadata):
    return {
        "id": new_id("cus_", 14), "object": "customer", "address": None, "balance": 0, "created": now(),
        "currency": None, "default_source": None, "delinquent": False, "description": None, "email": email,
        "invoice_prefix": new_id("", 8).upper(), "invoice_settings": {
            "custom_fields": None, "default_payment_method": None, "footer": None,
            "rendering_options": None},
        "livemode": False, "metadata": metadata, "name": None, "phone": None, "preferred_locales": [],
        "shipping": None, "tax_exempt": "none", "test_clock": None,
    }


def checkout_session(base_url, form):
    session_id = new_id("cs_test_", 58)
    return {
        "id": session_id, "object": "checkout.session", "cancel_url": form.get("cancel_url"),
        "client_reference_id": form.get("client_reference_id"), "created": now(), "currency": "usd",
        "customer": form.get("customer"), "customer_email": None, "expires_at": now() + 86400,
        "invoice": None, "livemode": False, "metadata": form.get("metadata", {}), "mode": form.get("mode"),
        "payment_status": "unpaid", "status": "open", "subscription": None,
        "success_url": form.get("success_url"), "url": f"{base_url}/pay/{session_id}",
    }


def portal_session(base_url, customer_id, return_url):
    session_id = new_id("bps_")
    return {
        "id": session_id, "object": "billing_portal.session", "configuration": new_id("bpc_"),
        "created": now(), "customer": customer_id, "flow": None, "livemode": False, "locale": None,
        "on_behalf_of": None, "return_url": return_url, "url": f"{base_url}/portal/{session_id}",
    }


def price(price_id):
    return {
        "id": price_id, "object": "price", "active": True, "billing_scheme": "per_unit", "created": now(),
        "currency": "usd", "livemode": False, "lookup_key": None, "metadata": {}, "nickname": None,
        "product": "prod_" + price_id.removeprefix("price_"),
        "recurring": {"interval": "month", "interval_count": 1, "meter": None, "usage_type": "licensed",
                      "trial_period_days": None},
        "tax_behavior": "unspecified", "type": "recurring", "unit_amount": UNIT_AMOUNT,
        "unit_amount_decimal": str(UNIT_AMOUNT),
    }


def subscription(customer_id, price_id, status, period_start, period_end, metadata, trial_end=None):
    sub_id = new_id("sub_")
    item = {
        "id": new_id("si_", 14), "object": "subscription_item", "created": now(),
        "current_period_start": period_start, "current_period_end": period_end, "discounts": [],
        "metadata": {}, "price": price(price_id), "quantity": 1, "subscription": sub_id, "tax_rates": [],
    }
    return {
        "id": sub_id, "object": "subscription", "billing_cycle_anchor": period_start, "cancel_at": None,
        "cancel_at_period_end": False, "canceled_at": None,
        "cancellation_details": {"comment": None, "feedback": None, "reason": None},
        "collection_method": "charge_automatically", "created": now(), "currency": "usd",
        "customer": customer_id, "ended_at": None,
        "items": {"object": "list", "data": [item], "has_more": False, "total_count": 1,
                  "url": f"/v1/subscription_items?subscription={sub_id}"},
        "latest_invoice": None, "livemode": False, "metadata": metadata, "start_date": period_start,
        "status": status, "test_clock": None,
        "trial_end": trial_end, "trial_start": period_start if trial_end else None,
    }


def invoice(sub, paid):
    """An invoice for one period of `sub`: `paid` (invoice.paid) or open after a failed attempt."""
    item = sub["items"]["data"][0]
    invoice_id = new_id("in_")
    start, end = item["current_period_start"], item["current_period_end"]
    return {
        "id": invoice_id, "object": "invoice", "amount_due": UNIT_AMOUNT,
        "amount_paid": UNIT_AMOUNT if paid else 0, "amount_remaining": 0 if paid else UNIT_AMOUNT,
        "attempt_count": 1, "attempted": True, "billing_reason": "subscription_cycle",
        "collection_method": "charge_automatically", "created": now(), "currency": "usd",
        "customer": sub["customer"], "livemode": False, "metadata": {},
        "lines": {"object": "list", "has_more": False, "url": f"/v1/invoices/{invoice_id}/lines", "data": [{
            "id": new_id("il_"), "object": "line_item", "amount": UNIT_AMOUNT, "currency": "usd",
            "invoice": invoice_id, "livemode": False, "metadata": {}, "period": {"start": start, "end": end},
            "quantity": 1, "parent": {
                "type": "subscription_item_details", "invoice_item_details": None,
                "subscription_item_details": {"invoice_item": None, "proration": False,
                                              "proration_details": {"credited_items": None},
                                              "subscription": sub["id"], "subscription_item": item["id"]}},
            "pricing": {"type": "price_details", "price_details": {"price": item["price"]["id"],
                                                                  "product": item["price"]["product"]}}}]},
        "next_payment_attempt": None if paid else now() + 3 * 86400,
        "parent": {"type": "subscription_details", "quote_details": None,
                   "subscription_details": {"metadata": dict(sub["metadata"]), "subscription": sub["id"]}},
        "period_end": end, "period_start": start, "status": "paid" if paid else "open",
        "status_transitions": {"finalized_at": now(), "marked_uncollectible_at": None,
                               "paid_at": now() if paid else None, "voided_at": None},
        "subtotal": UNIT_AMOUNT, "total": UNIT_AMOUNT,
    }


def charge(charge_id, customer_id, payment_intent, refunded):
    return {
        "id": charge_id, "object": "charge", "amount": UNIT_AMOUNT, "amount_captured": UNIT_AMOUNT,
        "amount_refunded": UNIT_AMOUNT if refunded else 0, "captured": True, "created": now(),
        "currency": "usd", "customer": customer_id, "description": None, "disputed": False,
        "livemode": False, "metadata": {}, "paid": True, "payment_intent": payment_intent,
        "refunded": refunded, "status": "succeeded",
    }


def dispute(charge_id, payment_intent):
    return {
        "id": new_id("dp_"), "object": "dispute", "amount": UNIT_AMOUNT, "charge": charge_id,
        "created": now(), "currency": "usd", "is_charge_refundable": False, "livemode": False,
        "metadata": {}, "payment_intent": payment_intent, "reason": "fraudulent", "status": "needs_response",
    }


def event(kind, snapshot, api_version, created=None):
    return {
        "id": new_id("evt_"), "object": "event", "api_version": api_version, "created": created or now(),
        "data": {"object": snapshot}, "livemode": False, "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None}, "type": kind,
    }
