"""Schemathesis hooks for fuzzing a live Gatehouse (Tests/fuzz/run.py loads them).

User operations get the access token of a real account, signed up through the API; when an
operation ends that session (logout, password change, deletion) the next 401 makes Schemathesis
ask for a new one. Admin operations get the admin key.
"""
import json
import os
import secrets
import urllib.request

import schemathesis

BASE = os.environ["GATEHOUSE_FUZZ_URL"]
ADMIN_KEY = os.environ["GATEHOUSE_FUZZ_ADMIN_KEY"]


def _post(path, body):
    request = urllib.request.Request(
        BASE + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


@schemathesis.auth(refresh_interval=None).apply_to(path_regex="^/admin/")
class AdminKey:
    def get(self, case, context):
        return ADMIN_KEY

    def set(self, case, data, context):
        case.headers = dict(case.headers or {})
        case.headers["Authorization"] = f"Bearer {data}"


@schemathesis.auth(refresh_interval=None).skip_for(path_regex="^/admin/")
class UserSession:
    def get(self, case, context):
        email = f"fuzz-{secrets.token_hex(6)}@example.com"
        answer = _post("/v1/auth/signup", {"email": email, "password": "Fuzz-" + secrets.token_urlsafe(12)})
        return answer["session"]["access_token"]

    def set(self, case, data, context):
        case.headers = dict(case.headers or {})
        case.headers["Authorization"] = f"Bearer {data}"
