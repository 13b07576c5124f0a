# SPDX-License-Identifier: MIT
"""The README's pytest test with a real PyTorch kernel (on the CPU), and torch
tensors through Case.write. Skipped where torch is not installed (the CI venv
has no torch: it is gigabytes)."""
import numpy as np
import pytest
import ulpgate

torch = pytest.importorskip("torch")


def chunk_cumsum(g_raw, chunk_size):
    b, t, h = g_raw.shape
    return g_raw.reshape(b, t // chunk_size, chunk_size, h).cumsum(dim=2).reshape(b, t, h)


def write_candidate(fx, directory, chunk_size=None):
    for case in fx:
        t = case.torch_inputs("cpu")
        g = chunk_cumsum(t["g_raw"], chunk_size or case.params["BT"])
        case.write(directory, {"g": g.cpu()})


def test_readme_example_passes(cumsum_fx, tmp_path):
    write_candidate(cumsum_fx, tmp_path)
    ulpgate.score(cumsum_fx.directory, tmp_path).assert_passed()


def test_a_cumsum_across_chunks_fails(cumsum_fx, tmp_path):
    write_candidate(cumsum_fx, tmp_path, chunk_size=128)
    with pytest.raises(AssertionError, match=r"g\[192\] exact: y="):
        ulpgate.score(cumsum_fx.directory, tmp_path).assert_passed()


def test_torch_bf16_tensors(fx, tmp_path):
    case = fx.select("head_norm_rope")[0]
    t = case.torch_inputs()
    assert t["input_bf16"].dtype == torch.bfloat16
    assert torch.equal(t["input_bf16"].view(torch.int16), torch.from_numpy(case.inputs["input_bf16"].view(np.int16)))
    ref = case.reference("output_bf16")
    y = torch.from_numpy(ref.view(np.int16).copy()).view(torch.bfloat16)
    with ulpgate.fixtures.safe_open(case.write(tmp_path, {"output_bf16": y}), framework="numpy") as f:
        np.testing.assert_array_equal(f.get_tensor("output_bf16").view(np.uint16), ref.view(np.uint16))
    y32 = y.float().requires_grad_(True)
    with pytest.raises(ulpgate.CandidateError, match="expected dtype bfloat16, got float32"):
        case.write(tmp_path, {"output_bf16": y32})
    case.write(tmp_path, {"output_bf16": y32}, cast=True)
    with pytest.raises(ulpgate.CandidateError, match=r"on device meta: move it with \.cpu\(\) first"):
        case.write(tmp_path, {"output_bf16": torch.empty(y.shape, dtype=torch.bfloat16, device="meta")})
