"""Scores one conformance run: of the scenarios a requirement set requires (the suite's own
`list --server --requirements SET`, on stdin), how many passed — none of their checks a
FAILURE — in the results folder given. Prints `SET: N/M required scenarios pass` and the
failing ones, each with its failed checks. With a third argument `client`, the client
scenarios of the listing (`list --client`) are scored instead; with `extension`, the server
scenarios it runs and reports as an extension's without scoring them (the tasks extension),
and the exit status is 1 when one of them fails.

Run: `conformance list --server --requirements SET | python score.py SET RESULTS_DIR [client|extension]`.
"""

import json
import os
import re
import sys

revision, results = sys.argv[1], sys.argv[2]
client = sys.argv[3:] == ["client"]
extension = sys.argv[3:] == ["extension"]
# The listing names scenarios as "  - name" under "Server scenarios", then "Client scenarios"
# (until what is run but not scored: "Run and reported", by reason, "- name [server]").
text = sys.stdin.read()
parts = text.split("Client scenarios")
if extension:
    reported = text.split("Run and reported")[-1].split("  extension (")[-1]
    reported = re.split(r"^  [a-z-]+ \(\d+\):$", reported, maxsplit=1, flags=re.M)[0]
    required = re.findall(r"^\s+- ([a-z0-9_/-]+) \[server\]\s*$", reported, re.M)
else:
    listing = parts[1].split("Run and reported")[0] if client else parts[0]
    required = re.findall(r"^\s+- ([a-z0-9_/-]+)\s*$", listing, re.M)
failing = []
for name in required:
    # A client scenario's results are in `<name>-<date>` (auth/… ones in a folder `auth`), a
    # server scenario's in `server-<name>-<date>`.
    where = os.path.join(results, os.path.dirname(name))
    base = os.path.basename(name) if client else f"server-{name}"
    folders = os.listdir(where) if os.path.isdir(where) else []
    runs = sorted(os.path.join(os.path.dirname(name), f) for f in folders
                  if re.fullmatch(rf"{re.escape(base)}-\d{{4}}-.*", f))
    if not runs:
        failing.append((name, ["not run"]))
        continue
    with open(os.path.join(results, runs[-1], "checks.json")) as f:
        checks = json.load(f)
    failed = [c["id"] for c in checks if c.get("status") == "FAILURE"]
    if failed:
        failing.append((name, failed))
if extension and not required:
    sys.exit(0)
what = "required client " if client else "extension (not required) " if extension else "required "
print(f"{revision}: {len(required) - len(failing)}/{len(required)} {what}scenarios pass")
for name, failed in failing:
    print(f"  failing: {name} ({', '.join(failed)})")
if extension and failing:
    sys.exit(1)
