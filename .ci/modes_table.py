"""Prints the README's baseline table from `loadgen stress --gate all` reports, and fails when a
mode survives a scenario that must catch it (where upstream kube-controller-manager is caught)."""

import glob
import json
import os
import sys

# The weaker modes each scenario must catch, at seed 1. naive has no protection at all; the
# upstream modes lack what the scenario adds beyond a key's own writes (a relist that cancels a
# running plan, a watch delay measured rather than guessed).
MUST_CATCH = {
    "replicaset-relist-mid-plan": {"naive", "upstream-1.35", "upstream-1.36"},
    "daemonset-node-lag": {"naive", "upstream-1.35", "upstream-1.36"},
    "replicaset-primary-lag": {"naive"},
    "statefulset-primary-lag": {"naive"},
    "leader-handover-write-latency": {"naive"},
}
MODES = ["naive", "upstream-1.35", "upstream-1.36", "tidemark"]


def main(directory):
    print("| scenario | " + " | ".join(MODES) + " |")
    print("|---|" + "---|" * len(MODES))
    bad = []
    for path in sorted(glob.glob(os.path.join(directory, "*-modes.json"))):
        report = json.load(open(path))
        rows = {r["mode"]: r for r in report["rows"]}
        cells = []
        for mode in MODES:
            row = rows.get(mode)
            if row is None or row["error"]:
                cells.append("error")
                bad.append(f'{report["scenario"]}: {mode} could not run')
                continue
            violations = sum(row["violations"].values())
            caught = violations > 0 or not row["converged"]
            cells.append(f"caught ({violations})" if caught else "survives")
            if mode == "tidemark" and caught:
                bad.append(f'{report["scenario"]}: tidemark was caught')
            if not caught and mode in MUST_CATCH.get(report["scenario"], ()):
                bad.append(f'{report["scenario"]}: {mode} was not caught')
        print(f'| {report["scenario"]} | ' + " | ".join(cells) + " |")
    if bad:
        print("\n".join(bad), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
