# SPDX-License-Identifier: MIT
"""`ulpgate score` from Python: run it on a candidate directory and read its
verdict back from report.json (docs/report-format.md).

Exit codes (README): 0 pass, 1 gate failed (a ScoreResult with passed False),
2 usage or input error and 3 internal error (ScoreError with ulpgate's own
message: nothing was scored, so there is no verdict to return)."""
import json
import os
import re
import shutil
import subprocess
import tempfile

# The element a case's first failure names (harness/runner.c):
#   [candidate] g[192] exact: y=-0x1.ca292ap+5 r=-0x1.0c1804p-2 bound=1.49e-08 ratio=3.83e+09 ulp_err=1.91e+09
ELEMENT_FAILURE = re.compile(r"^\[(?P<source>[^\]]*)\] (?P<output>\w+)\[(?P<index>\d+)\] (?P<mode>\w+): (?P<rest>.*)$")
FIELD = re.compile(r"\b(y|r|bound|ratio|ulp_err)=(\S+)")


class UlpgateNotFound(FileNotFoundError):
    """No ulpgate binary: pass ulpgate=PATH, set $ULPGATE, or build it (make) in the repository."""


class ScoreError(Exception):
    """`ulpgate score` stopped before scoring (exit 2: usage or input error; 3: internal error).
    .exit_code, .message (ulpgate's stderr), .command."""

    def __init__(self, exit_code, message, command):
        self.exit_code, self.message, self.command = exit_code, message, command
        what = "bad input" if exit_code == 2 else "internal error" if exit_code == 3 else "unexpected exit"
        super().__init__("ulpgate score: %s (exit %d): %s" % (what, exit_code, message.strip() or "(no message)"))


def _number(text):
    """C's %g and %a spellings (hex floats, inf, nan) as a float; None if neither."""
    try:
        return float.fromhex(text) if "0x" in text.lower() else float(text)
    except ValueError:
        return None


class Failure:
    """One failed case: case (FAMILY/LABEL), family, label, and, when the failure
    names an element, output, mode, index, y, r, bound, ratio, ulp_err (floats;
    None where the failure is of another kind); text is ulpgate's reason, whole."""

    def __init__(self, family, label, text):
        self.family, self.label, self.text = family, label, text
        self.case = "%s/%s" % (family, label)
        self.output = self.mode = self.index = None
        self.y = self.r = self.bound = self.ratio = self.ulp_err = None
        m = ELEMENT_FAILURE.match(text or "")
        if m:
            self.output, self.mode, self.index = m["output"], m["mode"], int(m["index"])
            for key, value in FIELD.findall(m["rest"]):
                setattr(self, key, _number(value))

    def __str__(self):
        if self.index is None:
            return "%s: %s" % (self.case, self.text)
        return "%s: %s[%d] %s: y=%.9g r=%.9g bound=%.3g ratio=%.3g" % (
            self.case, self.output, self.index, self.mode, self.y, self.r, self.bound, self.ratio)

    __repr__ = __str__


class Finding:
    """One finding of the gate: kind ("FAIL", "WORSE_OK", "BETTER", "INFO") and text."""

    def __init__(self, kind, text):
        self.kind, self.text = kind, text

    def __str__(self):
        return "%s: %s" % (self.kind, self.text)

    __repr__ = __str__


class ScoreResult:
    """The verdict of one `ulpgate score` run.

    passed, exit_code, failures (list of Failure: the failed cases, in case
    order), findings (list of Finding, the gate's order), report_dir (the
    report set: report.md, report.json, ...), report (report.json, parsed),
    output (what ulpgate printed), command (the argument list)."""

    SHOWN = 5  # failures a message lists before "... and N more"

    def __init__(self, exit_code, report_dir, output, command):
        self.exit_code, self.report_dir, self.output, self.command = exit_code, report_dir, output, command
        with open(os.path.join(report_dir, "report.json")) as f:
            self.report = json.load(f)
        verdict = self.report["verdict"]
        self.passed = exit_code == 0 and bool(verdict["pass"])
        self.findings = [Finding(f["kind"], f["text"]) for f in verdict["findings"]]
        self.failures = [Failure(c["family"], c["label"], c["failure"])
                         for c in self.report["cases"] if not c["passed"] and c.get("failure")]

    def __bool__(self):
        return self.passed

    def __str__(self):
        cases = self.report["cases"]
        if self.passed:
            return "ulpgate score: PASS, %d cases (report: %s)" % (len(cases), self.report_dir)
        gate_fails = [f for f in self.findings if f.kind == "FAIL"]
        lines = ["ulpgate score: FAIL (exit %d): %d of %d cases failed, %d FAIL findings"
                 % (self.exit_code, len(self.failures), len(cases), len(gate_fails))]
        lines += ["  " + str(f) for f in self.failures[:self.SHOWN]]
        if len(self.failures) > self.SHOWN:
            lines.append("  ... and %d more failed cases" % (len(self.failures) - self.SHOWN))
        # The gate's own findings (budgets, baseline) that no case failure already says.
        other = [f for f in gate_fails if not any(f.text.endswith(x.text) for x in self.failures if x.text)]
        lines += ["  " + f.text for f in other[:self.SHOWN]]
        if len(other) > self.SHOWN:
            lines.append("  ... and %d more findings" % (len(other) - self.SHOWN))
        lines.append("report: %s" % os.path.join(self.report_dir, "report.md"))
        return "\n".join(lines)

    def assert_passed(self):
        """Raise AssertionError with str(self) unless the candidate passed."""
        if not self.passed:
            raise AssertionError(str(self))


def _repository_binary(start):
    d = os.path.abspath(start)
    while True:
        candidate = os.path.join(d, "build", "ulpgate")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def find_ulpgate(ulpgate=None):
    """The ulpgate binary: the argument, else $ULPGATE, else build/ulpgate in the
    current directory or one above it (the repository), else `ulpgate` on PATH."""
    for path, origin in ((ulpgate, "the ulpgate argument"), (os.environ.get("ULPGATE"), "$ULPGATE")):
        if path:
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise UlpgateNotFound("%s names %s, which is not an executable file" % (origin, path))
            return os.path.abspath(path)
    found = _repository_binary(os.getcwd()) or _repository_binary(os.path.dirname(__file__)) or shutil.which("ulpgate")
    if found is None:
        raise UlpgateNotFound("no ulpgate binary: pass ulpgate=PATH, set $ULPGATE, or run `make` in the "
                              "repository (build/ulpgate in the current directory or one above it)")
    return found


def score(fixtures, candidate, budgets=None, reports=None, profile=None, ulpgate=None, baseline=None,
          enforce_stat_budgets=False, jobs=None, filter=None, extra_args=()):
    """Run `ulpgate score` on CANDIDATE (a directory of case files) against the
    fixture directory FIXTURES and return a ScoreResult.

    budgets: default fixtures/budgets of the repository the binary was built in
    (BINARY/../../fixtures/budgets). reports: the report set's directory
    (replaced whole); default a new temporary directory, kept so that the
    report can be read after a failure. profile: a profile name or path
    (`--profile`). filter: score only the cases whose "family/label" contains
    it (`--filter`; CANDIDATE then needs only their files). extra_args:
    further arguments, passed as they are.
    Exit 2 or 3 raises ScoreError with ulpgate's message."""
    binary = find_ulpgate(ulpgate)
    if budgets is None:
        budgets = os.path.join(os.path.dirname(os.path.dirname(binary)), "fixtures", "budgets")
        if not os.path.isdir(budgets):
            raise FileNotFoundError("no budgets given and %s does not exist: pass budgets=PATH" % budgets)
    if reports is None:
        reports = os.path.join(tempfile.mkdtemp(prefix="ulpgate-score-"), "reports")
    command = [binary, "score", "--fixtures", os.fspath(fixtures), "--candidate", os.fspath(candidate),
               "--budgets", os.fspath(budgets), "--reports", os.fspath(reports), "--quiet"]
    if profile is not None:
        command += ["--profile", os.fspath(profile)]
    if baseline is not None:
        command += ["--baseline", os.fspath(baseline)]
    if enforce_stat_budgets:
        command.append("--enforce-stat-budgets")
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    if filter is not None:
        command += ["--filter", filter]
    command += [os.fspath(a) for a in extra_args]
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if run.returncode not in (0, 1):
        raise ScoreError(run.returncode, run.stderr or run.stdout, command)
    return ScoreResult(run.returncode, os.fspath(reports), run.stdout + run.stderr, command)
