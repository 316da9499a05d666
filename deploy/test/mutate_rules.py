#!/usr/bin/env python3
"""Shows that every alert's unit test can fail: for each alert in deploy/prometheus/rules.yml,
a copy of the file where that alert can never fire must fail `promtool test rules`.
Prints one line an alert and closes with "N passed, N failed"."""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

PROM = Path(__file__).resolve().parent.parent / "prometheus"


def main():
    doc = yaml.safe_load((PROM / "rules.yml").read_text())
    alerts = [r["alert"] for g in doc["groups"] for r in g["rules"] if "alert" in r]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(PROM / "rules_test.yml", tmp)
        for alert in alerts:
            mutated = yaml.safe_load((PROM / "rules.yml").read_text())
            for g in mutated["groups"]:
                for r in g["rules"]:
                    if r.get("alert") == alert:
                        r["expr"] = "vector(1) > 2"
            (Path(tmp) / "rules.yml").write_text(yaml.safe_dump(mutated))
            run = subprocess.run(["promtool", "test", "rules", str(Path(tmp) / "rules_test.yml")],
                                 capture_output=True, text=True)
            if run.returncode != 0 and alert in run.stdout + run.stderr:
                passed += 1
                print(f"ok: {alert} silenced, its unit test fails")
            else:
                failed += 1
                print(f"FAILED: {alert} silenced, yet promtool test rules passed (or failed elsewhere)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
