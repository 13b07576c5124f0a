/* SPDX-License-Identifier: MIT */
/* gdn_e2e (SPEC §1.2, §1.3): validation of the composition's own buffers,
 * then the six stage kernels in order on guarded heap scratch, then the two
 * outputs copied out of the scratch. The stages do all the arithmetic (and
 * choose their ISA paths, bit-identical by their own contracts); this file
 * only wires them, so its mutants are wiring bugs. */
#include "gdn_e2e.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../core/bf16.h"
#include "../core/guard.h"
#include "gdn_chunk_cumsum.h"
#include "gdn_chunk_o.h"
#include "gdn_chunk_scaled_kkt.h"
#include "gdn_chunk_state.h"
#include "gdn_recompute_wu.h"
#include "gdn_solve_tril.h"
#include "tensor_check.h"

#ifndef UG_MUTANT
#define UG_MUTANT GDN_E2E_CORRECT
#endif

#define KERNEL "gdn_e2e"

enum { BT = GDN_E2E_BT };

_Static_assert(GDN_E2E_K == GDN_CHUNK_O_MAX_K, "chunk_o fixes K");
_Static_assert(GDN_E2E_K <= GDN_RECOMPUTE_WU_MAX_K && GDN_E2E_K % GDN_RECOMPUTE_WU_BK == 0, "recompute_wu takes K");
_Static_assert(GDN_E2E_MAX_V <= GDN_RECOMPUTE_WU_MAX_V && GDN_E2E_MAX_V <= GDN_CHUNK_O_MAX_V &&
                   GDN_E2E_MAX_V <= GDN_CHUNK_STATE_MAX_V,
               "every stage takes V <= MAX_V");
_Static_assert(GDN_E2E_BV == GDN_RECOMPUTE_WU_BV && GDN_E2E_BV % GDN_CHUNK_O_BV == 0, "V % BV satisfies every stage");

float gdn_e2e_scale(uint32_t k) { return (float)(1.0 / sqrt((double)k)); }

/* ---- the intermediates -------------------------------------------------------- */

/* The spare tensors hold what a mutant or variant wiring passes a stage
 * instead of an intermediate; they have elements only in those builds. */
enum { I_G, I_L, I_A, I_W, I_U, I_H, I_V_NEW, I_FINAL, I_O, I_SPARE_ROWS, I_SPARE_KEYS, I_SPARE_GATES,
       N_INTERMEDIATES };
static const uint32_t spare = UG_MUTANT != GDN_E2E_CORRECT;

typedef struct {
    ug_guarded mem[N_INTERMEDIATES];
    ug_buf buf[N_INTERMEDIATES];
    const char *name[N_INTERMEDIATES];
} scratch;

/* Name, dtype and shape of every intermediate (the tensors the stages
 * exchange, and the outputs before they are copied out). */
static void intermediate_specs(const gdn_e2e_params *p, ug_tensor_spec spec[N_INTERMEDIATES])
{
    const uint32_t nt = p->t / p->bt;
    const ug_tensor_spec specs[N_INTERMEDIATES] = {
        [I_G] = {"G", NULL, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        [I_L] = {"L", NULL, UG_F32, 4, {"B", "T", "H", "BT"}, {p->b, p->t, p->h, p->bt}, false},
        [I_A] = {"A", NULL, UG_F32, 4, {"B", "T", "H", "BT"}, {p->b, p->t, p->h, p->bt}, false},
        [I_W] = {"w", NULL, UG_BF16, 4, {"B", "T", "H", "K"}, {p->b, p->t, p->h, p->k}, false},
        [I_U] = {"u", NULL, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        [I_H] = {"h", NULL, UG_BF16, 5, {"B", "NT", "H", "V", "K"}, {p->b, nt, p->h, p->v, p->k}, false},
        [I_V_NEW] = {"v_new", NULL, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        [I_FINAL] = {"final_state", NULL, UG_F32, 4, {"B", "H", "K", "V"}, {p->b, p->h, p->k, p->v}, false},
        [I_O] = {"o", NULL, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        [I_SPARE_ROWS] = {"spare rows", NULL, UG_F32, 4, {"B", "T", "H", "BT"}, {spare * p->b, p->t, p->h, p->bt},
                          false},
        [I_SPARE_KEYS] = {"spare keys", NULL, UG_BF16, 4, {"B", "T", "Hg", "K"}, {spare * p->b, p->t, p->hg, p->k},
                          false},
        [I_SPARE_GATES] = {"spare gates", NULL, UG_F32, 3, {"B", "T", "H"}, {spare * p->b, p->t, p->h}, false},
    };
    memcpy(spec, specs, sizeof specs);
}

/* Element count and byte size of an intermediate, or a rejection naming it
 * and its shape when either does not fit in size_t. */
static ug_status intermediate_size(const ug_tensor_spec *t, size_t *count, size_t *bytes)
{
    size_t n = 1;
    bool overflow = false;
    for (size_t d = 0; d < t->rank; d++) overflow |= __builtin_mul_overflow(n, (size_t)t->dims[d], &n);
    overflow |= __builtin_mul_overflow(n, ug_dtype_size(t->dtype), bytes);
    if (!overflow) {
        *count = n;
        return ug_ok();
    }
    char shape[160];
    int len = 0;
    for (size_t d = 0; d < t->rank; d++)
        len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%s=%u", d ? ", " : "", t->dim_names[d],
                        t->dims[d]);
    return ug_fail(UG_EINVAL, KERNEL ": intermediate %s shape [%s] has more bytes than size_t can count", t->name,
                   shape);
}

/* ---- validation ------------------------------------------------------------------ */

/* The caller's buffer for each intermediate (NULL: not wanted). */
static void stage_outputs(const gdn_e2e_stages *stages, ug_buf *out[N_INTERMEDIATES])
{
    const gdn_e2e_stages none = {0};
    const gdn_e2e_stages *st = stages ? stages : &none;
    ug_buf *const given[N_INTERMEDIATES] = {[I_G] = st->g, [I_L] = st->l, [I_A] = st->a, [I_W] = st->w,
                                            [I_U] = st->u, [I_H] = st->h, [I_V_NEW] = st->v_new};
    memcpy(out, given, sizeof given);
}

static ug_status validate(const gdn_e2e_params *p, const ug_buf *q, const ug_buf *k, const ug_buf *v,
                          const ug_buf *beta, const ug_buf *g_raw, const ug_buf *h0, const ug_buf *o,
                          const ug_buf *final_state, ug_buf *const wanted[N_INTERMEDIATES])
{
    if (!p) return ug_fail(UG_EINVAL, KERNEL ": no params (NULL)");
    const ug_named_dim dims[] = {{"B", p->b}, {"T", p->t}, {"Hg", p->hg}, {"H", p->h},
                                 {"K", p->k}, {"V", p->v}, {"BT", p->bt}};
    UG_TRY(ug_check_dims_positive(KERNEL, sizeof dims / sizeof dims[0], dims));
    if (p->has_h0 > 1) return ug_fail(UG_EINVAL, KERNEL ": has_h0 (%u) must be 0 or 1", p->has_h0);
    if (p->h % p->hg != 0)
        return ug_fail(UG_EINVAL, KERNEL ": h (%u) must be a multiple of hg (%u)", p->h, p->hg);
    if (p->k != GDN_E2E_K)
        return ug_fail(UG_EINVAL,
                       KERNEL ": K (%u) must equal %u: gdn_chunk_o's MAX_K = %u exactly (its MMA K-loop is "
                              "compile-time)",
                       p->k, GDN_E2E_K, GDN_CHUNK_O_MAX_K);
    if (p->v > GDN_E2E_MAX_V)
        return ug_fail(UG_EINVAL, KERNEL ": V (%u) exceeds MAX_V = %u (every stage's value tile)", p->v,
                       GDN_E2E_MAX_V);
    if (p->bt != BT) return ug_fail(UG_EINVAL, KERNEL ": bt must be %d (got %u)", BT, p->bt);
    if (p->t % p->bt != 0)
        return ug_fail(UG_EINVAL, KERNEL ": t (%u) must be a multiple of bt (%u)", p->t, p->bt);
    if (p->v % GDN_E2E_BV != 0)
        return ug_fail(UG_EINVAL, KERNEL ": V (%u) must be a multiple of BV = %u (gdn_recompute_wu's value tile)",
                       p->v, GDN_E2E_BV);
    const ug_tensor_spec tensors[] = {
        {"q", q, UG_BF16, 4, {"B", "T", "Hg", "K"}, {p->b, p->t, p->hg, p->k}, false},
        {"k", k, UG_BF16, 4, {"B", "T", "Hg", "K"}, {p->b, p->t, p->hg, p->k}, false},
        {"v", v, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        {"beta", beta, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"g_raw", g_raw, UG_F32, 3, {"B", "T", "H"}, {p->b, p->t, p->h}, false},
        {"h0", h0, UG_F32, 4, {"B", "H", "K", "V"}, {p->b, p->h, p->k, p->v}, !p->has_h0},
        {"o", o, UG_BF16, 4, {"B", "T", "H", "V"}, {p->b, p->t, p->h, p->v}, false},
        {"final_state", final_state, UG_F32, 4, {"B", "H", "K", "V"}, {p->b, p->h, p->k, p->v}, false},
    };
    UG_TRY(ug_check_tensors(KERNEL, sizeof tensors / sizeof tensors[0], tensors));
    ug_tensor_spec spec[N_INTERMEDIATES];
    intermediate_specs(p, spec);
    for (size_t i = 0; i < N_INTERMEDIATES; i++) {
        size_t count, bytes;
        UG_TRY(intermediate_size(&spec[i], &count, &bytes));
        spec[i].buf = wanted[i];
        if (wanted[i]) UG_TRY(ug_check_tensors(KERNEL, 1, &spec[i]));
    }
    return ug_ok();
}

/* ---- scratch ---------------------------------------------------------------------- */

/* Every intermediate the caller does not take (taken: bit i), o and
 * final_state always (copied out at the end); a taken one has 0 bytes. */
static ug_status scratch_open(scratch *s, const gdn_e2e_params *p, uint32_t taken)
{
    memset(s, 0, sizeof *s);
    ug_tensor_spec spec[N_INTERMEDIATES];
    intermediate_specs(p, spec);
    for (size_t i = 0; i < N_INTERMEDIATES; i++) {
        size_t count, bytes;
        UG_TRY(intermediate_size(&spec[i], &count, &bytes));
        if (taken >> i & 1u) count = bytes = 0;
        ug_status st = ug_guarded_alloc(&s->mem[i], bytes);
        if (!ug_is_ok(&st)) return ug_fail(st.code, KERNEL ": intermediate %s: %s", spec[i].name, st.msg);
        s->buf[i] = (ug_buf){ug_guarded_data(&s->mem[i]), count, spec[i].dtype};
        s->name[i] = spec[i].name;
    }
    return ug_ok();
}

/* The first overwritten guard, or UG_OK: a stage that wrote past its
 * output must not have its results copied out. */
static ug_status scratch_check(const scratch *s)
{
    for (size_t i = 0; i < N_INTERMEDIATES; i++)
        if (!ug_guarded_intact(&s->mem[i]))
            return ug_fail(UG_EGUARD, KERNEL ": intermediate %s: guard zone around its %zu bytes was overwritten",
                           s->name[i], s->mem[i].bytes);
    return ug_ok();
}

/* Frees every intermediate; the first overwritten guard, or UG_OK. */
static ug_status scratch_close(scratch *s)
{
    ug_status first = ug_ok();
    for (size_t i = 0; i < N_INTERMEDIATES; i++) {
        ug_status st = ug_guarded_free(&s->mem[i], KERNEL " intermediate");
        if (ug_is_ok(&first)) first = st;
    }
    return first;
}

/* Scratch sets kept between calls, one per concurrent caller up to
 * KEPT_SCRATCH (more callers allocate their own for the call): a set is
 * reused by a call of the same shape, replaced for another shape. */
enum { KEPT_SCRATCH = 2 };
typedef struct {
    scratch s;
    gdn_e2e_params shape;
    uint32_t taken;
    bool allocated, busy;
} kept_scratch;
static kept_scratch kept[KEPT_SCRATCH];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_shape(const gdn_e2e_params *a, const gdn_e2e_params *b)
{
    return a->b == b->b && a->t == b->t && a->hg == b->hg && a->h == b->h && a->k == b->k && a->v == b->v &&
           a->bt == b->bt;
}

/* A scratch set for shape p and the intermediates taken: a kept one (*slot
 * its index) or the call's own (*slot = -1). */
static ug_status scratch_take(const gdn_e2e_params *p, uint32_t taken, scratch **out, scratch *own, int *slot)
{
    int free_slot = -1;
    pthread_mutex_lock(&kept_lock);
    for (int i = 0; i < KEPT_SCRATCH && *slot < 0; i++) {
        if (kept[i].busy) continue;
        if (kept[i].allocated && same_shape(&kept[i].shape, p) && kept[i].taken == taken) *slot = i;
        else if (free_slot < 0 || !kept[i].allocated) free_slot = i;
    }
    if (*slot < 0) *slot = free_slot;
    if (*slot >= 0) kept[*slot].busy = true;
    pthread_mutex_unlock(&kept_lock);
    if (*slot < 0) {
        *out = own;
        return scratch_open(own, p, taken);
    }
    kept_scratch *ks = &kept[*slot];
    *out = &ks->s;
    if (ks->allocated && same_shape(&ks->shape, p) && ks->taken == taken) return ug_ok();
    if (ks->allocated) (void)scratch_close(&ks->s); /* its guards were checked when its last call gave it back */
    ks->allocated = false;
    ug_status st = scratch_open(&ks->s, p, taken);
    if (!ug_is_ok(&st)) {
        (void)scratch_close(&ks->s); /* nothing was written into it */
        pthread_mutex_lock(&kept_lock);
        ks->busy = false;
        pthread_mutex_unlock(&kept_lock);
        memset(own, 0, sizeof *own);
        *out = own;
        *slot = -1;
        return st;
    }
    ks->allocated = true;
    ks->shape = *p;
    ks->taken = taken;
    return ug_ok();
}

void gdn_e2e_release_scratch(void)
{
    pthread_mutex_lock(&kept_lock);
    for (int i = 0; i < KEPT_SCRATCH; i++)
        if (kept[i].allocated && !kept[i].busy) {
            (void)scratch_close(&kept[i].s); /* its guards were checked when its last call gave it back */
            kept[i].allocated = false;
        }
    pthread_mutex_unlock(&kept_lock);
}

/* Returns a kept set for the next call, or frees the call's own; the first
 * overwritten guard, or UG_OK. */
static ug_status scratch_give(scratch *s, int slot)
{
    if (slot < 0) return scratch_close(s);
    ug_status st = scratch_check(s);
    pthread_mutex_lock(&kept_lock);
    if (!ug_is_ok(&st)) { /* a broken set is not reused */
        (void)scratch_close(s);
        kept[slot].allocated = false;
    }
    kept[slot].busy = false;
    pthread_mutex_unlock(&kept_lock);
    return st;
}

/* ---- the pipeline ------------------------------------------------------------------ */

/* A stage's failure, with the stage named and its code kept. */
static ug_status stage(const char *name, ug_status st)
{
    return ug_is_ok(&st) ? st : ug_fail(st.code, KERNEL ": %s: %s", name, st.msg);
}

typedef struct {
    const ug_buf *q, *k, *v, *beta, *g_raw, *h0;
} inputs;

/* Mutant SOLVE_SKIPPED: A = I, chunk row i ([B,T,H,BT], t = c*BT + i) has
 * its 1 in column i. */
static void identity_rows(const gdn_e2e_params *p, ug_buf *a)
{
    float *rows = a->data;
    for (size_t r = 0; r < a->count / BT; r++)
        for (size_t j = 0; j < BT; j++) rows[r * BT + j] = (float)(j == r / p->h % BT);
}

/* Mutant FINAL_ONE_CHUNK_EARLY: final_state [K][V] from the last chunk's
 * start state h[NT-1] (bf16, [V][K]). */
static void final_from_last_h(const gdn_e2e_params *p, const ug_buf *h, ug_buf *final_state)
{
    const size_t nt = p->t / p->bt, kv = (size_t)p->k * p->v;
    const ug_bf16 *hs = h->data;
    float *out = final_state->data;
    for (size_t b = 0; b < p->b; b++)
        for (size_t head = 0; head < p->h; head++) {
            const ug_bf16 *last = hs + ((b * nt + nt - 1) * p->h + head) * kv;
            for (size_t kk = 0; kk < p->k; kk++)
                for (size_t vv = 0; vv < p->v; vv++)
                    out[(b * p->h + head) * kv + kk * p->v + vv] = ug_bf16_to_f32(last[vv * p->k + kk]);
        }
}

/* Mutant SCALE_IN_BF16_Q: bf16(q * scale). */
static ug_buf scaled_queries(const ug_buf *q, float scale, ug_buf *spare_keys)
{
    const ug_bf16 *in = q->data;
    ug_bf16 *out = spare_keys->data;
    for (size_t i = 0; i < q->count; i++) out[i] = ug_bf16_from_f32(ug_bf16_to_f32(in[i]) * scale);
    return *spare_keys;
}

/* Mutant BETA_AFTER_CAST: A·diag(beta) (column j of chunk row t scaled by
 * the beta of token c*BT + j), and beta = 1. */
static void beta_into_a(const gdn_e2e_params *p, const ug_buf *beta, const ug_buf *a, ug_buf *a_beta, ug_buf *ones)
{
    const float *betas = beta->data, *rows = a->data;
    float *out = a_beta->data, *one = ones->data;
    for (size_t r = 0; r < a->count / BT; r++) {
        const size_t h = r % p->h, t = r / p->h % p->t, b = r / p->h / p->t, t0 = t - t % BT;
        for (size_t j = 0; j < BT; j++) out[r * BT + j] = rows[r * BT + j] * betas[(b * p->t + t0 + j) * p->h + h];
    }
    for (size_t i = 0; i < ones->count; i++) one[i] = 1.0f;
}

/* Mutant WRONG_KEY_HEAD: the keys with key head kh moved to (kh - 1) mod Hg. */
static void rotate_key_heads(const gdn_e2e_params *p, const ug_buf *k, ug_buf *spare_keys)
{
    const ug_bf16 *keys = k->data;
    ug_bf16 *out = spare_keys->data;
    for (size_t row = 0; row < (size_t)p->b * p->t; row++)
        for (size_t kh = 0; kh < p->hg; kh++)
            memcpy(out + (row * p->hg + kh) * p->k, keys + (row * p->hg + (kh + 1) % p->hg) * p->k,
                   p->k * sizeof *out);
}

/* Mutant BF16_PARTIAL_SUMS: L as gdn_chunk_scaled_kkt defines it, but each
 * dot product's running sum rounded to bf16 after every 16 terms. */
static void kkt_bf16_partials(const gdn_e2e_params *p, const ug_buf *k, const ug_buf *beta, const ug_buf *g,
                              ug_buf *l)
{
    const ug_bf16 *keys = k->data;
    const float *betas = beta->data, *gates = g->data;
    float *out = l->data;
    const size_t group = p->h / p->hg;
    for (size_t r = 0; r < l->count / BT; r++) {
        const size_t h = r % p->h, t = r / p->h % p->t, b = r / p->h / p->t, i = t % BT, t0 = t - i;
        const ug_bf16 *ki = keys + ((b * p->t + t) * p->hg + h / group) * p->k;
        for (size_t j = 0; j < BT; j++) {
            const size_t col = (b * p->t + t0 + j) * p->h + h;
            const ug_bf16 *kj = keys + ((b * p->t + t0 + j) * p->hg + h / group) * p->k;
            float dot = 0.0f;
            for (size_t d = 0; j < i && d < p->k; d++) {
                dot += ug_bf16_to_f32(ki[d]) * ug_bf16_to_f32(kj[d]);
                if (d % 16 == 15) dot = ug_bf16_to_f32(ug_bf16_from_f32(dot));
            }
            out[r * BT + j] = j < i ? betas[r] * expf(gates[r] - gates[col]) * dot : 0.0f;
        }
    }
}

/* Mutant L_THROUGH_BF16: L rounded to bf16 (as f32 values). */
static ug_buf l_through_bf16(const ug_buf *l, ug_buf *spare_rows)
{
    const float *in = l->data;
    float *out = spare_rows->data;
    for (size_t i = 0; i < l->count; i++) out[i] = ug_bf16_to_f32(ug_bf16_from_f32(in[i]));
    return *spare_rows;
}

static ug_status run_stages(const gdn_e2e_params *p, const inputs *in, ug_buf *x)
{
    const gdn_chunk_cumsum_params cumsum = {p->b, p->t, p->h, p->bt};
    UG_TRY(stage("chunk_cumsum", gdn_chunk_cumsum(&cumsum, in->g_raw, &x[I_G])));
    const ug_buf *gates = UG_MUTANT == GDN_E2E_MUT_RAW_GATES ? in->g_raw : &x[I_G];

    const gdn_chunk_scaled_kkt_params kkt = {p->b, p->t, p->hg, p->h, p->k, p->bt};
    if (UG_MUTANT == GDN_E2E_MUT_BF16_PARTIAL_SUMS)
        kkt_bf16_partials(p, in->k, in->beta, gates, &x[I_L]);
    else
        UG_TRY(stage("chunk_scaled_kkt", gdn_chunk_scaled_kkt(&kkt, in->k, in->beta, gates, &x[I_L])));

    const gdn_solve_tril_params solve = {p->b, p->t, p->h, p->bt};
    const ug_buf l = UG_MUTANT == GDN_E2E_MUT_L_THROUGH_BF16 ? l_through_bf16(&x[I_L], &x[I_SPARE_ROWS]) : x[I_L];
    if (UG_MUTANT == GDN_E2E_MUT_SOLVE_SKIPPED)
        identity_rows(p, &x[I_A]);
    else
        UG_TRY(stage("solve_tril", gdn_solve_tril(&solve, &l, &x[I_A])));

    const gdn_recompute_wu_params wu = {p->b, p->t, p->hg, p->h, p->k, p->v, p->bt};
    const bool beta_late = UG_MUTANT == GDN_E2E_MUT_BETA_AFTER_CAST;
    if (beta_late) beta_into_a(p, in->beta, &x[I_A], &x[I_SPARE_ROWS], &x[I_SPARE_GATES]);
    UG_TRY(stage("recompute_wu", gdn_recompute_wu(&wu, in->k, in->v, beta_late ? &x[I_SPARE_GATES] : in->beta, gates,
                                                  &x[beta_late ? I_SPARE_ROWS : I_A], &x[I_W], &x[I_U])));

    const bool use_h0 = p->has_h0 && UG_MUTANT != GDN_E2E_MUT_H0_IGNORED;
    const gdn_chunk_state_params state = {p->b, p->t, p->hg, p->h, p->k, p->v, p->bt, use_h0};
    const ug_buf no_h0 = {NULL, 0, UG_F32};
    const bool swap_wu = UG_MUTANT == GDN_E2E_MUT_W_U_SWAPPED;
    const bool rotate_keys = UG_MUTANT == GDN_E2E_MUT_WRONG_KEY_HEAD;
    if (rotate_keys) rotate_key_heads(p, in->k, &x[I_SPARE_KEYS]);
    UG_TRY(stage("chunk_state", gdn_chunk_state(&state, rotate_keys ? &x[I_SPARE_KEYS] : in->k,
                                                &x[swap_wu ? I_U : I_W], &x[swap_wu ? I_W : I_U], gates,
                                                use_h0 ? in->h0 : &no_h0, &x[I_H], &x[I_V_NEW], &x[I_FINAL])));
    if (UG_MUTANT == GDN_E2E_MUT_FINAL_ONE_CHUNK_EARLY) final_from_last_h(p, &x[I_H], &x[I_FINAL]);

    const bool scale_in_q = UG_MUTANT == GDN_E2E_MUT_SCALE_IN_BF16_Q;
    const float scale = gdn_e2e_scale(p->k);
    const ug_buf q_scaled = scale_in_q ? scaled_queries(in->q, scale, &x[I_SPARE_KEYS]) : *in->q;
    const gdn_chunk_o_params out = {p->b, p->t, p->hg, p->h, p->k, p->v, p->bt, scale_in_q ? 1.0f : scale};
    const bool swap_qk = UG_MUTANT == GDN_E2E_MUT_Q_K_SWAPPED;
    const ug_buf *values = UG_MUTANT == GDN_E2E_MUT_V_FOR_V_NEW ? in->v : &x[I_V_NEW];
    return stage("chunk_o", gdn_chunk_o(&out, swap_qk ? in->k : &q_scaled, swap_qk ? in->q : in->k, values, &x[I_H],
                                        gates, &x[I_O]));
}

ug_status gdn_e2e(const gdn_e2e_params *p, const ug_buf *q, const ug_buf *k, const ug_buf *v, const ug_buf *beta,
                  const ug_buf *g_raw, const ug_buf *h0, ug_buf *o, ug_buf *final_state,
                  const gdn_e2e_stages *stages)
{
    ug_buf *out[N_INTERMEDIATES];
    stage_outputs(UG_MUTANT == GDN_E2E_LEGIT_FUSED ? NULL : stages, out);
    if (UG_MUTANT == GDN_E2E_LEGIT_KKT_SOLVE_FUSED) out[I_L] = out[I_A] = NULL;
    out[I_O] = o;
    out[I_FINAL] = final_state;
    UG_TRY(validate(p, q, k, v, beta, g_raw, h0, o, final_state, out));
    uint32_t taken = 0;
    for (size_t i = 0; i < N_INTERMEDIATES; i++)
        if (out[i] && i != I_O && i != I_FINAL) taken |= 1u << i;
    scratch own, *s;
    int slot = -1;
    const inputs in = {q, k, v, beta, g_raw, h0};
    ug_status st = scratch_take(p, taken, &s, &own, &slot);
    ug_buf x[N_INTERMEDIATES];
    for (size_t i = 0; i < N_INTERMEDIATES && ug_is_ok(&st); i++) x[i] = taken >> i & 1u ? *out[i] : s->buf[i];
    if (ug_is_ok(&st)) st = run_stages(p, &in, x);
    if (ug_is_ok(&st)) st = scratch_check(s);
    if (ug_is_ok(&st)) {
        memcpy(o->data, s->buf[I_O].data, s->mem[I_O].bytes);
        memcpy(final_state->data, s->buf[I_FINAL].data, s->mem[I_FINAL].bytes);
    }
    ug_status given = scratch_give(s, slot);
    return ug_is_ok(&st) ? given : st;
}
