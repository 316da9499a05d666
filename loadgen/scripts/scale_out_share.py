#!/usr/bin/env python3
"""What each scale-out replica received, against the 1-replica run: a markdown table from the JSON
reports of `loadgen stress --scenario scale-out-share-N --json ...` (any N, one of them N = 1).

    loadgen stress --scenario scale-out-share-1 --seed 1 --gate on --json share-1.json
    loadgen stress --scenario scale-out-share-2 --seed 1 --gate on --json share-2.json
    loadgen stress --scenario scale-out-share-4 --seed 1 --gate on --json share-4.json
    python3 loadgen/scripts/scale_out_share.py share-1.json share-2.json share-4.json

Per replica: watch events and bytes as the server sent them while the scenario ran (from its
first step, once the seeded workload settled: the steady share) and in all (with the first lists
and whatever a replica held before the shares settled), counted by User-Agent; the
manager's own count of events, its cached objects, heap and ranges held (scraped at the end;
`-` when the manager does not serve the metric). Each figure is followed by its ratio to the
1-replica figure divided by N: 1.00 is an exact 1/N share. A row `all` per N sums its replicas,
with the ratio to the 1-replica figure itself: above 1.00 is what splitting costs in all."""

import json
import sys

# (column, field of a replicas[] entry)
FIGURES = [
    ("events while running", "running_watch_events"),
    ("bytes while running", "running_watch_bytes"),
    ("events", "server_watch_events"),
    ("bytes", "server_watch_bytes"),
    ("own events", "watch_events"),
    ("cached objects", "cached_objects"),
    ("heap bytes", "heap_allocated_bytes"),
]


def started(report):
    """The replicas of a report that ran at all."""
    return [r for r in report.get("replicas", []) if r.get("incarnations")]


def cell(value, base, n):
    if value is None:
        return "-"
    if not base:
        return f"{value:,}"
    return f"{value:,} ({value * n / base:.2f})"


def main(paths):
    reports = [json.load(open(p)) for p in paths]
    if not reports:
        sys.exit(__doc__)
    by_n = sorted(((len(started(r)), r) for r in reports), key=lambda t: t[0])
    one = next((r for n, r in by_n if n == 1), None)
    if one is None:
        sys.exit("no 1-replica report among them: the ratios need it")
    base = started(one)[0]
    header = ["replicas", "replica", "ranges held"] + [c for c, _ in FIGURES]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n, report in by_n:
        for r in started(report):
            held = r.get("ranges_held")
            cells = [str(n), f"tidemark-{r['index']}", "-" if held is None else str(held)]
            cells += [cell(r.get(field), base.get(field), n) for _, field in FIGURES]
            print("| " + " | ".join(cells) + " |")
        if n > 1:
            cells = [str(n), "all", ""]
            for _, field in FIGURES:
                values = [r.get(field) for r in started(report)]
                summed = None if None in values else sum(values)
                cells.append(cell(summed, base.get(field), 1))
            print("| " + " | ".join(cells) + " |")
    failed = [r["scenario"] for _, r in by_n if r.get("violations") or not r.get("converged")]
    if failed:
        print(f"\nnot passed (violations or not converged): {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:])
