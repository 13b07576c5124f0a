/* The vector loops of head_norm_rope, written once for every SIMD path
 * (included by head_norm_rope_avx2.c and head_norm_rope_avx512.c after they
 * define: vec, LANES, vec_load, vec_load_bf16 (LANES bf16 widened exactly),
 * vec_store, vec_set1, vec_add, vec_mul, vec_fmadd(a, b, c) = fl(a*b + c),
 * vec_fmsub(a, b, c) = fl(a*b - c), reduce_last_lanes (the tree's last steps
 * over partial[0 .. 2*LANES) in registers), then PATH_NAME).
 * Each loop performs head_norm_rope_paths.h's operations LANES elements at a
 * time and the scalar definitions on the elements left over. */

/* Element i of x as f32, x of either dtype (bf16 widens exactly); the
 * always-inline callers pass a constant `bf16`. */
static inline vec load_as_f32(const void *x, size_t i, bool bf16)
{
    return bf16 ? vec_load_bf16((const ug_bf16 *)x + i) : vec_load((const float *)x + i);
}
static inline float scalar_as_f32(const void *x, size_t i, bool bf16)
{
    return bf16 ? ug_bf16_to_f32(((const ug_bf16 *)x)[i]) : ((const float *)x)[i];
}

static inline __attribute__((always_inline)) void accumulate_squares(const void *x, size_t n, float *partial,
                                                                      bool bf16)
{
    size_t t = 0;
    for (; t + LANES <= n; t += LANES) {
        vec v = load_as_f32(x, t, bf16);
        vec_store(partial + t, vec_fmadd(v, v, vec_load(partial + t)));
    }
    for (; t < n; t++) {
        float v = scalar_as_f32(x, t, bf16);
        partial[t] = fmaf(v, v, partial[t]);
    }
}

static void accumulate_squares_bf16(const ug_bf16 *x, size_t n, float *partial)
{
    accumulate_squares(x, n, partial, true);
}
static void accumulate_squares_f32(const float *x, size_t n, float *partial) { accumulate_squares(x, n, partial, false); }

/* The tree's steps down to 2 * LANES sums as vector adds over memory, then
 * reduce_last_lanes in registers. */
static float reduce(float *partial, size_t tg)
{
    if (tg < 2 * LANES) {
        for (size_t stride = tg / 2; stride > 0; stride /= 2) head_norm_rope_fold(partial, stride);
        return partial[0];
    }
    for (size_t stride = tg / 2; stride > LANES; stride /= 2)
        for (size_t t = 0; t < stride; t += LANES)
            vec_store(partial + t, vec_add(vec_load(partial + t), vec_load(partial + t + stride)));
    return reduce_last_lanes(partial);
}

static inline __attribute__((always_inline)) void scale(const void *x, const void *w, size_t n, float r, float *y,
                                                         bool bf16)
{
    const vec rv = vec_set1(r);
    size_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        vec v = vec_mul(load_as_f32(x, i, bf16), rv);
        vec_store(y + i, w ? vec_mul(v, load_as_f32(w, i, bf16)) : v);
    }
    for (; i < n; i++) {
        float wi = w ? scalar_as_f32(w, i, bf16) : 0.0f;
        y[i] = head_norm_rope_scale(scalar_as_f32(x, i, bf16), r, w ? &wi : NULL);
    }
}

static void scale_bf16(const ug_bf16 *x, const ug_bf16 *w, size_t n, float r, float *y) { scale(x, w, n, r, y, true); }
static void scale_f32(const float *x, const float *w, size_t n, float r, float *y) { scale(x, w, n, r, y, false); }

static void rotate(float *lo, float *hi, const float *c, const float *s, size_t n)
{
    size_t k = 0;
    for (; k + LANES <= n; k += LANES) {
        vec l = vec_load(lo + k), h = vec_load(hi + k), cv = vec_load(c + k), sv = vec_load(s + k);
        vec_store(lo + k, vec_fmsub(l, cv, vec_mul(h, sv)));
        vec_store(hi + k, vec_fmadd(h, cv, vec_mul(l, sv)));
    }
    for (; k < n; k++) head_norm_rope_rotate_pair(lo + k, hi + k, c[k], s[k]);
}

const head_norm_rope_path PATH_NAME = {accumulate_squares_bf16, accumulate_squares_f32, reduce, scale_bf16,
                                       scale_f32,               rotate};
