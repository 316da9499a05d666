#!/usr/bin/env python3
"""Writes deploy/prometheus/rules_test.yml, promtool's unit tests of deploy/prometheus/rules.yml.

One test group per cause: a healthy two-replica install (leader tm-0, standby tm-1) with that one
cause added, evaluated at 40 minutes, and every alert of the file checked there: the cause's
alert fires, every other alert stays quiet. A healthy group checks that nothing fires at all.
Some causes also carry the symptoms they bring along (API errors slow the queue, a stalled watch
parks keys that never wake): those cases show the narrower alert suppressing the wider one.

`--check` compares the committed file with what this script writes, so the cases here and the
file promtool runs cannot drift apart.
"""

import copy
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
RULES = HERE.parent / "prometheus" / "rules.yml"
OUT = HERE.parent / "prometheus" / "rules_test.yml"

MINUTES = 45
EVAL = "40m"
JOB = {"job": "tidemark"}


def sel(metric, **labels):
    labels = {**JOB, **labels}
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{metric}{{{inner}}}"


def steady(value):
    return f"{value}x{MINUTES}"


def rising(per_minute, start=0):
    return f"{start}+{per_minute}x{MINUTES}"


def healthy():
    """Series of a healthy install, keyed by series selector."""
    s = {}
    for inst, leader in (("tm-0", 1), ("tm-1", 0)):
        s[sel("tidemark_leader", instance=inst, leader_election="true")] = steady(leader)
        for group, resource in (("", "pods"), ("apps", "replicasets")):
            rl = {"instance": inst, "group": group, "resource": resource}
            # Bookmarks and events move every watermark; one relist-free list each.
            s[sel("tidemark_store_resource_version", **rl)] = rising(100, 1000)
            s[sel("tidemark_informer_synced", **rl)] = steady(1)
            s[sel("tidemark_lists_total", **rl)] = steady(1)
        for group in ("", "apps"):
            s[sel("tidemark_circuit_breaker_open", instance=inst, group=group)] = steady(0)
    # Only the leader works.
    inst = {"instance": "tm-0"}
    c = {"controller": "replicaset"}
    s[sel("tidemark_writes_total", result="success", **inst)] = rising(60)
    # Status updates race the kubelet's: one write in seven meets a 409, which the next
    # decision settles. Conflicts are not the API server failing.
    s[sel("tidemark_writes_total", result="conflict", **inst)] = rising(10)
    s[sel("tidemark_writes_total", result="error", **inst)] = steady(0)
    for result, rate in (("success", 6), ("error", 0)):
        s[sel("tidemark_live_reads_total", result=result, **inst, **c)] = rising(rate)
    lag = {**inst, **c, "group": "", "resource": "pods"}
    s[sel("tidemark_cache_lag_seconds_sum", **lag)] = rising(6)
    s[sel("tidemark_cache_lag_seconds_count", **lag)] = rising(60)
    # Keys park now and then (a scrape seldom catches one) and wake within the minute.
    s[sel("tidemark_parked_keys", **inst, **c)] = steady(0)
    s[sel("tidemark_parked_duration_seconds_count", **inst, **c)] = rising(10)
    s[sel("tidemark_stale_sync_skips_total", **lag)] = rising(10)
    s[sel("tidemark_reconcile_total", result="success", **inst, **c)] = rising(60)
    # The skips fall on many keys: the most-skipped one has a fifth of them, now and then.
    s[sel("tidemark_hot_key_share", **inst, **c)] = steady(0.2)
    s[sel("tidemark_hot_key_skips_per_second", **inst, **c)] = steady(0.03)
    q = {**inst, "name": "replicaset"}
    s[sel("workqueue_queue_duration_seconds_sum", **q)] = rising(0.6)
    s[sel("workqueue_queue_duration_seconds_count", **q)] = rising(60)
    s[sel("workqueue_work_duration_seconds_sum", **q)] = rising(6)
    s[sel("workqueue_work_duration_seconds_count", **q)] = rising(60)
    s[sel("workqueue_longest_running_processor_seconds", **q)] = steady(0)
    # Writes and live reads answer within 100 ms (a histogram's cumulative buckets).
    for le in LATENCY_BOUNDS:
        s[sel("rest_client_request_duration_seconds_bucket", **inst, verb="POST", host=API, le=le)] = rising(60)
        s[sel("tidemark_live_read_duration_seconds_bucket", **inst, le=le)] = rising(6)
    return s


API = "10.96.0.1:443"
LATENCY_BOUNDS = ("0.1", "1", "2", "+Inf")


def slow_writes():
    """Every write of the leader takes between 1 and 2 s."""
    return {
        sel("rest_client_request_duration_seconds_bucket", instance="tm-0", verb="POST", host=API, le=le): steady(0)
        for le in ("0.1", "1")
    }


def leader(**more):
    return {**JOB, "instance": "tm-0", **more}


# alert -> (what changes in the healthy series, the labels the alert fires with)
CASES = {
    "TidemarkAPIServerErrors": (
        {
            # One write in seven fails; the queue backs up behind the retries, which must not
            # page as a slow controller.
            sel("tidemark_writes_total", result="error", instance="tm-0"): rising(10),
            sel("workqueue_queue_duration_seconds_sum", instance="tm-0", name="replicaset"): rising(120),
        },
        [{"instance": "tm-0"}],
    ),
    "TidemarkAPIServerSlow": (
        {
            # Writes take over a second and nothing fails: keys' work grows past 5 s and one
            # stays parked on its slow writes, which must page neither as a slow controller nor
            # as a hot key.
            **slow_writes(),
            sel("workqueue_work_duration_seconds_sum", instance="tm-0", name="replicaset"): rising(600),
            sel("tidemark_parked_keys", instance="tm-0", controller="replicaset"): steady(1),
        },
        [{"instance": "tm-0"}],
    ),
    "TidemarkWatchStalled": (
        {
            # The Pod watermark stops while the ReplicaSet one moves on; keys park and never
            # wake, which must not page as starved keys.
            sel("tidemark_store_resource_version", instance="tm-0", group="", resource="pods"): steady(1000),
            sel("tidemark_parked_keys", instance="tm-0", controller="replicaset"): rising(1, 5),
            sel("tidemark_parked_duration_seconds_count", instance="tm-0", controller="replicaset"): steady(0),
            sel("tidemark_cache_lag_seconds_sum", instance="tm-0", controller="replicaset", group="", resource="pods"): steady(0),
            sel("tidemark_cache_lag_seconds_count", instance="tm-0", controller="replicaset", group="", resource="pods"): steady(0),
        },
        [leader(group="", resource="pods")],
    ),
    "TidemarkWatchRelisting": (
        {sel("tidemark_lists_total", instance="tm-0", group="", resource="pods"): rising(1, 1)},
        [leader(group="", resource="pods")],
    ),
    "TidemarkCacheLagHigh": (
        {sel("tidemark_cache_lag_seconds_sum", instance="tm-0", controller="replicaset", group="", resource="pods"): rising(300)},
        [{"instance": "tm-0", "group": "", "resource": "pods"}],
    ),
    "TidemarkHotKey": (
        {
            # One key takes nine skips in ten, once a second, and stays parked in between.
            sel("tidemark_hot_key_share", instance="tm-0", controller="replicaset"): steady(0.9),
            sel("tidemark_hot_key_skips_per_second", instance="tm-0", controller="replicaset"): steady(1),
            sel("tidemark_parked_keys", instance="tm-0", controller="replicaset"): steady(1),
        },
        [leader(controller="replicaset")],
    ),
    "TidemarkStarvedKeys": (
        {
            sel("tidemark_parked_keys", instance="tm-0", controller="replicaset"): steady(5),
            sel("tidemark_parked_duration_seconds_count", instance="tm-0", controller="replicaset"): steady(100),
        },
        [leader(controller="replicaset")],
    ),
    "TidemarkSlowController": (
        {
            # Writes crawl (10 s a key on average) and a key stays parked on them: the slowness,
            # which must not page as a hot key.
            sel("workqueue_work_duration_seconds_sum", instance="tm-0", name="replicaset"): rising(600),
            sel("tidemark_parked_keys", instance="tm-0", controller="replicaset"): steady(1),
        },
        [{"instance": "tm-0", "name": "replicaset"}],
    ),
    "TidemarkCircuitBreakerOpen": (
        {sel("tidemark_circuit_breaker_open", instance="tm-0", group="apps"): steady(1)},
        [{"instance": "tm-0", "group": "apps"}],
    ),
    "TidemarkNoLeader": (
        {sel("tidemark_leader", instance="tm-0", leader_election="true"): steady(0)},
        [{}],
    ),
    "TidemarkTwoLeaders": (
        {sel("tidemark_leader", instance="tm-1", leader_election="true"): steady(1)},
        [{}],
    ),
}


def rules():
    doc = yaml.safe_load(RULES.read_text())
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


def render(template, labels):
    """The annotation as Prometheus renders it: the templates here use only $labels."""
    if re.search(r"{{(?!\s*\$labels\.\w+\s*}})", template):
        sys.exit(f"annotation uses more than $labels, expected values cannot be written: {template}")
    return re.sub(r"{{\s*\$labels\.(\w+)\s*}}", lambda m: labels.get(m.group(1), ""), template)


def group(name, series, firing):
    tests = []
    for rule in rules():
        expected = []
        for labels in firing.get(rule["alert"], []):
            labels = {k: v for k, v in labels.items() if v != ""}
            all_labels = {**labels, **rule.get("labels", {})}
            expected.append(
                {
                    "exp_labels": all_labels,
                    "exp_annotations": {k: render(v, all_labels) for k, v in rule["annotations"].items()},
                }
            )
        tests.append({"eval_time": EVAL, "alertname": rule["alert"], "exp_alerts": expected})
    return {
        "name": name,
        "interval": "1m",
        "input_series": [{"series": k, "values": v} for k, v in sorted(series.items())],
        "alert_rule_test": tests,
    }


def build():
    names = {r["alert"] for r in rules()}
    if names != set(CASES):
        sys.exit(f"alerts without a case: {sorted(names - set(CASES))}; cases without an alert: {sorted(set(CASES) - names)}")
    groups = [group("healthy: nothing fires", healthy(), {})]
    for alert, (change, firing) in CASES.items():
        series = copy.deepcopy(healthy())
        unknown = set(change) - set(series)
        if unknown:
            sys.exit(f"{alert}: the case changes series the healthy install lacks: {sorted(unknown)}")
        series.update(change)
        groups.append(group(f"{alert}: fires on its cause, the others stay quiet", series, {alert: firing}))
    header = (
        "# Written by deploy/test/rules_cases.py (edit the cases there and run it); run with\n"
        "#   promtool test rules deploy/prometheus/rules_test.yml\n"
    )
    body = yaml.safe_dump(
        {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": groups},
        sort_keys=False,
        width=200,
    )
    return header + body


if __name__ == "__main__":
    text = build()
    if sys.argv[1:] == ["--check"]:
        if OUT.read_text() != text:
            sys.exit(f"{OUT} is not what {Path(__file__).name} writes: run it and commit the result")
        print(f"{OUT.name} matches its cases")
    else:
        OUT.write_text(text)
        print(f"wrote {OUT}")
