#!/usr/bin/env python3
"""django-allauth's headless session read under the same wrk load as Gatehouse's GET /v1/me.

  allauth.py --workdir DIR --seconds S --connections C --workers "1 2 4 8" --out FILE

Run with the Python of a virtualenv holding Django, django-allauth and gunicorn (benchmarks/
allauth/run makes it). Writes a Django project into DIR: allauth's account and headless apps
(`HEADLESS_ONLY`, email login, no verification, rate limits off as Gatehouse's per-IP
limits are), Django's SQLite database, `DEBUG` off and
Django's default password hasher; migrates, creates C users, starts gunicorn (sync workers, the
deployment Django documents), signs each user in through `POST /_allauth/app/v1/auth/login`
and loads `GET /_allauth/app/v1/auth/session` with each connection's `X-Session-Token` (the
app client's "who am I", the counterpart of GET /v1/me) for S seconds per worker count, counting
the CPU time of gunicorn's master and workers. Writes each run's req/s, latency and CPU to FILE.
"""

import argparse
import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

SETTINGS = '''
SECRET_KEY = "benchmark-only-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
    "allauth", "allauth.account", "allauth.headless",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
ROOT_URLCONF = "project.urls"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DATABASE}}
USE_TZ = True
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
              "OPTIONS": {"context_processors": ["django.template.context_processors.request"]}}]
HEADLESS_ONLY = True
HEADLESS_FRONTEND_URLS = {
    "account_confirm_email": "https://app.example/verify/{key}",
    "account_reset_password_from_key": "https://app.example/reset/{key}",
    "account_signup": "https://app.example/signup",
}
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
# Off for the sign-ins that open the sessions, as the Gatehouse side runs with per-IP limits off.
ACCOUNT_RATE_LIMITS = False
LOGGING = {"version": 1, "disable_existing_loggers": True}
'''

URLS = '''
from django.urls import include, path
urlpatterns = [path("accounts/", include("allauth.urls")), path("_allauth/", include("allauth.headless.urls"))]
'''

CREATE_USERS = '''
import sys
from django.contrib.auth import get_user_model
from allauth.account.models import EmailAddress
count = int(sys.argv[1])
User = get_user_model()
for i in range(count):
    email = f"reader{i}@bench.example"
    user = User.objects.create_user(username=f"reader{i}", email=email, password="correct horse battery staple")
    EmailAddress.objects.create(user=user, email=email, primary=True, verified=True)
'''

LUA = '''
local tokens = {%s}
local counter = 0
function setup(thread)
  thread:set("offset", counter)
  counter = counter + 1
end
local next_index = nil
function request()
  if next_index == nil then next_index = offset end
  next_index = next_index + 1
  local token = tokens[(next_index %% #tokens) + 1]
  return wrk.format("GET", "/_allauth/app/v1/auth/session", { ["X-Session-Token"] = token })
end
done = function(summary, latency, requests)
  local statuses = {}
  io.write(string.format("RESULT %%d %%.3f %%.3f %%.3f %%d %%d %%d %%d\\n", summary.requests, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, latency.mean / 1000, summary.errors.connect, summary.errors.read,
    summary.errors.status, summary.errors.timeout))
end
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree_cpu(root):
    """utime + stime of `root` and every descendant, in seconds."""
    pids, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for task in os.listdir(f"/proc/{pid}/task") if os.path.exists(f"/proc/{pid}/task") else []:
            try:
                children = open(f"/proc/{pid}/task/{task}/children").read().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in pids:
                    pids.add(child)
                    frontier.append(child)
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / CLOCK_TICKS


def post_json(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workers", default="1 2 4 8")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import importlib.metadata

    import django

    project = os.path.join(args.workdir, "project")
    os.makedirs(project, exist_ok=True)
    database = os.path.join(args.workdir, "allauth.sqlite3")
    open(os.path.join(project, "__init__.py"), "w").close()
    with open(os.path.join(project, "settings.py"), "w") as f:
        f.write(f"DATABASE = {database!r}\n" + SETTINGS)
    with open(os.path.join(project, "urls.py"), "w") as f:
        f.write(URLS)
    environment = dict(os.environ, DJANGO_SETTINGS_MODULE="project.settings", PYTHONPATH=args.workdir)
    django_admin = [sys.executable, "-m", "django"]
    subprocess.run(django_admin + ["migrate", "-v", "0"], env=environment, check=True)
    subprocess.run(django_admin + ["shell", "-c", CREATE_USERS.replace("int(sys.argv[1])", str(args.connections))],
                   env=environment, check=True)

    runs = []
    for workers in [int(w) for w in args.workers.split()]:
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--bind", f"127.0.0.1:{port}", "--log-level", "warning",
             "django.core.wsgi:get_wsgi_application()"],
            env=environment, cwd=args.workdir)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    urllib.request.urlopen(base + "/_allauth/app/v1/config", timeout=2).read()
                    break
                except OSError:
                    time.sleep(0.1)
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                answers = list(pool.map(lambda i: post_json(base + "/_allauth/app/v1/auth/login", {
                    "email": f"reader{i}@bench.example", "password": "correct horse battery staple"}), range(args.connections)))
            tokens = [answer["meta"]["session_token"] for answer in answers]
            # One read per token first: each answers 200 with its user, or the run is void.
            for i, token in enumerate(tokens):
                request = urllib.request.Request(base + "/_allauth/app/v1/auth/session", headers={"X-Session-Token": token})
                with urllib.request.urlopen(request, timeout=10) as answer:
                    body = json.load(answer)
                    assert body["data"]["user"]["email"] == f"reader{i}@bench.example", body
            script = os.path.join(args.workdir, "session.lua")
            with open(script, "w") as f:
                f.write(LUA % ", ".join(json.dumps(t) for t in tokens))
            urllib.request.urlopen(base + "/_allauth/app/v1/config").read()
            cpu_before = process_tree_cpu(server.pid)
            output = subprocess.run(
                ["wrk", "-t2", f"-c{args.connections}", f"-d{args.seconds}s", "-s", script, base],
                capture_output=True, text=True, check=True).stdout
            cpu = process_tree_cpu(server.pid) - cpu_before
            match = re.search(r"RESULT (\d+) ([\d.]+) ([\d.]+) ([\d.]+) (\d+) (\d+) (\d+) (\d+)", output)
            requests, p50, p99, mean, connect, read, status, timeout = match.groups()
            seconds = float(re.search(r"requests in ([\d.]+)(m?s)", output).group(1))
            if re.search(r"requests in [\d.]+ms", output):
                seconds /= 1000
            run = {
                "workers": workers, "requests": int(requests), "seconds": seconds,
                "requests_per_second": round(int(requests) / seconds, 1),
                "latency_ms": {"p50": float(p50), "p99": float(p99), "mean": float(mean)},
                "errors": {"connect": int(connect), "read": int(read), "non_2xx_3xx": int(status), "timeout": int(timeout)},
                "server_cpu_seconds": round(cpu, 2), "server_cpu_ms_per_request": round(1000 * cpu / max(1, int(requests)), 4),
            }
            print(json.dumps(run), flush=True)
            runs.append(run)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)

    result = {"django": django.get_version(), "django_allauth": importlib.metadata.version("django-allauth"), "request": "GET /_allauth/app/v1/auth/session",
              "connections": args.connections, "runs": runs}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
