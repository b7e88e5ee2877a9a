#!/usr/bin/env python3
"""Fuzzes every operation of a live Gatehouse with Schemathesis, stateful links included.

Usage: run.py GATEHOUSE_BINARY [extra schemathesis arguments]

Starts the server on a free loopback port (SQLite in a temporary directory, dev outbox, the
`default` preset, per-IP limits off so the fuzzer is not throttled into testing only 429s), runs
`schemathesis run` against GET /openapi.yaml with the checks the hardening issue names, prints
the number of generated cases and exits non-zero on any failure.
"""
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

CHECKS = "not_a_server_error,response_schema_conformance,negative_data_rejection,ignored_auth"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, server, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"error: the server exited with {server.returncode} before answering")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("error: the server did not answer /health within a minute")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, extra = sys.argv[1], sys.argv[2:]
    schemathesis = os.path.join(os.path.dirname(sys.executable), "schemathesis")
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="gatehouse-fuzz-") as directory:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        admin_key = secrets.token_urlsafe(32)
        # /auth/v1 (Supabase compatibility) is mounted only with these; two different keys.
        supabase_anon_key = secrets.token_urlsafe(24)
        supabase_service_role_key = secrets.token_urlsafe(32)
        # GET /metrics is served with its bearer token set.
        metrics_token = secrets.token_urlsafe(32)
        environment = dict(
            os.environ,
            GATEHOUSE_PORT=str(port),
            GATEHOUSE_DATABASE_URL=f"sqlite://{directory}/fuzz.sqlite",
            GATEHOUSE_ADMIN_KEY=admin_key,
            GATEHOUSE_SUPABASE_ANON_KEY=supabase_anon_key,
            GATEHOUSE_SUPABASE_SERVICE_ROLE_KEY=supabase_service_role_key,
            GATEHOUSE_METRICS_TOKEN=metrics_token,
            GATEHOUSE_IP_LIMITS="off",
            GATEHOUSE_LOG_LEVEL="warning",
            # The fuzzer signs up many accounts: a cheap hash keeps it fast (production costs are
            # measured in BENCHMARKS.md, not here).
            GATEHOUSE_ARGON2_MEMORY_KIB="1024",
            GATEHOUSE_ARGON2_ITERATIONS="1",
            # Stripe configured at a closed loopback port: the default preset sells no price, so
            # checkout answers 400 unknown_price and nothing ever reaches "Stripe".
            GATEHOUSE_STRIPE_SECRET_KEY="sk_test_fuzz_" + secrets.token_urlsafe(12),
            GATEHOUSE_STRIPE_WEBHOOK_SECRETS="whsec_" + secrets.token_urlsafe(24),
            GATEHOUSE_STRIPE_API_URL="http://127.0.0.1:9",
        )
        log = open(os.path.join(directory, "server.log"), "w")
        server = subprocess.Popen([binary, "serve"], env=environment, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_healthy(url, server)
            command = [
                schemathesis, "run", f"{url}/openapi.yaml", "--url", url,
                "--checks", CHECKS,
                "--phases", "examples,coverage,fuzzing,stateful",
                "--suppress-health-check", "all",
                "--request-timeout", "30",
                "--workers", "2",
                "--seed", os.environ.get("GATEHOUSE_FUZZ_SEED", "20261121"),
                "--no-color",
                *extra,
            ]
            hooks_environment = dict(
                os.environ,
                PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""),
                SCHEMATHESIS_HOOKS="hooks",
                GATEHOUSE_FUZZ_URL=url,
                GATEHOUSE_FUZZ_ADMIN_KEY=admin_key,
                GATEHOUSE_FUZZ_SUPABASE_ANON_KEY=supabase_anon_key,
                GATEHOUSE_FUZZ_SUPABASE_SERVICE_ROLE_KEY=supabase_service_role_key,
                GATEHOUSE_FUZZ_METRICS_TOKEN=metrics_token,
            )
            started = time.monotonic()
            result = subprocess.run(command, env=hooks_environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            output = result.stdout
            print(output)
            cases = re.search(r"Test cases:\s*\n?\s*(\d[\d,]*) generated", output)
            print(f"==> schemathesis: exit {result.returncode}, {cases.group(1) if cases else '?'} generated cases, "
                  f"{time.monotonic() - started:.0f} s")
            if server.poll() is not None:
                sys.exit(f"error: the server died during the run (exit {server.returncode})")
            if result.returncode != 0:
                log.flush()
                print("---- server log (warnings and errors) ----")
                print(open(log.name).read()[-20000:])
            sys.exit(result.returncode)
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()


if __name__ == "__main__":
    main()
