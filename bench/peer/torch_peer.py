#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch CPU peer of the kernel bench: the same computations at the bench's
shapes, timed beside ulpgate's kernels, printed as a ratio (torch time /
ulpgate time: above 1, ulpgate is faster). Not part of CI.

Each family is written the way a PyTorch user would write it from the same
buffers (token-major [B, T, H, D] tensors, bf16 where the kernel's operands
are bf16): the layout changes into chunks, the casts of the staged operands,
batched matmuls (MKL) and elementwise ops, the outputs cast and laid out as
the kernel writes them. Layout changes are part of the timed work, since the
kernels read and write that layout too. Timing: median of samples after a
warm-up call, like the bench (a sample is enough calls to last >= 2 ms).

ulpgate's times come from one run of build/bench/bench (--bench, run now:
its 1-thread rows on a pinned CPU and its 2-thread column) or from a saved
bench output (--bench-output FILE); the torch side is timed with 1 and 2
intra-op threads, so the ratios pair 1-thread with 1-thread and 2-thread
with 2-thread figures. A bench run with --cpu-time has its 1-thread rows in
thread CPU time; torch's 1-thread calls are then timed the same way (on a
shared machine the wall-clock of either side includes other processes).
Usage (docs/performance.md):

    build/torchvenv/bin/python bench/peer/torch_peer.py [--bench build/bench/bench | --bench-output FILE]
"""
import argparse
import math
import re
import statistics
import subprocess
import sys
import time

import torch

BT = 64


def timed(fn, clock=time.perf_counter, budget_s=1.0, max_samples=7):
    """Median seconds per call of fn() on `clock`: warm-up, then samples of >= 2 ms."""
    fn()
    t0 = clock()
    fn()
    one = max(clock() - t0, 1e-7)
    calls = max(1, math.ceil(2e-3 / one))
    samples = []
    start = time.perf_counter()
    while len(samples) < max_samples and (len(samples) < 3 or time.perf_counter() - start < budget_s):
        t0 = clock()
        for _ in range(calls):
            fn()
        samples.append((clock() - t0) / calls)
    return statistics.median(samples)


def gen(seed=0):
    g = torch.Generator().manual_seed(seed)
    return g


def chunks(x, B, T, H):
    """[B, T, H, D] -> [B, H, NT, BT, D] (a copy, as any batched matmul over chunks needs)."""
    D = x.shape[-1]
    return x.view(B, T // BT, BT, H, D).permute(0, 3, 1, 2, 4)


def unchunk(x):
    """[B, H, NT, BT, D] -> [B, T, H, D]."""
    B, H, NT, bt, D = x.shape
    return x.permute(0, 2, 3, 1, 4).reshape(B, NT * bt, H, D)


def gdn_inputs(B, T, H, Hg, K, V, rng):
    k = torch.nn.functional.normalize(torch.randn(B, T, Hg, K, generator=rng), dim=-1).bfloat16()
    q = torch.randn(B, T, Hg, K, generator=rng).bfloat16()
    v = torch.randn(B, T, H, V, generator=rng).bfloat16()
    beta = torch.rand(B, T, H, generator=rng)
    g_raw = -torch.rand(B, T, H, generator=rng) * 0.1
    g = g_raw.view(B, T // BT, BT, H).cumsum(2).view(B, T, H)
    return dict(k=k, q=q, v=v, beta=beta, g_raw=g_raw, g=g)


def expand_heads(x, group):
    """Key heads shared by `group` value heads: [B, T, Hg, D] -> [B, T, Hg*group, D]."""
    return x if group == 1 else x.repeat_interleave(group, dim=2)


def scaled_kkt(k, beta, g, H):
    B, T, Hg, K = k.shape
    kc = chunks(k.float(), B, T, Hg)
    gram = kc @ kc.transpose(-1, -2)                                    # [B, Hg, NT, BT, BT]
    gram = gram.repeat_interleave(H // Hg, dim=1) if H != Hg else gram
    gc = g.view(B, T // BT, BT, H).permute(0, 3, 1, 2)                  # [B, H, NT, BT]
    bc = beta.view(B, T // BT, BT, H).permute(0, 3, 1, 2)
    L = (bc[..., :, None] * torch.exp(gc[..., :, None] - gc[..., None, :]) * gram).tril(-1)
    return unchunk(L).contiguous()                                      # [B, T, H, BT]


def solve_tril(L):
    B, T, H, _ = L.shape
    Lc = chunks(L, B, T, H)
    eye = torch.eye(BT).expand_as(Lc)
    A = torch.linalg.solve_triangular(eye + Lc, eye, upper=False, unitriangular=True)
    return unchunk(A).contiguous()


def recompute_wu(A, k, v, beta, g):
    B, T, H, V = v.shape
    kk = expand_heads(k, H // k.shape[2])
    vb = (v.float() * beta[..., None]).bfloat16().float()
    kb = (kk.float() * beta[..., None] * torch.exp(g)[..., None]).bfloat16().float()
    Ac = chunks(A, B, T, H)
    u = unchunk(Ac @ chunks(vb, B, T, H)).bfloat16()
    w = unchunk(Ac @ chunks(kb, B, T, H)).bfloat16()
    return w, u


def chunk_state(k, w, u, g, h0):
    B, T, H, V = u.shape
    K = w.shape[-1]
    kc = chunks(expand_heads(k, H // k.shape[2]).float(), B, T, H)
    wc, uc = chunks(w.float(), B, T, H), chunks(u.float(), B, T, H)
    gc = g.view(B, T // BT, BT, H).permute(0, 3, 1, 2)
    NT = T // BT
    S = h0.clone()                                                       # [B, H, K, V] f32
    hs = torch.empty(B, NT, H, V, K, dtype=torch.bfloat16)
    v_new = torch.empty(B, H, NT, BT, V)
    for c in range(NT):
        Sb = S.bfloat16()
        hs[:, c] = Sb.transpose(-1, -2)
        vn = uc[:, :, c] - wc[:, :, c] @ Sb.float()
        v_new[:, :, c] = vn
        g_last = gc[:, :, c, -1]
        staged = (torch.exp(g_last[..., None] - gc[:, :, c])[..., None] * vn).bfloat16().float()
        S = torch.exp(g_last)[..., None, None] * S + kc[:, :, c].transpose(-1, -2) @ staged
    return hs, unchunk(v_new).bfloat16(), S


def chunk_o(q, k, v, h, g, scale):
    B, T, H, V = v.shape
    group = H // q.shape[2]
    qc = chunks(expand_heads(q, group).float(), B, T, H)
    kc = chunks(expand_heads(k, group).float(), B, T, H)
    vc = chunks(v.float(), B, T, H)
    gc = g.view(B, T // BT, BT, H).permute(0, 3, 1, 2)
    att = (qc @ kc.transpose(-1, -2)) * torch.exp(gc[..., :, None] - gc[..., None, :])
    att = att.tril().bfloat16().float()
    hk = h.permute(0, 2, 1, 3, 4).float()                                # [B, H, NT, V, K]
    p = (qc @ hk.transpose(-1, -2)) * torch.exp(gc)[..., None]
    return unchunk(p * scale + (att @ vc) * scale).bfloat16()


def gdn_case(kind, B, T, H, Hg, K, V):
    rng = gen()
    x = gdn_inputs(B, T, H, Hg, K, V, rng)
    NT = T // BT
    A = solve_tril(scaled_kkt(x["k"], x["beta"], x["g"], H))
    w, u = recompute_wu(A, x["k"], x["v"], x["beta"], x["g"])
    h0 = torch.randn(B, H, K, V, generator=rng) * 0.1
    hs = torch.randn(B, NT, H, V, K, generator=rng).bfloat16()
    scale = 1 / math.sqrt(K)
    if kind == "gdn_recompute_wu":
        return lambda: recompute_wu(A, x["k"], x["v"], x["beta"], x["g"])
    if kind == "gdn_chunk_o":
        return lambda: chunk_o(x["q"], x["k"], x["v"], hs, x["g"], scale)
    if kind == "gdn_chunk_scaled_kkt":
        return lambda: scaled_kkt(x["k"], x["beta"], x["g"], H)
    if kind == "gdn_chunk_state":
        return lambda: chunk_state(x["k"], w, u, x["g"], h0)
    if kind == "gdn_solve_tril":
        L = scaled_kkt(x["k"], x["beta"], x["g"], H)
        return lambda: solve_tril(L)
    if kind == "gdn_chunk_cumsum":
        return lambda: x["g_raw"].view(B, NT, BT, H).cumsum(2)

    def e2e():
        g = x["g_raw"].view(B, NT, BT, H).cumsum(2).view(B, T, H)
        A_ = solve_tril(scaled_kkt(x["k"], x["beta"], g, H))
        w_, u_ = recompute_wu(A_, x["k"], x["v"], x["beta"], g)
        h_, v_new, final = chunk_state(x["k"], w_, u_, g, h0)
        return chunk_o(x["q"], x["k"], v_new, h_, g, scale), final
    return e2e


def hadamard(n):
    Hm = torch.ones(1, 1)
    while Hm.shape[0] < n:
        Hm = torch.cat([torch.cat([Hm, Hm], 1), torch.cat([Hm, -Hm], 1)], 0)
    return Hm


def attn_case(nrows, nwg, dv):
    rng = gen()
    htmp = torch.randn(nrows, dv // 4, nwg, 4, generator=rng)
    stats = torch.stack([torch.rand(nrows, nwg, generator=rng) + 0.5, torch.randn(nrows, nwg, generator=rng)], -1)
    signs = torch.where(torch.rand(dv, generator=rng) < 0.5, -1.0, 1.0)
    Hs = hadamard(dv) * signs / math.sqrt(dv)                            # the FWHT, scale and signs as one matrix

    def run():
        s, m = stats[..., 0], stats[..., 1]
        e = torch.exp(m - m.amax(-1, keepdim=True))                      # [nrows, nwg]
        merged = torch.einsum("rdwf,rw->rdf", htmp, e).reshape(nrows, dv) / (s * e).sum(-1, keepdim=True)
        return merged @ Hs
    return run


def rope_case(variant, seq, heads, dim, half):
    rng = gen()
    eps, theta = 1e-6, 1e6
    if variant == "bf16":
        x = torch.randn(heads, dim, generator=rng).bfloat16()
        w = (1 + 0.1 * torch.randn(dim, generator=rng)).bfloat16()
        cos, sin = torch.rand(half, generator=rng), torch.rand(half, generator=rng)

        def run():
            xf = x.float()
            y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()
            lo, hi = y[:, :half], y[:, half:2 * half]
            return torch.cat([lo * cos - hi * sin, hi * cos + lo * sin, y[:, 2 * half:]], -1).bfloat16()
        return run
    x = torch.randn(seq, heads, dim, generator=rng)
    w = 1 + 0.1 * torch.randn(dim, generator=rng)
    pos = torch.randint(0, 8192, (seq,), generator=rng, dtype=torch.int32)
    freqs = theta ** (-torch.arange(0, half, dtype=torch.float32) * 2 / dim)

    def run():
        ang = pos.float()[:, None] * freqs                               # [seq, half]
        c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
        lo, hi = y[..., :half], y[..., half:2 * half]
        return torch.cat([lo * c - hi * s, hi * c + lo * s, y[..., 2 * half:]], -1)
    return run


def case_for(family, size):
    """The torch closure for a bench row, from its family and size text."""
    d = dict(re.findall(r"([A-Za-z]+)=?(\d+)", size.replace("K=V=", "K=V")))
    if family.startswith("gdn_"):
        K = int(d.get("KV", d.get("K", 128)))
        return gdn_case(family, int(d["B"]), int(d["T"]), int(d["H"]), int(d.get("Hg", d["H"])), K, K)
    if family == "attn_reduce_fwht":
        m = re.match(r"rows(\d+) nwg(\d+) d(\d+)", size)
        return attn_case(int(m[1]), int(m[2]), int(m[3]))
    if family == "head_norm_rope":
        m = re.match(r"(f32|bf16) (?:seq(\d+)|1 token) x(\d+) d(\d+)", size)
        dim = int(m[4])
        return rope_case(m[1], int(m[2] or 1), int(m[3]), dim, dim // 2)
    return None


UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
ROW = re.compile(r"^(\S+)\s+(.+?)\s+(avx512|avx2|portable)\s+(\d+)\s+([\d.]+) (s|ms|us)\s+\S+ \S+\s+\S+\s+\S+\s+\S+"
                 r"\s+\S+\s+(?:([\d.]+) (s|ms|us)|-)")


def bench_rows(text):
    """{(family, size): (1-thread s, 2-thread s or None)} of the best path's rows (the first of each size)."""
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if not m or (m[1], m[2]) in rows:
            continue
        two = float(m[7]) * UNITS[m[8]] if m[7] else None
        rows[(m[1], m[2])] = (float(m[5]) * UNITS[m[6]], two, m[3])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--bench", default="build/bench/bench", help="the bench binary, run now (default)")
    src.add_argument("--bench-output", help="a saved bench output instead of a run")
    ap.add_argument("--filter", default="", help="only rows whose family or size contains this text")
    ap.add_argument("--one-thread", action="store_true",
                    help="skip torch's 2-thread timing (on a loaded machine its OpenMP threads wait for each other)")
    args = ap.parse_args()
    if args.bench_output:
        text = open(args.bench_output).read()
    else:
        cmd = [args.bench, "--no-naive", "--no-verify", "--no-ref", "--isa", "avx512,avx2", "--cpu-time"]
        if args.filter:
            cmd += ["--filter", args.filter]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = bench_rows(text)
    if not rows:
        sys.exit("torch_peer: no kernel rows in the bench output")
    # A bench run with --cpu-time gives its 1-thread rows in thread CPU time:
    # torch's 1-thread calls (on the calling thread) are timed the same way.
    cpu_time = "--cpu-time:" in text
    clock1 = time.thread_time if cpu_time else time.perf_counter
    print(f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}); ulpgate: the best path of one bench "
          "run; ratio = torch time / ulpgate time (> 1: ulpgate faster); 1T: "
          + ("thread CPU time (the bench ran with --cpu-time)" if cpu_time else "wall-clock") + ", 2T: wall-clock")
    print(f"{'family':21s} {'size':26s} {'path':7s} {'ulpgate 1T':>11s} {'torch 1T':>11s} {'ratio':>7s}  "
          f"{'ulpgate 2T':>11s} {'torch 2T':>11s} {'ratio':>7s}")
    with torch.inference_mode():
        for (family, size), (t1, t2, path) in rows.items():
            if args.filter and args.filter not in family and args.filter not in size:
                continue
            fn = case_for(family, size)
            if fn is None:
                print(f"{family:21s} {size:26s} no torch peer")
                continue
            torch.set_num_threads(1)
            p1 = timed(fn, clock1)
            p2 = None
            if not args.one_thread:
                torch.set_num_threads(2)
                p2 = timed(fn)
            fmt = lambda s: "-" if s is None else f"{s * 1e3:8.3f} ms" if s >= 1e-3 else f"{s * 1e6:8.2f} us"
            r2 = f"{p2 / t2:6.2f}x" if t2 and p2 else "      -"
            print(f"{family:21s} {size:26s} {path:7s} {fmt(t1):>11s} {fmt(p1):>11s} {p1 / t1:6.2f}x  "
                  f"{fmt(t2):>11s} {fmt(p2):>11s} {r2}")


if __name__ == "__main__":
    main()
