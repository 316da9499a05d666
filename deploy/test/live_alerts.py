#!/usr/bin/env python3
"""The alerts against the real thing: for each scenario of deploy/test/scenarios/, a real
Prometheus server on loopback loads deploy/prometheus/rules.yml and scrapes the secure port of
the `tidemark run` that `loadgen stress` starts against its simulated API server while it injects
one cause; through Prometheus' HTTP API this asserts that the cause's alert fires and that no
other alert of the file does. After a scenario every query of the Grafana dashboard is evaluated
against the same Prometheus and must return data (each query in at least one scenario).

    python3 deploy/test/live_alerts.py --release target/release

Time is compressed 60 times: every range and every `for:` of the rule file is read as seconds
instead of minutes (5m -> 5s), with a 1 s scrape and evaluation interval, so that a cause of
20 s shows as the 20 minutes the production rules wait for. Expressions, thresholds and labels
are the file's own. Scenarios run two at a time (--parallel), each with its own Prometheus. Prints
one line a check, a scenario's lines together when it ends, and closes with "N passed, N failed".
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parent.parent
SCENARIOS = DEPLOY / "test" / "scenarios"
EXPECTED = {
    "alert-watch-stall": "TidemarkWatchStalled",
    "alert-api-errors": "TidemarkAPIServerErrors",
    "alert-api-slow": "TidemarkAPIServerSlow",
    "alert-slow-controller": "TidemarkSlowController",
    "alert-hot-key": "TidemarkHotKey",
}
DEFAULT = list(EXPECTED)
# About how long each takes (for the order: longest first).
EXPECTED_SECONDS = {"alert-slow-controller": 55, "alert-hot-key": 41}
# Alerts count from this long after the manager was first seen leading: before that, "no
# leader" is true (nothing scraped yet, or the Lease not taken) and not what a scenario tests.
SETTLE_SECONDS = 3

WRAPPER = """#!/bin/sh
# Stands in for tidemark under `loadgen stress --tidemark`: tells Prometheus (file_sd) which
# loopback port this manager's secure port is, and lets /metrics be scraped without a
# ServiceAccount token (the scrape goes to 127.0.0.1 only).
port=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--secure-port" ]; then port="$a"; fi
  prev="$a"
done
if [ -n "$port" ]; then
  printf '[{"targets":["127.0.0.1:%s"],"labels":{"job":"tidemark"}}]\\n' "$port" > "{targets}/$port.json.tmp"
  mv "{targets}/$port.json.tmp" "{targets}/$port.json"
fi
exec "{tidemark}" "$@" --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compressed_rules(dst):
    text = (DEPLOY / "prometheus" / "rules.yml").read_text()
    text = re.sub(r"\[(\d+)m\]", r"[\1s]", text)
    text = re.sub(r"(for: )(\d+)m", r"\g<1>\2s", text)
    dst.write_text(text)
    return [r["alert"] for g in yaml.safe_load(text)["groups"] for r in g["rules"] if "alert" in r]


def dashboard_queries():
    board = json.loads((DEPLOY / "grafana" / "tidemark.json").read_text())
    queries = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$__rate_interval", "10s").replace("$__range", "30s")
            queries.append((panel["title"], expr))
    return queries


def get(base, path, **params):
    url = f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


class Prometheus:
    def __init__(self, work, rules_file):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.targets = work / "targets"
        self.targets.mkdir()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"},
            "rule_files": [str(rules_file)],
            "scrape_configs": [{
                "job_name": "tidemark",
                "scheme": "https",
                # The managers' serving certificate is the simulated cluster's; the address is loopback.
                "tls_config": {"insecure_skip_verify": True},
                "file_sd_configs": [{"files": [str(self.targets / "*.json")], "refresh_interval": "1s"}],
            }],
        }
        (work / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log = open(work / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{self.base}/-/ready", timeout=2).close()
            except Exception:
                time.sleep(0.2)
                continue
            return
        self.stop()
        raise RuntimeError(f"prometheus did not start; see {work / 'prometheus.log'}")

    def firing(self):
        alerts = get(self.base, "/api/v1/alerts")["data"]["alerts"]
        return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}

    def has_data(self, expr, at):
        r = get(self.base, "/api/v1/query", query=expr, time=f"{at:.3f}")
        # A panel of NaN (a quantile of nothing) shows nothing: it does not count as data.
        return r["status"] == "success" and any(v["value"][1] != "NaN" for v in r["data"]["result"])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def run_scenario(release, name, work, queries_seen, checks):
    rules_file = work / "rules.yml"
    alerts = compressed_rules(rules_file)
    prom = Prometheus(work, rules_file)
    wrapper = work / "tidemark"
    wrapper.write_text(WRAPPER.replace("{targets}", str(prom.targets)).replace("{tidemark}", str(release / "tidemark")))
    wrapper.chmod(0o755)
    fired = {}
    up_seen = False
    leading_at = None
    try:
        start = time.time()
        with open(work / "loadgen.log", "w") as log:
            stress = subprocess.Popen(
                [str(release / "loadgen"), "stress", "--scenario", str(SCENARIOS / f"{name}.toml"), "--seed", "1",
                 "--tidemark", str(wrapper), "--json", str(work / "report.json")],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "NO_COLOR": "1"})
            while stress.poll() is None and time.time() - start < 150:
                time.sleep(1)
                now = time.time() - start
                if not up_seen:
                    up_seen = prom.has_data('up{job="tidemark"} == 1', time.time())
                if leading_at is None:
                    if prom.has_data('tidemark_leader{leader_election="true"} == 1', time.time()):
                        leading_at = now
                    continue
                if now < leading_at + SETTLE_SECONDS:
                    continue
                for alert in prom.firing():
                    fired.setdefault(alert, round(now, 1))
            if stress.poll() is None:
                stress.kill()
        end = time.time()
        checks.check(up_seen, f"{name}: Prometheus scraped the manager's secure port")
        expected = EXPECTED[name]
        checks.check(expected in fired, f"{name}: {expected} fired" + (f" at {fired[expected]} s" if expected in fired else ""),
                     f"fired: {fired}")
        others = {a: t for a, t in fired.items() if a != expected and a in alerts}
        checks.check(not others, f"{name}: no other alert fired", f"also fired: {others}")
        # The cause an alert names must not also make the manager wrong.
        verdict = verdict_of(work / "report.json")
        checks.check(verdict is None, f"{name}: the oracle found no violation and the sets converged", verdict or "")
        # Dashboard queries: a query counts once it returns data at some second of some scenario.
        for title, expr in queries_seen:
            if queries_seen[(title, expr)]:
                continue
            for at in range(int(start) + 5, int(end), 3):
                if prom.has_data(expr, at):
                    queries_seen[(title, expr)] = name
                    break
    finally:
        prom.stop()


def verdict_of(report):
    """None when the stress run's report says it passed, else what went wrong."""
    try:
        r = json.loads(report.read_text())
    except (OSError, ValueError) as e:
        return f"no report ({e})"
    if r["violations"]:
        kinds = sorted({v["invariant"] for v in r["violations"]})
        return f"{len(r['violations'])} violations {kinds}"
    if not r["converged"]:
        return "the sets did not converge"
    return None


class Checks:
    """Counts checks and keeps their lines; a scenario's lines print together when it ends."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.lines = []

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            self.lines.append(f"ok: {what}")
        else:
            self.failed += 1
            self.lines.append(f"FAILED: {what}{': ' + detail if detail else ''}")

    def note(self, line):
        self.lines.append(line)

    def add(self, other):
        self.passed += other.passed
        self.failed += other.failed
        self.lines += other.lines

    def flush(self):
        for line in self.lines:
            print(line, flush=True)
        self.lines = []


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", default="target/release", help="the folder of tidemark and loadgen")
    parser.add_argument("--scenario", action="append", help="only these (names of deploy/test/scenarios/)")
    parser.add_argument("--keep", action="store_true", help="keep the work folders (logs, Prometheus data)")
    parser.add_argument("--parallel", type=int, default=2, help="scenarios run at once")
    a = parser.parse_args()
    release = Path(a.release).resolve()
    checks = Checks()
    queries = {q: None for q in dashboard_queries()}
    names = a.scenario or DEFAULT
    root = Path(tempfile.mkdtemp(prefix="tidemark-live-alerts-"))
    lock = threading.Lock()

    def one(name):
        work = root / name
        work.mkdir()
        t = time.time()
        mine = Checks()
        run_scenario(release, name, work, queries, mine)
        mine.note(f"   ({name}: {time.time() - t:.0f} s, logs in {work})")
        with lock:
            mine.flush()
            checks.add(mine)

    # Two at a time, longest first: each spends its time waiting out `for:` windows, and each
    # has its own Prometheus, API server and manager on ports of their own.
    order = sorted(names, key=lambda n: -EXPECTED_SECONDS.get(n, 0))
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.parallel) as pool:
        for f in [pool.submit(one, name) for name in order]:
            f.result()
    if not a.scenario:
        for (title, expr), seen in queries.items():
            checks.check(seen is not None, f"dashboard: {title!r} returns data" + (f" ({seen})" if seen else ""), expr)
    checks.flush()
    if checks.failed or a.keep:
        print(f"work folders (logs, Prometheus data) kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
