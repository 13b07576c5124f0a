#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Measure the f32 error of CUDA and Triton elementary operations on the GPU.

For every f32 argument of each range (every bit pattern, enumerated in chunks), the
operation's f32 result is compared with a float64 reference of the exact function
computed on the same device; the error is expressed in ulps of the exact result's f32
ulp (2^(max(floor(log2|r|), -126) - 23), 2^-149 at zero) and as an absolute error, and
compared with the bound the profile under fixtures/profiles declares for the op.

CUDA variants are compiled with NVRTC through CuPy, twice: at nvcc's defaults (profile
"cuda") and with --use_fast_math (profile "cuda-fast"); explicit PTX approx instructions
are measured alongside to compare with the PTX ISA's numbers. Triton variants are the
tl.* operations (profile "triton"); the PTX Triton generates for each is saved.

Usage: measure_ops.py PROFILE_DIR OUT_DIR [--quick | --zero-only]
Writes OUT_DIR/results.json, OUT_DIR/triton_ptx.txt, OUT_DIR/cuda_ptx.txt.
"""
import json
import math
import os
import sys
import time
import traceback

import torch

SCALE_DOWN = 1 if "--quick" not in sys.argv else 4096
ZERO_ONLY = "--zero-only" in sys.argv  # only evaluate every unary variant at +0 and -0
UNARY_VARIANTS = {}
CHUNK = 1 << 27
DEV = "cuda"
LOG2E_F32 = 1.4426950408889634
F32_MIN_NORMAL = 2.0 ** -126
F32_MAX = 3.4028234663852886e38


def f32_bits(value):
    return int(torch.tensor([value], dtype=torch.float32).view(torch.int32).item())


def magnitude_chunks(lo, hi, negative):
    """Yield f32 tensors holding every f32 whose magnitude lies in [lo, hi] (bit order)."""
    first, last = f32_bits(lo), f32_bits(hi)
    step = max(1, SCALE_DOWN)
    for start in range(first, last + 1, CHUNK * step):
        stop = min(last + 1, start + CHUNK * step)
        bits = torch.arange(start, stop, step, dtype=torch.int64, device=DEV)
        if negative:
            bits = bits - (1 << 31)  # the int32 whose bit pattern is the magnitude's with the sign bit set
        yield bits.to(torch.int32).view(torch.float32)


def next_f32(value, step=1):
    return float(torch.tensor([f32_bits(value) + step], dtype=torch.int32).view(torch.float32).item())


def previous_f32(value):
    return next_f32(value, -1)


def ulp_f32_of(abs_ref):
    """f32 ulp of each exact value (float64 tensor of magnitudes)."""
    exponent = (abs_ref.view(torch.int64) >> 52) - 1023
    exponent = torch.clamp(exponent, min=-126) - 23
    return ((exponent + 1023) << 52).view(torch.float64)


class Stats:
    """Running maxima and counts of one (variant, range) pair."""

    def __init__(self, bound):
        self.bound = bound or {}
        self.n = 0
        self.n_correctly_rounded = 0
        self.n_over_bound = 0
        self.max_ulp_normal = (0.0, None)
        self.max_ulp_all = (0.0, None)
        self.max_abs = (0.0, None)
        self.max_rel = (0.0, None)
        self.max_ratio = (0.0, None)
        self.max_ratio_normal = (0.0, None)
        self.n_over_bound_normal = 0
        self.max_slope = (None, None)
        self.top = []

    @staticmethod
    def _witness(x, y, r, index):
        return {"x": float(x[index]), "y": float(y[index]), "ref": float(r[index]),
                "x_bits": "0x%08x" % (int(x[index:index + 1].view(torch.int32).item()) & 0xffffffff)}

    def _update(self, attr, values, x, y, r):
        value, index = values.max(0)
        value = float(value)
        if value > getattr(self, attr)[0] or getattr(self, attr)[1] is None and value >= 0:
            setattr(self, attr, (value, self._witness(x, y, r, int(index))))

    def add(self, x, y, r, mask=None, top_k=0):
        if mask is not None:
            x, y, r = x[mask], y[mask], r[mask]
        if x.numel() == 0:
            return
        abs_ref = r.abs()
        ulp = ulp_f32_of(abs_ref)
        err = (y.double() - r).abs()
        err = torch.where(torch.isfinite(y), err, torch.full_like(err, math.inf))
        err_ulp = err / ulp
        normal = abs_ref >= F32_MIN_NORMAL
        self.n += x.numel()
        self.n_correctly_rounded += int((y == r.float()).sum())
        self._update("max_ulp_all", err_ulp, x, y, r)
        self._update("max_ulp_normal", torch.where(normal, err_ulp, torch.zeros_like(err_ulp)), x, y, r)
        self._update("max_abs", err, x, y, r)
        self._update("max_rel", torch.where(normal, err / abs_ref, torch.zeros_like(err)), x, y, r)
        ulps = self.bound.get("ulps", 0.0)
        per_x = self.bound.get("ulps_per_abs_x", 0.0)
        abs_x = x.double().abs()
        allowed = (ulps + per_x * abs_x) * ulp + self.bound.get("rel", 0.0) * abs_ref + self.bound.get("abs", 0.0)
        in_range = torch.ones_like(normal)
        if "range" in self.bound:
            lo, hi = self.bound["range"]
            in_range = (x >= lo) & (x <= hi)
        if self.bound:
            ratio = torch.where(in_range, err / allowed, torch.zeros_like(err))
            self.n_over_bound += int((ratio > 1).sum())
            self._update("max_ratio", ratio, x, y, r)
            ratio_normal = torch.where(normal, ratio, torch.zeros_like(ratio))
            self.n_over_bound_normal += int((ratio_normal > 1).sum())
            self._update("max_ratio_normal", ratio_normal, x, y, r)
        big = abs_x >= 1
        if bool(big.any()):
            slope = torch.where(big & normal, (err_ulp - ulps) / abs_x, torch.full_like(err_ulp, -math.inf))
            value, index = slope.max(0)
            if self.max_slope[0] is None or float(value) > self.max_slope[0]:
                self.max_slope = (float(value), self._witness(x, y, r, int(index)))
        if top_k:
            values, indices = torch.where(normal, err_ulp, torch.zeros_like(err_ulp)).topk(top_k)
            for value, index in zip(values.tolist(), indices.tolist()):
                self.top.append(dict(self._witness(x, y, r, index), ulp=value))
            self.top = sorted(self.top, key=lambda w: -w["ulp"])[:top_k]

    def as_dict(self):
        def pair(p):
            return {"value": p[0], "at": p[1]}
        out = {"n": self.n, "n_correctly_rounded": self.n_correctly_rounded,
               "max_ulp_normal_output": pair(self.max_ulp_normal), "max_ulp_all": pair(self.max_ulp_all),
               "max_abs": pair(self.max_abs), "max_rel_normal_output": pair(self.max_rel)}
        if self.bound:
            out.update(declared=self.bound, max_ratio_to_declared=pair(self.max_ratio), n_over_declared=self.n_over_bound,
                       max_ratio_to_declared_normal_output=pair(self.max_ratio_normal),
                       n_over_declared_normal_output=self.n_over_bound_normal)
        if self.max_slope[0] is not None:
            out["max_ulp_minus_ulps_per_abs_x"] = pair(self.max_slope)
        if self.top:
            out["worst_arguments"] = self.top
        return out


CUDA_SOURCE = r"""
__device__ __forceinline__ float ptx_unary(int op, float v) {
    float r = 0.0f;
    switch (op) {
    case 100: asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 101: asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 102: asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 103: asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 104: asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 105: asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 106: asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 107: asm("sin.approx.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 108: asm("cos.approx.f32 %0, %1;" : "=f"(r) : "f"(v)); break;
    case 109: { float t = __fmul_rn(v, 1.4426950408889634f);
                asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(t)); } break;
    }
    return r;
}
extern "C" __global__ void k_unary(const float* x, float* y, long long n, int op) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], r;
    switch (op) {
    case 0: r = expf(v); break;
    case 1: r = exp2f(v); break;
    case 2: r = log2f(v); break;
    case 3: r = rsqrtf(v); break;
    case 4: r = sqrtf(v); break;
    case 5: r = sinf(v); break;
    case 6: r = cosf(v); break;
    case 7: r = __expf(v); break;
    case 8: r = __log2f(v); break;
    case 9: r = __sinf(v); break;
    case 10: r = __cosf(v); break;
    default: r = ptx_unary(op, v);
    }
    y[i] = r;
}
extern "C" __global__ void k_binary(const float* a, const float* b, float* y, long long n, int op) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float u = a[i], v = b[i], r = 0.0f;
    switch (op) {
    case 0: r = u / v; break;
    case 1: r = __fdividef(u, v); break;
    case 2: asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(u), "f"(v)); break;
    case 3: r = powf(u, v); break;
    case 4: r = __powf(u, v); break;
    case 5: r = exp2f(v * log2f(u)); break;
    }
    y[i] = r;
}
"""


NVCC_FLAGS = {"cuda": [], "cuda-fast": ["--use_fast_math"]}


def cuda_modules(work_dir, ptx_path):
    """Build the CUDA variants with nvcc (its defaults: -ftz=false -prec-div=true -prec-sqrt=true)."""
    import subprocess
    import cupy
    source = os.path.join(work_dir, "ops.cu")
    with open(source, "w") as handle:
        handle.write(CUDA_SOURCE)
    modules = {}
    with open(ptx_path, "w") as ptx_log:
        for profile, flags in NVCC_FLAGS.items():
            cubin = os.path.join(work_dir, profile + ".cubin")
            subprocess.run(["nvcc", "-cubin", "-arch=sm_90", *flags, "-o", cubin, source], check=True)
            ptx_file = os.path.join(work_dir, profile + ".ptx")
            subprocess.run(["nvcc", "-ptx", "-arch=sm_90", *flags, "-o", ptx_file, source], check=True)
            with open(ptx_file) as handle:
                ptx = handle.read()
            ptx_log.write("// ===== nvcc -arch=sm_90 %s\n%s\n" % (" ".join(flags), ptx))
            modules[profile] = cupy.RawModule(path=cubin)
    return modules


def cupy_launch(function, tensors, scalars):
    import cupy
    import numpy
    n = tensors[-1].numel()
    args = [cupy.from_dlpack(t) for t in tensors] + [numpy.int64(n)] + [numpy.int32(s) for s in scalars]
    function(((n + 255) // 256,), (256,), tuple(args))
    torch.cuda.synchronize()


def triton_kernels():
    import triton
    import triton.language as tl
    try:
        from triton.language.extra import libdevice
    except ImportError:
        from triton.language.extra.cuda import libdevice

    @triton.jit
    def tri_unary(X, Y, N, OP: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < N
        x = tl.load(X + offs, mask=mask, other=1.0)
        if OP == 0:
            y = tl.exp(x)
        elif OP == 1:
            y = tl.exp2(x)
        elif OP == 2:
            y = tl.log2(x)
        elif OP == 3:
            y = tl.sqrt(x)
        elif OP == 4:
            y = tl.sqrt_rn(x)
        elif OP == 5:
            y = tl.rsqrt(x)
        elif OP == 6:
            y = tl.sin(x)
        else:
            y = tl.cos(x)
        tl.store(Y + offs, y, mask=mask)

    @triton.jit
    def tri_binary(A, B, Y, N, OP: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < N
        a = tl.load(A + offs, mask=mask, other=1.0)
        b = tl.load(B + offs, mask=mask, other=1.0)
        if OP == 0:
            y = a / b
        elif OP == 1:
            y = tl.div_rn(a, b)
        elif OP == 2:
            y = libdevice.pow(a, b)
        else:
            y = tl.exp2(b * tl.log2(a))
        tl.store(Y + offs, y, mask=mask)

    return tri_unary, tri_binary


PTX_LOG = {}


def triton_launch(kernel, tensors, op, name):
    n = tensors[-1].numel()
    block = 1024
    compiled = kernel[((n + block - 1) // block,)](*tensors, n, OP=op, BLOCK=block)
    if name not in PTX_LOG:
        try:
            PTX_LOG[name] = compiled.asm["ptx"]
        except Exception as error:  # noqa: BLE001 - the PTX is a record, not a result
            PTX_LOG[name] = "unavailable: %r" % error
    torch.cuda.synchronize()


def load_profiles(directory):
    profiles = {}
    for name in ("cuda", "cuda-fast", "triton"):
        with open(os.path.join(directory, name + ".json")) as handle:
            profiles[name] = json.load(handle)
    return profiles


def run_family(results, family, ranges, reference, variants, profiles, bands=None, top_k=0, unary=True):
    """variants: list of (variant name, profile name or None, op name, producer(x[, b]) -> y)."""
    if unary:
        UNARY_VARIANTS[family] = variants
    if ZERO_ONLY:
        return
    print("== %s" % family, flush=True)
    started = time.time()
    for range_name, chunks in ranges:
        stats = {}
        for variant, profile, op_name, _ in variants:
            bound = profiles[profile]["ops"][op_name] if profile else None
            for band_name, _ in (bands or [("", None)]):
                stats[(variant, band_name)] = Stats(bound)
        for chunk in chunks():
            args = chunk if isinstance(chunk, tuple) else (chunk,)
            x = args[0]
            r = reference(*args)
            for variant, _, _, produce in variants:
                try:
                    y = produce(*args)
                except Exception:  # noqa: BLE001 - one broken variant must not lose the others
                    results.setdefault("errors", []).append("%s %s: %s" % (family, variant, traceback.format_exc()))
                    continue
                for band_name, limit in (bands or [("", None)]):
                    mask = None if limit is None else x.abs() <= limit
                    stats[(variant, band_name)].add(x, y, r, mask=mask, top_k=top_k)
            del r
        for (variant, band_name), s in stats.items():
            key = "%s|%s|%s" % (family, variant, range_name + ("" if not band_name else "|abs(x)<=" + band_name))
            results["measurements"][key] = s.as_dict()
            summary = s.as_dict()
            print("%-70s n=%d maxulp=%.4g all=%.4g abs=%.3g ratio=%s normal=%s" % (
                key, summary["n"], summary["max_ulp_normal_output"]["value"], summary["max_ulp_all"]["value"],
                summary["max_abs"]["value"], summary.get("max_ratio_to_declared", {}).get("value"),
                summary.get("max_ratio_to_declared_normal_output", {}).get("value")), flush=True)
    results["seconds"][family] = time.time() - started


def main():
    profile_dir, out_dir = sys.argv[1], sys.argv[2]
    profiles = load_profiles(profile_dir)
    results = {"measurements": {}, "seconds": {}, "exact_at_zero": {}, "environment": {},
               "quick": SCALE_DOWN != 1}
    env = results["environment"]
    env["torch"] = torch.__version__
    env["device"] = torch.cuda.get_device_name(0)
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception as error:  # noqa: BLE001
        env["triton"] = repr(error)

    unary_cuda = {}
    binary_cuda = {}
    try:
        import cupy
        env["cupy"] = cupy.__version__
        env["nvrtc"] = str(cupy.cuda.nvrtc.getVersion())
        import subprocess
        env["nvcc"] = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
        modules = cuda_modules("/tmp", os.path.join(out_dir, "cuda_ptx.txt"))
        for profile, module in modules.items():
            unary_cuda[profile] = module.get_function("k_unary")
            binary_cuda[profile] = module.get_function("k_binary")
    except Exception:  # noqa: BLE001
        results.setdefault("errors", []).append("cupy: " + traceback.format_exc())

    tri_unary, tri_binary = triton_kernels()

    def produce(backend, op, label):
        """The f32 result of one variant: an nvcc build's k_unary/k_binary op, or a Triton kernel's OP."""
        def unary(x):
            y = torch.empty_like(x)
            if backend == "triton":
                triton_launch(tri_unary, [x, y], op, label)
            else:
                cupy_launch(unary_cuda[backend], [x, y], [op])
            return y

        def binary(a, b):
            y = torch.empty_like(a)
            if backend == "triton":
                triton_launch(tri_binary, [a, b, y], op, label)
            else:
                cupy_launch(binary_cuda[backend], [a, b, y], [op])
            return y
        return unary, binary

    def chunks(lo, hi, negative=False):
        return lambda: magnitude_chunks(lo, hi, negative)

    def both_signs(lo, hi):
        return lambda: (c for negative in (False, True) for c in magnitude_chunks(lo, hi, negative))

    # div: every f32 numerator in [1,2) against 512 divisors m*2^k, m in [1,2), k in [-120,120],
    # and 16 divisors in (2^126, 2^127] where __fdividef is documented to return zero.
    generator = torch.Generator(device="cpu").manual_seed(15)
    mantissas = 1.0 + torch.rand(512, generator=generator, dtype=torch.float64)
    exponents = torch.randint(-120, 121, (512,), generator=generator).double()
    divisors = (mantissas * torch.exp2(exponents)).float()
    big_divisors = (2.0 ** 126 * (1.0 + torch.rand(16, generator=generator, dtype=torch.float64))).float()
    numerators = list(magnitude_chunks(1.0, previous_f32(2.0), False))[0]

    def division_chunks(divisor_set):
        def make():
            per_chunk = max(1, CHUNK // numerators.numel())
            for start in range(0, divisor_set.numel(), per_chunk):
                ys = divisor_set[start:start + per_chunk].to(DEV)
                yield (numerators.repeat(ys.numel()), ys.repeat_interleave(numerators.numel()))
        return make

    # pow for the RoPE inverse frequency: theta^(-k/128) for every f32 theta in [1e4, 1e6], k = 0..127
    # (the exponents -2i/d of every head dimension d dividing 256).
    powers = -torch.arange(128, dtype=torch.float32, device=DEV) / 128.0

    def pow_chunks():
        for thetas in magnitude_chunks(1e4, 1e6, False):
            for start in range(0, thetas.numel(), CHUNK // 128):
                t = thetas[start:start + CHUNK // 128]
                yield (t.repeat_interleave(128), powers.repeat(t.numel()))

    positive = [("x in [1e-30,1e30]", chunks(1e-30, 1e30)),
                ("x subnormal", chunks(2.0 ** -149, previous_f32(F32_MIN_NORMAL))),
                ("x normal outside [1e-30,1e30]", lambda: (c for lo, hi in ((F32_MIN_NORMAL, 1e-30), (1e30, F32_MAX))
                                                          for c in magnitude_chunks(lo, hi, False)))]
    bands = [("pi", math.pi), ("2pi", 2 * math.pi), ("100pi", 100 * math.pi), ("5e5", 5e5)]
    # family: (float64 reference, argument ranges, worst arguments kept, |x| bands,
    #          variants as (label, profile whose entry bounds it, backend, op code of k_* or tri_*)).
    families = {
        "exp": (lambda x: torch.exp(x.double()),
                [("x in [-88,0]", chunks(0.0, 88.0, True)), ("x in [-104,-88)", chunks(next_f32(88.0), 104.0, True)),
                 ("x in (0,88.72]", chunks(2.0 ** -149, 88.72283))], 5, None,
                [("cuda:expf", "cuda", "cuda", 0), ("cuda-fast:expf(=__expf)", "cuda-fast", "cuda-fast", 0),
                 ("cuda:__expf", "cuda-fast", "cuda", 7), ("ptx:ex2.approx(fl(x*fl(log2e)))", "triton", "cuda", 109),
                 ("triton:tl.exp", "triton", "triton", 0)]),
        "exp2": (lambda x: torch.exp2(x.double()),
                 [("x in [-126,0]", chunks(0.0, 126.0, True)), ("x in [-150,-126)", chunks(next_f32(126.0), 150.0, True)),
                  ("x in (0,128)", chunks(2.0 ** -149, previous_f32(128.0)))], 3, None,
                 [("cuda:exp2f", "cuda", "cuda", 1), ("cuda-fast:exp2f", "cuda-fast", "cuda-fast", 1),
                  ("ptx:ex2.approx.f32", "triton", "cuda", 100), ("ptx:ex2.approx.ftz.f32", "cuda-fast", "cuda", 101),
                  ("triton:tl.exp2", "triton", "triton", 1)]),
        "log2": (lambda x: torch.log2(x.double()),
                 [("x subnormal", chunks(2.0 ** -149, previous_f32(F32_MIN_NORMAL))),
                  ("x in [2^-126,0.5)", chunks(F32_MIN_NORMAL, previous_f32(0.5))), ("x in [0.5,2]", chunks(0.5, 2.0)),
                  ("x in (2,max]", chunks(next_f32(2.0), F32_MAX))], 0, None,
                 [("cuda:log2f", "cuda", "cuda", 2), ("cuda-fast:log2f", "cuda-fast", "cuda-fast", 2),
                  ("cuda:__log2f", "cuda-fast", "cuda", 8), ("ptx:lg2.approx.f32", "triton", "cuda", 102),
                  ("ptx:lg2.approx.ftz.f32", "cuda-fast", "cuda", 103), ("triton:tl.log2", "triton", "triton", 2)]),
        "rsqrt": (lambda x: 1.0 / torch.sqrt(x.double()), positive, 0, None,
                  [("cuda:rsqrtf", "cuda", "cuda", 3), ("cuda-fast:rsqrtf", "cuda-fast", "cuda-fast", 3),
                   ("ptx:rsqrt.approx.f32", "triton", "cuda", 104), ("ptx:rsqrt.approx.ftz.f32", "cuda-fast", "cuda", 105),
                   ("triton:tl.rsqrt", "triton", "triton", 5)]),
        "sqrt": (lambda x: torch.sqrt(x.double()), positive, 0, None,
                 [("cuda:sqrtf", "cuda", "cuda", 4), ("cuda-fast:sqrtf", "cuda-fast", "cuda-fast", 4),
                  ("ptx:sqrt.approx.f32", "triton", "cuda", 106), ("triton:tl.sqrt", "triton", "triton", 3),
                  ("triton:tl.sqrt_rn", None, "triton", 4)]),
        "sin": (lambda x: torch.sin(x.double()), [("x in [-5e5,5e5]", both_signs(0.0, 5e5))], 0, bands,
                [("cuda:sinf", "cuda", "cuda", 5), ("cuda-fast:sinf", "cuda-fast", "cuda-fast", 5),
                 ("cuda:__sinf", "cuda-fast", "cuda", 9), ("ptx:sin.approx.f32", "cuda-fast", "cuda", 107),
                 ("triton:tl.sin", "triton", "triton", 6)]),
        "cos": (lambda x: torch.cos(x.double()), [("x in [-5e5,5e5]", both_signs(0.0, 5e5))], 0, bands,
                [("cuda:cosf", "cuda", "cuda", 6), ("cuda-fast:cosf", "cuda-fast", "cuda-fast", 6),
                 ("cuda:__cosf", "cuda-fast", "cuda", 10), ("ptx:cos.approx.f32", "cuda-fast", "cuda", 108),
                 ("triton:tl.cos", "triton", "triton", 7)]),
        "div": (lambda a, b: a.double() / b.double(),
                [("x in [1,2), |y| in [2^-120,2^121)", division_chunks(divisors)),
                 ("x in [1,2), |y| in (2^126,2^127]", division_chunks(big_divisors))], 0, None,
                [("cuda:x/y", "cuda", "cuda", 0), ("cuda-fast:x/y", "cuda-fast", "cuda-fast", 0),
                 ("cuda:__fdividef", "cuda-fast", "cuda", 1), ("ptx:div.full.f32", "triton", "cuda", 2),
                 ("triton:a/b", "triton", "triton", 0), ("triton:tl.div_rn", None, "triton", 1)]),
        "pow": (lambda a, b: torch.exp2(b.double() * torch.log2(a.double())),
                [("theta in [1e4,1e6], e = -k/128", pow_chunks)], 0, None,
                [("cuda:powf", "cuda", "cuda", 3), ("cuda-fast:powf(=__powf)", "cuda-fast", "cuda-fast", 3),
                 ("cuda:exp2f(e*log2f(theta))", None, "cuda", 5), ("cuda-fast:exp2f(e*log2f(theta))", None, "cuda-fast", 5),
                 ("triton:libdevice.pow", "triton", "triton", 2), ("triton:tl.exp2(e*tl.log2(theta))", None, "triton", 3)]),
    }
    binary_families = ("div", "pow")
    for family, (reference, ranges, top_k, family_bands, table) in families.items():
        arity = 1 if family in binary_families else 0
        variants = [(label, profile, family, produce(backend, op, label)[arity]) for label, profile, backend, op in table
                    if backend == "triton" or backend in unary_cuda]
        run_family(results, family, ranges, reference, variants, profiles, bands=family_bands, top_k=top_k,
                   unary=not arity)

    # exact at zero
    zeros = torch.tensor([0.0, -0.0], dtype=torch.float32, device=DEV)
    exact = {"exp": (1.0, 1.0), "exp2": (1.0, 1.0), "log2": (-math.inf, -math.inf), "rsqrt": (math.inf, -math.inf),
             "sqrt": (0.0, -0.0), "sin": (0.0, -0.0), "cos": (1.0, 1.0)}
    for family, variants in UNARY_VARIANTS.items():
        for variant, _, _, produce in variants:
            y = produce(zeros)
            bits = ["0x%08x" % (b & 0xffffffff) for b in y.view(torch.int32).tolist()]
            wanted = ["0x%08x" % (b & 0xffffffff) for b in
                      torch.tensor(exact[family], dtype=torch.float32).view(torch.int32).tolist()]
            results["exact_at_zero"]["%s|%s" % (family, variant)] = {
                "f(+0), f(-0)": [float(v) for v in y.tolist()], "bits": bits, "exact_bits": wanted,
                "exact": bits == wanted}
            print("f(+-0) %-40s %s %s" % (family + "|" + variant, bits, "exact" if bits == wanted else "NOT exact"))

    with open(os.path.join(out_dir, "triton_ptx.txt"), "w") as handle:
        for name, ptx in PTX_LOG.items():
            handle.write("// ===== %s\n%s\n" % (name, ptx))
    with open(os.path.join(out_dir, "results.json"), "w") as handle:
        json.dump(results, handle, indent=1, sort_keys=True)
    print("errors:", len(results.get("errors", [])))
    for error in results.get("errors", [])[:5]:
        print(error)


if __name__ == "__main__":
    main()
