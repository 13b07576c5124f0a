# SPDX-License-Identifier: MIT
"""ulpgate for kernel authors in Python: read the cases `ulpgate export` wrote,
write a kernel's outputs, score them (docs/interop.md; README, "Python").

    fx = ulpgate.Fixtures("fx")
    for case in fx:
        case.write("cand", {"g": my_kernel(**case.inputs)})
    ulpgate.score("fx", "cand").assert_passed()
"""
from .fixtures import (DTYPES, MODES, Case, CandidateError, FixtureError, Fixtures, OutputSpec, cases,
                       to_numpy)
from .score import Failure, Finding, ScoreError, ScoreResult, UlpgateNotFound, find_ulpgate, score

__all__ = ["DTYPES", "MODES", "Case", "CandidateError", "FixtureError", "Fixtures", "OutputSpec", "cases",
           "to_numpy", "Failure", "Finding", "ScoreError", "ScoreResult", "UlpgateNotFound", "find_ulpgate",
           "score"]
