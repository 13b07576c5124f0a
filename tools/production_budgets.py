#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes fixtures/budgets-production/ from fixtures/budgets/ and the
report.json files of production runs (docs/budgets.md, "Production budgets").

The built-in kernels' ULP statistics at production shapes (longer sequences,
more heads) reach further into the tails than on the default sweep; the
default budgets stay tight and the production run gates against its own.
Each statistic the production figures exceed is widened to the figure with
a margin: max_ulp_dist to 1.5x, p99_ulp_dist to 2x (at least +1),
min_share_cr to the share less 0.02. Everything else is copied as it is.

usage: tools/production_budgets.py REPORT.json [REPORT.json ...]
"""
import json
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "fixtures" / "budgets"
PRODUCTION = ROOT / "fixtures" / "budgets-production"


def measured(reports):
    """(family, output, mode) -> the production statistics, from every report."""
    out = {}
    for path in reports:
        report = json.loads(pathlib.Path(path).read_text())
        for family in report["families"]:
            for output in family["outputs"]:
                for mode, stats in output["modes"].items():
                    if stats.get("elements", 0):
                        out[(family["name"], output["name"], mode)] = stats
    return out


def widened(budget, stats):
    b = dict(budget)
    if "max_ulp_dist" in b and stats["max_ulp_dist"] > b["max_ulp_dist"]:
        b["max_ulp_dist"] = math.ceil(1.5 * stats["max_ulp_dist"])
    if "p99_ulp_dist" in b and stats["p99_ulp_dist"] > b["p99_ulp_dist"]:
        b["p99_ulp_dist"] = max(2 * stats["p99_ulp_dist"], stats["p99_ulp_dist"] + 1)
    if "min_share_cr" in b and stats["share_cr"] < b["min_share_cr"]:
        b["min_share_cr"] = max(0.0, math.floor((stats["share_cr"] - 0.02) * 100) / 100)
    return b


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    figures = measured(argv[1:])
    PRODUCTION.mkdir(exist_ok=True)
    for path in sorted(DEFAULT.glob("*.json")):
        doc = json.loads(path.read_text())
        for family, outputs in doc["families"].items():
            for output, modes in outputs.items():
                for mode, budget in modes.items():
                    stats = figures.get((family, output, mode))
                    if stats:
                        modes[mode] = widened(budget, stats)
        (PRODUCTION / path.name).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv)
