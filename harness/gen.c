/* SPDX-License-Identifier: MIT */
#include "gen.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/hash.h"

double ug_gen_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

double ug_gen_logsigmoid(double x) { return x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x)); }

double ug_gen_softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

double ug_gen_mamba_gate(gsl_rng *rng, double a_log, double dt_bias)
{
    return -exp(a_log) * ug_gen_softplus(gsl_ran_gaussian(rng, 1.0) + dt_bias);
}

void ug_gen_unit_vector(gsl_rng *rng, const double *base, double spread, size_t n, double *out)
{
    double norm2 = 0;
    for (size_t i = 0; i < n; i++) {
        double noise = gsl_ran_gaussian(rng, 1.0);
        out[i] = base ? base[i] + spread * noise : noise;
        norm2 += out[i] * out[i];
    }
    double inv = norm2 > 0 ? 1.0 / sqrt(norm2) : 0.0;
    for (size_t i = 0; i < n; i++) out[i] *= inv;
}

void ug_gen_to_bf16(const double *x, size_t n, ug_bf16 *out)
{
    for (size_t i = 0; i < n; i++) out[i] = ug_bf16_from_f32((float)x[i]);
}

double ug_gen_grid(gsl_rng *rng, unsigned max_m, int scale_log2)
{
    long m = (long)gsl_rng_uniform_int(rng, 2ul * max_m + 1) - (long)max_m;
    return ldexp((double)m, -scale_log2);
}

void ug_gen_grid_fill(gsl_rng *rng, unsigned max_m, int scale_log2, ug_buf *b)
{
    for (size_t i = 0; i < b->count; i++) {
        float x = (float)ug_gen_grid(rng, max_m, scale_log2);
        if (b->dtype == UG_BF16) ((ug_bf16 *)b->data)[i] = ug_bf16_from_f32(x);
        else ((float *)b->data)[i] = x;
    }
}

/* A ring of blocks of words: the thread fills block b once the reader has
 * given back block b - AHEAD_BLOCKS; the reader takes block `consumed`
 * once it is produced. One lock round per 64 Ki words. */
enum { AHEAD_BLOCKS = 4, AHEAD_WORDS = 1 << 16 };

struct ug_gen_ahead {
    gsl_rng *source; /* the mt19937 the thread draws from */
    gsl_rng *rng;    /* the reader's: hands out the source's words in order */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    size_t produced, consumed; /* blocks, under lock */
    bool stop;
    uint32_t words[AHEAD_BLOCKS][AHEAD_WORDS];
};

typedef struct {
    ug_gen_ahead *a;
    const uint32_t *word, *end; /* the rest of the block being read */
} ahead_reader;

static void *draw_ahead(void *arg)
{
    ug_gen_ahead *a = arg;
    for (size_t b = 0;; b++) {
        pthread_mutex_lock(&a->lock);
        while (!a->stop && b - a->consumed >= AHEAD_BLOCKS) pthread_cond_wait(&a->changed, &a->lock);
        const bool stop = a->stop;
        pthread_mutex_unlock(&a->lock);
        if (stop) return NULL;
        uint32_t *w = a->words[b % AHEAD_BLOCKS];
        for (size_t k = 0; k < AHEAD_WORDS; k++) w[k] = (uint32_t)gsl_rng_get(a->source);
        pthread_mutex_lock(&a->lock);
        a->produced = b + 1;
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->lock);
    }
}

static void ahead_set(void *state, unsigned long seed)
{
    (void)seed; /* the source is seeded; gsl_rng_alloc calls this before the reader is attached */
    memset(state, 0, sizeof(ahead_reader));
}

/* Gives the block read back and waits for the next one. */
static __attribute__((noinline)) void ahead_next_block(ahead_reader *r)
{
    ug_gen_ahead *a = r->a;
    pthread_mutex_lock(&a->lock);
    if (r->word) a->consumed++;
    pthread_cond_broadcast(&a->changed);
    while (a->produced <= a->consumed) pthread_cond_wait(&a->changed, &a->lock);
    pthread_mutex_unlock(&a->lock);
    r->word = a->words[a->consumed % AHEAD_BLOCKS];
    r->end = r->word + AHEAD_WORDS;
}

/* The next word, the refill out of line (a draw's own cost is a load). */
static inline uint32_t ahead_word(ahead_reader *r)
{
    if (r->word == r->end) ahead_next_block(r);
    return *r->word++;
}

static unsigned long ahead_get(void *state) { return ahead_word(state); }

/* mt19937's own double from the same word (GSL's mt.c: the word / 2^32;
 * tests/test_runner.c compares every kind of draw). */
static double ahead_get_double(void *state) { return (double)ahead_word(state) / 4294967296.0; }

static const gsl_rng_type ahead_type = {"ug_ahead_mt19937", 0xffffffffUL, 0, sizeof(ahead_reader), ahead_set,
                                        ahead_get, ahead_get_double};

ug_status ug_gen_ahead_start(unsigned long seed, ug_gen_ahead **out)
{
    *out = NULL;
    ug_gen_ahead *a = calloc(1, sizeof *a);
    if (!a) return ug_fail(UG_ENOMEM, "cannot allocate %zu bytes of draws made ahead", sizeof *a);
    a->source = gsl_rng_alloc(gsl_rng_mt19937);
    a->rng = gsl_rng_alloc(&ahead_type);
    if (!a->source || !a->rng) {
        gsl_rng_free(a->source);
        gsl_rng_free(a->rng);
        free(a);
        return ug_fail(UG_ENOMEM, "cannot allocate the random generators of draws made ahead");
    }
    gsl_rng_set(a->source, seed);
    ((ahead_reader *)a->rng->state)->a = a;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->changed, NULL);
    if (pthread_create(&a->thread, NULL, draw_ahead, a) != 0) {
        a->stop = true;
        ug_gen_ahead_stop(a);
        return ug_fail(UG_ENOMEM, "cannot start the thread that draws ahead");
    }
    *out = a;
    return ug_ok();
}

gsl_rng *ug_gen_ahead_rng(ug_gen_ahead *a) { return a->rng; }

void ug_gen_ahead_stop(ug_gen_ahead *a)
{
    if (!a) return;
    pthread_mutex_lock(&a->lock);
    const bool running = !a->stop;
    a->stop = true;
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
    if (running) pthread_join(a->thread, NULL);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->changed);
    gsl_rng_free(a->source);
    gsl_rng_free(a->rng);
    free(a);
}

unsigned long ug_gen_case_seed(unsigned long sweep_seed, const char *family, const char *label)
{
    uint64_t h = ug_fnv1a(UG_FNV1A_OFFSET, &sweep_seed, sizeof sweep_seed);
    h = ug_fnv1a(h, family, strlen(family) + 1);
    return ug_fnv1a(h, label, strlen(label));
}
