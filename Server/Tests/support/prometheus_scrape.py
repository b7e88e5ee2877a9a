"""Scrapes a running Gatehouse with a real Prometheus server and runs one PromQL query, for the
metrics tests. Standard library only.

    prometheus_scrape.py --target HOST:PORT [--bearer TOKEN] [--path /metrics] --query PROMQL
                         [--expect-value N] [--timeout 60] [--prometheus BINARY]

Starts `prometheus` (or --prometheus, or $GATEHOUSE_PROMETHEUS) on a free loopback port with a
one-second scrape interval and a throwaway config and storage, waits until the target is up and
has been scraped, then asks the query until it has a result (equal to --expect-value when given).
Prints one JSON object: target_health, last_error, scrape_url, query and value (a number, or null
when there is none or it is NaN/Inf). Exits 1 on timeout, with the last state on standard error.
"""
import argparse
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

NEVER_SCRAPED = "0001-01-01T00:00:00Z"  # Prometheus's lastScrape before the first scrape


class Failure(Exception):
    """The query cannot succeed (not a matter of waiting longer)."""


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_config(path, options):
    # JSON strings are valid YAML double-quoted scalars, so every value is quoted with json.dumps.
    q = json.dumps
    lines = [
        "global:",
        "  scrape_interval: 1s",
        "  scrape_timeout: 1s",
        "  evaluation_interval: 1s",
        "scrape_configs:",
        "  - job_name: gatehouse",
        f"    metrics_path: {q(options.path)}",
        "    static_configs:",
        f"      - targets: [{q(options.target)}]",
    ]
    if options.bearer is not None:
        lines += ["    authorization:", "      type: Bearer", f"      credentials: {q(options.bearer)}"]
    with open(path, "w") as file:
        file.write("\n".join(lines) + "\n")


def get_json(base, path, params=None):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        try:
            return json.load(error)  # a bad query is a 400 or 422 with {"status": "error", ...}
        except ValueError:
            raise error from None  # not JSON: a 503 while prometheus starts, retried by the caller


def target_state(base):
    """The gatehouse job's active target as the targets API reports it, or None before discovery."""
    for target in get_json(base, "/api/v1/targets", {"state": "active"})["data"]["activeTargets"]:
        if target["labels"].get("job") == "gatehouse":
            return target
    return None


def query_value(base, query):
    """The query's value as a float, or None while it has no result."""
    body = get_json(base, "/api/v1/query", {"query": query})
    if body.get("status") != "success":
        raise Failure(f"query failed: {body.get('errorType')}: {body.get('error')}")
    data = body["data"]
    if data["resultType"] in ("scalar", "string"):
        return float(data["result"][1])
    if data["resultType"] != "vector":
        raise Failure(f"query gives a {data['resultType']}, not one value")
    if len(data["result"]) > 1:
        raise Failure(f"query gives {len(data['result'])} series, not one: aggregate it, e.g. sum(...)")
    return float(data["result"][0]["value"][1]) if data["result"] else None


def as_json_number(value):
    if value is None or not math.isfinite(value):
        return None
    return int(value) if value.is_integer() else value


def run(options, workdir, state):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    config = os.path.join(workdir, "prometheus.yml")
    consoles = os.path.join(workdir, "consoles")  # empty: nothing is read from /etc/prometheus
    os.mkdir(consoles)
    write_config(config, options)
    command = [options.prometheus, f"--config.file={config}",
               f"--storage.tsdb.path={os.path.join(workdir, 'data')}",
               f"--web.listen-address=127.0.0.1:{port}",
               f"--web.console.templates={consoles}", f"--web.console.libraries={consoles}",
               "--log.level=warn"]
    with open(os.path.join(workdir, "prometheus.log"), "w") as log:
        try:
            state["process"] = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        except FileNotFoundError:
            raise Failure(f"{options.prometheus} not found (install Debian's prometheus package)") from None
    deadline = time.monotonic() + options.timeout
    expect = options.expect_value

    while time.monotonic() < deadline:
        time.sleep(0.25)
        if state["process"].poll() is not None:
            raise Failure(f"prometheus exited with status {state['process'].returncode}")
        try:
            target = target_state(base)
            if target is None:
                continue  # not discovered yet
            state["result"].update(target_health=target["health"], last_error=target["lastError"],
                                   scrape_url=target["scrapeUrl"])
            if target["health"] != "up" or target["lastScrape"] == NEVER_SCRAPED:
                continue
            value = query_value(base, options.query)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            continue  # prometheus is not listening yet
        state["result"]["value"] = as_json_number(value)
        if value is not None and (expect is None or math.isclose(value, expect, rel_tol=1e-9)):
            return True
    return False


def stop(process):
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True, help="HOST:PORT of the server to scrape")
    parser.add_argument("--bearer", help="token sent as Authorization: Bearer")
    parser.add_argument("--path", default="/metrics")
    parser.add_argument("--query", required=True)
    parser.add_argument("--expect-value", type=float)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--prometheus", default=os.environ.get("GATEHOUSE_PROMETHEUS", "prometheus"))
    options = parser.parse_args()

    # A SIGTERM from the test still stops prometheus and removes the temporary directory.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = tempfile.mkdtemp(prefix="gatehouse-prometheus.")
    state = {"process": None, "result": {"target_health": None, "last_error": None, "scrape_url": None,
                                         "query": options.query, "value": None}}
    try:
        ok = run(options, workdir, state)
        reason = None if ok else f"timed out after {options.timeout:g}s"
    except Failure as failure:
        ok, reason = False, str(failure)
    finally:
        # Its log is read first, so that it does not end with the SIGTERM notice.
        log_path = os.path.join(workdir, "prometheus.log")
        log_tail = open(log_path).read()[-4000:] if os.path.exists(log_path) else ""
        stop(state["process"])
        shutil.rmtree(workdir, ignore_errors=True)

    if ok:
        print(json.dumps(state["result"]), flush=True)
        return 0
    print(f"prometheus_scrape: {reason}; last state: {json.dumps(state['result'])}", file=sys.stderr)
    if log_tail.strip():
        print("prometheus log:\n" + log_tail, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
