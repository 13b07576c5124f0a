# SPDX-License-Identifier: MIT
"""Tests of the ulpgate Python package against the real binary.

The binary comes from $ULPGATE or build/ulpgate above the current directory
(tests/interop/run.sh sets $ULPGATE). The fixtures (conftest.py) are the
interop sweep (gdn_chunk_cumsum in f32, head_norm_rope in bf16).
The right candidate is the exact reference itself, correctly rounded: a kernel
can do no better, so it must pass in both modes.
"""
import os

import ml_dtypes
import numpy as np
import pytest
import ulpgate
from conftest import REPO


def reference_outputs(case):
    return {o.name: case.reference(o.name) for o in case.outputs if o.size > 0}


def write_reference_candidate(fx, directory):
    for case in fx:
        case.write(directory, reference_outputs(case))


def first_case(fx, family):
    return fx.select(family)[0]


def test_cases_carry_the_manifest(fx):
    assert len(fx) == len(fx.manifest["cases"]) > 0
    for case, entry in zip(fx, fx.manifest["cases"]):
        assert (case.family, case.label, case.regime, case.params) == (
            entry["family"], entry["label"], entry["regime"], entry["params"])
        for i in entry["inputs"]:
            array = case.inputs[i["name"]]
            assert list(array.shape) == i["shape"]
            assert array.dtype == ulpgate.DTYPES[i["dtype"]]
        assert [(o.name, o.dtype, list(o.shape)) for o in case.outputs] == [
            (o["name"], ulpgate.DTYPES[o["dtype"]], o["shape"]) for o in entry["outputs"]]
    rope = first_case(fx, "head_norm_rope")
    assert rope.inputs["input_bf16"].dtype == np.dtype(ml_dtypes.bfloat16)
    assert rope.output("output_bf16").dtype == np.dtype(ml_dtypes.bfloat16)


def test_wrong_shape_names_case_tensor_expected_and_got(fx, tmp_path):
    case = first_case(fx, "gdn_chunk_cumsum")
    g = case.reference("g")
    with pytest.raises(ulpgate.CandidateError) as e:
        case.write(tmp_path / "cand", {"g": g.reshape(-1)})
    message = str(e.value)
    assert case.name in message and "output g" in message
    assert "expected shape %s, got [%d]" % (list(g.shape), g.size) in message
    assert not (tmp_path / "cand").exists(), "nothing may be written before every output is checked"


def test_float32_for_bf16_needs_cast(fx, tmp_path):
    case = first_case(fx, "head_norm_rope")
    y32 = case.reference("output_bf16").astype(np.float32)
    with pytest.raises(ulpgate.CandidateError, match=r"output_bf16: expected dtype bfloat16, got float32 "
                                                     r"\(pass cast=True"):
        case.write(tmp_path, {"output_bf16": y32})
    assert not os.listdir(tmp_path)
    path = case.write(tmp_path, {"output_bf16": y32}, cast=True)
    with ulpgate.fixtures.safe_open(path, framework="numpy") as f:
        written = f.get_tensor("output_bf16")
    assert written.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(written.view(np.uint16), case.reference("output_bf16").view(np.uint16))


def test_unknown_and_missing_outputs(fx, tmp_path):
    case = first_case(fx, "gdn_chunk_cumsum")
    with pytest.raises(ulpgate.CandidateError, match="'gg' is not an output of gdn_chunk_cumsum"):
        case.write(tmp_path, {"gg": case.reference("g")})
    with pytest.raises(ulpgate.CandidateError, match="output g is missing"):
        case.write(tmp_path, {})


class TensorLike:
    """What a framework tensor offers: .numpy() and a device."""

    def __init__(self, array, device_type="cpu"):
        self.array, self.device = array, type("Device", (), {"type": device_type, "__str__": lambda s: device_type})()

    def numpy(self):
        return self.array

    def cpu(self):
        return TensorLike(self.array)


class ArrayLike:
    def __init__(self, array):
        self.array = array

    def __array__(self, dtype=None, copy=None):
        return self.array


def test_tensor_likes_are_accepted_and_device_tensors_refused(fx, tmp_path):
    case = first_case(fx, "gdn_chunk_cumsum")
    g = case.reference("g")
    case.write(tmp_path / "a", {"g": TensorLike(g)})
    case.write(tmp_path / "b", {"g": ArrayLike(g)})
    with pytest.raises(ulpgate.CandidateError, match=r"output g is on device cuda: move it with \.cpu\(\) first"):
        case.write(tmp_path / "c", {"g": TensorLike(g, "cuda")})


def test_a_right_candidate_passes(fx, tmp_path):
    write_reference_candidate(fx, tmp_path / "cand")
    result = ulpgate.score(fx.directory, tmp_path / "cand", reports=tmp_path / "reports")
    assert result.passed and result.exit_code == 0 and bool(result)
    assert result.failures == []
    assert result.report_dir == str(tmp_path / "reports")
    assert os.path.isfile(os.path.join(result.report_dir, "report.json"))
    result.assert_passed()
    assert str(result).startswith("ulpgate score: PASS, %d cases" % len(fx))


def test_a_wrong_element_fails_with_its_figures(fx, tmp_path):
    write_reference_candidate(fx, tmp_path / "cand")
    case = first_case(fx, "gdn_chunk_cumsum")
    g = case.reference("g").copy()
    g.reshape(-1)[70] += np.float32(1)
    case.write(tmp_path / "cand", {"g": g})
    result = ulpgate.score(fx.directory, tmp_path / "cand", reports=tmp_path / "reports")
    assert not result.passed and result.exit_code == 1
    assert len(result.failures) == 1
    failure = result.failures[0]
    r = float(case.reference_f64("g").reshape(-1)[70])
    assert (failure.case, failure.output, failure.index, failure.mode) == (case.name, "g", 70, "exact")
    assert failure.y == float(g.reshape(-1)[70])
    assert abs(failure.r - r) <= 2 ** -23 * abs(r), "ulpgate prints r to f32 precision (%a)"
    assert 0 < failure.bound < 1 and failure.ratio > 1
    assert any(f.kind == "FAIL" and "g exact: max_ratio" in f.text for f in result.findings)
    with pytest.raises(AssertionError) as e:
        result.assert_passed()
    message = str(e.value)
    assert message == str(result)
    assert "1 of %d cases failed" % len(fx) in message
    assert "%s: g[70] exact: y=%.9g r=%.9g bound=" % (case.name, failure.y, failure.r) in message
    assert "report: %s" % os.path.join(str(tmp_path / "reports"), "report.md") in message


def test_filter_scores_the_cases_a_candidate_ran(fx, tmp_path):
    ran = fx.select("gdn_chunk_cumsum")
    assert 0 < len(ran) < len(fx)
    for case in ran:
        case.write(tmp_path / "cand", reference_outputs(case))
    result = ulpgate.score(fx.directory, tmp_path / "cand", reports=tmp_path / "reports", filter="gdn_chunk_cumsum/")
    result.assert_passed()
    assert str(result).startswith("ulpgate score: PASS, %d cases" % len(ran))
    with pytest.raises(ulpgate.ScoreError, match="does not exist"):
        ulpgate.score(fx.directory, tmp_path / "cand", reports=tmp_path / "all")
    with pytest.raises(ulpgate.ScoreError, match="matches no case"):
        ulpgate.score(fx.directory, tmp_path / "cand", reports=tmp_path / "none", filter="no-such-family/")


def test_bad_input_raises_with_ulpgates_message(fx, tmp_path):
    write_reference_candidate(fx, tmp_path / "cand")
    missing = fx.cases[0].file
    os.unlink(tmp_path / "cand" / missing)
    with pytest.raises(ulpgate.ScoreError) as e:
        ulpgate.score(fx.directory, tmp_path / "cand", reports=tmp_path / "reports")
    assert e.value.exit_code == 2
    assert missing in str(e.value) and "bad input (exit 2)" in str(e.value)
    assert not (tmp_path / "reports").exists()


def test_profile_passthrough(fx, tmp_path):
    write_reference_candidate(fx, tmp_path / "cand")
    with pytest.raises(ulpgate.ScoreError, match="no-such-profile"):
        ulpgate.score(fx.directory, tmp_path / "cand", reports=tmp_path / "reports", profile="no-such-profile")


def test_binary_lookup(tmp_path, monkeypatch):
    monkeypatch.setenv("ULPGATE", str(tmp_path / "nothing"))
    with pytest.raises(ulpgate.UlpgateNotFound, match=r"\$ULPGATE names .*nothing, which is not an executable"):
        ulpgate.find_ulpgate()
    explicit = ulpgate.find_ulpgate(os.path.join(REPO, "build", "ulpgate")) if os.path.exists(
        os.path.join(REPO, "build", "ulpgate")) else None
    assert explicit is None or explicit.endswith("build/ulpgate")


def e2e_candidate(case, directory, g=None):
    """o and final_state as the exact recurrence rounds them (the best a kernel
    can do), and g if given: a pipeline that hands over only what it has."""
    outputs = {"o": case.reference("o"), "final_state": case.reference("final_state")}
    if g is not None:
        outputs["g"] = g
    case.write(directory, outputs)


def chunk_cumsum(g_raw, chunk):
    b, t, h = g_raw.shape
    return np.cumsum(g_raw.reshape(b, t // chunk, chunk, h), axis=2, dtype=np.float32).reshape(b, t, h)


def test_a_pipeline_hands_over_what_it_has(e2e_fx, tmp_path):
    case = e2e_fx.cases[0]
    spec = case.output("w")
    assert spec.optional and spec.modes == ()
    assert case.output("o").modes == ("exact",)
    with pytest.raises(ulpgate.FixtureError, match="o has no exported staged reference"):
        case.reference("o", "staged")
    e2e_candidate(case, tmp_path / "fused")
    ulpgate.score(e2e_fx.directory, tmp_path / "fused", reports=tmp_path / "r1").assert_passed()
    report = open(tmp_path / "r1" / "report.md").read()
    assert "| g | 0 | 0 | 1 |" in report and "| o | 1 | 0 | 1 |" in report

    g = chunk_cumsum(case.inputs["g_raw"], case.params["BT"])
    e2e_candidate(case, tmp_path / "with_g", g)
    ulpgate.score(e2e_fx.directory, tmp_path / "with_g", reports=tmp_path / "r2").assert_passed()
    assert "| g | 1 | 1 | 1 |" in open(tmp_path / "r2" / "report.md").read()

    exclusive = g - case.inputs["g_raw"]  # a stage bug the end-to-end figures cannot see: g is not used here
    e2e_candidate(case, tmp_path / "bad_g", exclusive)
    with pytest.raises(AssertionError, match=r"gdn_e2e/.*: g\[\d+\] exact: y="):
        ulpgate.score(e2e_fx.directory, tmp_path / "bad_g", reports=tmp_path / "r3").assert_passed()
