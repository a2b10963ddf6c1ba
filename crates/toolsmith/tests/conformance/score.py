"""Scores one conformance run: of the scenarios a requirement set requires (the suite's own
`list --server --requirements SET`, on stdin), how many passed — none of their checks a
FAILURE — in the results folder given. Prints `SET: N/M required scenarios pass` and the
failing ones, each with its failed checks.

Run: `conformance list --server --requirements SET | python score.py SET RESULTS_DIR`.
"""

import json
import os
import re
import sys

revision, results = sys.argv[1], sys.argv[2]
# The listing names server scenarios as "  - name" under "Server scenarios".
listing = sys.stdin.read().split("Client scenarios")[0]
required = re.findall(r"^\s+- ([a-z0-9-]+)\s*$", listing, re.M)
folders = os.listdir(results)
failing = []
for name in required:
    runs = sorted(f for f in folders if re.fullmatch(rf"server-{re.escape(name)}-\d{{4}}-.*", f))
    if not runs:
        failing.append((name, ["not run"]))
        continue
    with open(os.path.join(results, runs[-1], "checks.json")) as f:
        checks = json.load(f)
    failed = [c["id"] for c in checks if c.get("status") == "FAILURE"]
    if failed:
        failing.append((name, failed))
print(f"{revision}: {len(required) - len(failing)}/{len(required)} required scenarios pass")
for name, failed in failing:
    print(f"  failing: {name} ({', '.join(failed)})")
