#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A kernel that ulpgate cannot link, scored through safetensors files.

This is what a kernel author's script looks like: read each case that
`ulpgate export` wrote, run the kernel on its inputs, save the outputs under
their buffer names with the real safetensors library, and let `ulpgate score`
gate them. The "kernel" here is a float32 numpy implementation of
gdn_chunk_cumsum (SPEC 1.3) and of the bf16 variant of head_norm_rope
(SPEC 1.5); --wrong plants a bug (the cumulative sum is not restarted at chunk
boundaries) that the gate must catch. Cases are read and outputs written
through the ulpgate Python package (python/), which checks every output's
name, dtype and shape before writing.

usage: candidate.py FIXTURES_DIR OUT_DIR [--wrong]
"""
import argparse
import sys

import ml_dtypes  # numpy's bfloat16: safetensors reads and writes BF16 through it
import numpy as np
import ulpgate


def gdn_chunk_cumsum(t, p, wrong):
    """g[t] = sum of g_raw over the rows of t's chunk up to t, in f32, in row order."""
    g_raw = t["g_raw"]
    b, n, h = g_raw.shape
    bt = n if wrong else int(p["BT"])
    chunks = g_raw.reshape(b, n // bt, bt, h)
    return {"g": np.cumsum(chunks, axis=2, dtype=np.float32).reshape(b, n, h)}


def head_norm_rope(t, p, wrong):
    """One bf16 token: per-head RMS norm with weight, then the NeoX rotation
    of the pairs (i, i + half_rope_dim) with the cached cos/sin, in f32."""
    if int(p["variant"]) != 0:
        raise SystemExit("candidate.py: head_norm_rope variant %d (f32 sequence) is not implemented" % p["variant"])
    x = t["input_bf16"].astype(np.float32)
    eps = np.float32(10.0 ** -p["eps_exp10"])
    ss = np.sum(x * x, axis=-1, dtype=np.float32, keepdims=True)
    y = x * (np.float32(1) / np.sqrt(ss / np.float32(x.shape[-1]) + eps))
    if int(p["has_weight"]):
        y = y * t["norm_weight_bf16"].astype(np.float32)
    half = int(p["half_rope_dim"])
    c, s = t["cos_cache"][:half], t["sin_cache"][:half]
    lo, hi = y[:, :half].copy(), y[:, half:2 * half].copy()
    y[:, :half] = lo * c - hi * s
    y[:, half:2 * half] = hi * c + lo * s
    return {"output_bf16": y.astype(ml_dtypes.bfloat16)}


KERNELS = {"gdn_chunk_cumsum": gdn_chunk_cumsum, "head_norm_rope": head_norm_rope}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fixtures")
    ap.add_argument("out")
    ap.add_argument("--wrong", action="store_true", help="plant a bug the gate must catch")
    args = ap.parse_args()
    fixtures = ulpgate.Fixtures(args.fixtures)
    for case in fixtures:
        kernel = KERNELS.get(case.family)
        if kernel is None:
            sys.exit("candidate.py: no kernel for family %s" % case.family)
        case.write(args.out, kernel(case.inputs, case.params, args.wrong))
    print("candidate.py: %d cases written to %s%s" % (len(fixtures), args.out,
                                                       " (wrong on purpose)" if args.wrong else ""))


if __name__ == "__main__":
    main()
