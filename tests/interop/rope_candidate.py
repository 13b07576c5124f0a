#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""RoPE kernels as their authors write them, scored through safetensors files.

The f32 variant of head_norm_rope (SPEC 1.5: per-head RMS norm, then the NeoX
rotation of the pairs (i, i + head_dim/2) for i < half_rope_dim, angle
pos / theta^(2i/head_dim) / freq_factors[i]) in float32 numpy that mimics
PyTorch's float32 operations one by one:

  pytorch  the Hugging Face / PyTorch recipe: inv_freq = 1 / theta **
           (arange(0, d, 2).float() / d) (f32 division, f32 pow, f32
           reciprocal), divided by the freq_factors, angle = position.float() *
           inv_freq (one f32 product), cos/sin of the f32 angle; the norm as
           LlamaRMSNorm: mean of squares, x * rsqrt(var + eps), then weight *;
           the rotation as x * cos + rotate_half(x) * sin (no FMA).
  f64      the angle in float64 (pos * theta ** (-2i/d) / ff) rounded once to
           f32, more accurate than any f32 formula; the rest as pytorch.
  wrong    pytorch with the angle of the next position (pos + 1): a positions
           tensor that counts from 1. The gate must fail it.

cos and sin: numpy's own float32 cos/sin are SIMD approximations of up to 1.49
ulp (measured), PyTorch's CPU ones SLEEF's 1.0-ulp routines; the candidates take
cos/sin of the f32 angle in float64 and round once to f32, as a correctly
rounded f32 libm does (within the cpu profile's allowance).

Cases are read and outputs written through the ulpgate Python package
(python/).

usage: rope_candidate.py FIXTURES_DIR OUT_DIR {pytorch,f64,wrong}
"""
import argparse
import sys

import numpy as np
import ulpgate

f32 = np.float32


def inv_freq_pytorch(d, h, theta, ff):
    """1 / theta ** (arange(0, 2h, 2).float() / d), then / freq_factors: f32 throughout."""
    exponent = np.arange(0, 2 * h, 2, dtype=np.int64).astype(f32) / f32(d)
    inv_freq = f32(1) / np.power(f32(theta), exponent)
    return inv_freq if ff is None else inv_freq / ff[:h]


def angles(kind, positions, d, h, theta, ff):
    """[seq, h] f32 angles."""
    if kind == "f64":
        i = np.arange(h, dtype=np.float64)
        inv = float(theta) ** (-2.0 * i / d)
        if ff is not None:
            inv = inv / ff[:h].astype(np.float64)
        return (positions.astype(np.float64)[:, None] * inv[None, :]).astype(f32)
    pos = positions.astype(np.int64) + (1 if kind == "wrong" else 0)
    # freqs = inv_freq[:, None].float() @ position_ids[None, :].float(): a K = 1 product, rounded once.
    return pos.astype(f32)[:, None] * inv_freq_pytorch(d, h, theta, ff)[None, :]


def rms_norm(x, w, eps):
    """LlamaRMSNorm in f32: x * rsqrt(mean(x^2) + eps), then weight * (torch.rsqrt on CPU is 1/sqrt)."""
    var = np.mean(x * x, axis=-1, dtype=f32, keepdims=True)
    y = x * (f32(1) / np.sqrt(var + eps))
    return y if w is None else w * y


def head_norm_rope(t, p, kind):
    if int(p["variant"]) != 1:
        sys.exit("rope_candidate.py: head_norm_rope variant %d is not the f32 sequence" % p["variant"])
    d, h = int(p["head_dim"]), int(p["half_rope_dim"])
    x = t["input_f32"]
    w = t["norm_weight_f32"] if int(p["has_weight"]) else None
    ff = t["freq_factors"] if int(p["has_ff"]) else None
    y = rms_norm(x, w, f32(10.0 ** -p["eps_exp10"]))
    a = angles(kind, t["positions"], d, h, p["theta"], ff)
    cos = np.cos(a.astype(np.float64)).astype(f32)[:, None, :]  # [seq, 1 (heads), h]
    sin = np.sin(a.astype(np.float64)).astype(f32)[:, None, :]
    lo, hi = y[..., :h].copy(), y[..., d // 2:d // 2 + h].copy()
    out = y.copy()
    out[..., :h] = lo * cos + (-hi) * sin
    out[..., d // 2:d // 2 + h] = hi * cos + lo * sin
    return {"output_f32": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fixtures")
    ap.add_argument("out")
    ap.add_argument("kind", choices=["pytorch", "f64", "wrong"])
    args = ap.parse_args()
    written = 0
    for case in ulpgate.Fixtures(args.fixtures):
        if case.family != "head_norm_rope":
            sys.exit("rope_candidate.py: no kernel for family %s" % case.family)
        if int(case.params["variant"]) != 1:
            continue
        case.write(args.out, head_norm_rope(case.inputs, case.params, args.kind))
        written += 1
    print("rope_candidate.py: %d f32 cases written to %s (%s)" % (written, args.out, args.kind))


if __name__ == "__main__":
    with np.errstate(over="ignore", under="ignore"):
        main()
