#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""same_figures.py A/report.json B/report.json: exit 0 when every case's
figures (outputs, samples, bits_hash, verdicts) are equal, timings ignored;
else exit 1 naming each case and field that differs. The check behind
"bit for bit" in docs/performance.md: a speed change to a reference must
leave every figure of a run's report as it was."""
import json, sys
def strip(r):
    out = []
    for c in r["cases"]:
        c = {k: v for k, v in c.items() if k not in ("kernel_seconds", "reference_seconds")}
        out.append(c)
    return out
a, b = (strip(json.load(open(p))) for p in sys.argv[1:3])
if a == b:
    print("equal: %d cases" % len(a)); sys.exit(0)
for ca, cb in zip(a, b):
    for k in ca:
        if ca[k] != cb.get(k):
            print("differ: case", ca.get("label"), "field", k)
sys.exit(1)
