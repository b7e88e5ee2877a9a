"""Schemathesis hooks for fuzzing a live Gatehouse (Server/Tests/fuzz/run.py loads them).

User operations get the access token of a real account, signed up through the API; when an
operation ends that session (logout, password change, deletion) the next 401 makes Schemathesis
ask for a new one. Admin operations get the admin key.

`/auth/v1` (Supabase compatibility) operations carry `apikey: <anon key>`; those the document
secures with `bearerAuth` add a fresh account's access token (the tokens work on both surfaces),
and `/auth/v1/admin/` and `/auth/v1/invite` add `Authorization: Bearer <service role key>`. `GET /auth/v1/verify`
declares no security (a browser follows it) and gets none. Without the Supabase keys in the
environment `/auth/v1` gets no credentials (and the server answers 404 there).

The first provider that matches an operation and returns credentials is the one applied.
"""
import ast
import json
import os
import secrets
import sys
import threading
import urllib.parse
import urllib.request

import schemathesis

# CPython before 3.11.8 and 3.12.2 keeps one AST recursion counter per interpreter, so two threads
# in `ast.parse` at once (a collection inside one can switch threads) fail with "SystemError: AST
# constructor recursion depth mismatch" (python/cpython#106905). Hypothesis parses lambdas' source
# to describe its filters, from both of Schemathesis's worker threads; CI crashed on it once with
# 3.11.7. One lock around `ast.parse` keeps the parses apart on the Pythons that need it.
if sys.version_info < (3, 11, 8) or (3, 12) <= sys.version_info < (3, 12, 2):
    _ast_parse = ast.parse
    _ast_parse_lock = threading.Lock()

    def _serialised_ast_parse(*args, **kwargs):
        with _ast_parse_lock:
            return _ast_parse(*args, **kwargs)

    ast.parse = _serialised_ast_parse

BASE = os.environ["GATEHOUSE_FUZZ_URL"]
ADMIN_KEY = os.environ["GATEHOUSE_FUZZ_ADMIN_KEY"]
SUPABASE_ANON_KEY = os.environ.get("GATEHOUSE_FUZZ_SUPABASE_ANON_KEY")
SUPABASE_SERVICE_ROLE_KEY = os.environ.get("GATEHOUSE_FUZZ_SUPABASE_SERVICE_ROLE_KEY")
METRICS_TOKEN = os.environ.get("GATEHOUSE_FUZZ_METRICS_TOKEN")

# Operations under these prefixes have providers of their own.
NATIVE_ADMIN = "^/admin/"
SUPABASE = "^/auth/v1/"
SUPABASE_ADMIN = "^/auth/v1/(admin/|invite$)"
METRICS = "^/metrics$"


def _post(path, body):
    request = urllib.request.Request(
        BASE + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def _fresh_access_token():
    """The access token of a new email account (signed up on the native API)."""
    email = f"fuzz-{secrets.token_hex(6)}@example.com"
    answer = _post("/v1/auth/signup", {"email": email, "password": "Fuzz-" + secrets.token_urlsafe(12)})
    return answer["session"]["access_token"]


def _set_headers(case, headers):
    case.headers = dict(case.headers or {})
    case.headers.update(headers)


def _security_schemes(case):
    """The names of the security schemes the operation's requirements list."""
    requirements = case.operation.definition.raw.get("security") or []
    return {name for requirement in requirements for name in requirement}


@schemathesis.auth(refresh_interval=None).apply_to(path_regex=NATIVE_ADMIN)
class AdminKey:
    def get(self, case, context):
        return ADMIN_KEY

    def set(self, case, data, context):
        _set_headers(case, {"Authorization": f"Bearer {data}"})


@schemathesis.auth(refresh_interval=None).apply_to(path_regex=SUPABASE_ADMIN)
class SupabaseServiceRole:
    def get(self, case, context):
        if not (SUPABASE_ANON_KEY and SUPABASE_SERVICE_ROLE_KEY):
            return None
        return SUPABASE_SERVICE_ROLE_KEY

    def set(self, case, data, context):
        _set_headers(case, {"apikey": SUPABASE_ANON_KEY, "Authorization": f"Bearer {data}"})


@schemathesis.auth(refresh_interval=None).apply_to(path_regex=SUPABASE).skip_for(path_regex=SUPABASE_ADMIN)
class SupabaseClient:
    """`apikey`, and a user's access token where the operation is secured with `bearerAuth`."""

    def get(self, case, context):
        schemes = _security_schemes(case)
        if not SUPABASE_ANON_KEY or not schemes:
            return None
        token = _fresh_access_token() if "bearerAuth" in schemes else None
        return {"apikey": SUPABASE_ANON_KEY, "token": token}

    def set(self, case, data, context):
        headers = {"apikey": data["apikey"]}
        if data["token"] is not None:
            headers["Authorization"] = f"Bearer {data['token']}"
        _set_headers(case, headers)


@schemathesis.auth(refresh_interval=None).apply_to(path_regex=METRICS)
class MetricsToken:
    def get(self, case, context):
        return METRICS_TOKEN

    def set(self, case, data, context):
        _set_headers(case, {"Authorization": f"Bearer {data}"})


@schemathesis.auth(refresh_interval=None).skip_for(path_regex=NATIVE_ADMIN).skip_for(path_regex=SUPABASE).skip_for(
    path_regex=METRICS
)
class UserSession:
    def get(self, case, context):
        return _fresh_access_token()

    def set(self, case, data, context):
        _set_headers(case, {"Authorization": f"Bearer {data}"})


@schemathesis.hook.apply_to(method="GET", path="/auth/v1/verify")
def filter_failure(context, failure, case, response):
    """`GET /auth/v1/verify` answers every request with a 303, as GoTrue does: a link with a
    missing or invalid `token` or `type` is refused by redirecting with `#error=…` in the
    `Location`, not by a 4xx. Such a redirect is the rejection `negative_data_rejection` asks for."""
    if "negative_data_rejection" not in getattr(failure, "checks", ()) or response.status_code != 303:
        return True
    location = (response.headers.get("location") or [""])[0]
    fragment = urllib.parse.parse_qs(urllib.parse.urlsplit(location).fragment)
    return "error" not in fragment
