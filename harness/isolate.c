/* SPDX-License-Identifier: MIT */
#include "isolate.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/memcheck.h>

#include "../core/guard.h"
#include "../kernels/parallel.h"

/* More workers than callers can exist: the runner's --jobs limit. */
enum { MAX_WORKERS = 256, MAX_FAMILIES = 256 };
static const unsigned char guard_pattern = 0xA5;
static const double load_timeout_floor = 60, close_timeout = 10;

/* One kernel call, harness to worker (a SOCK_SEQPACKET message). */
typedef struct {
    uint32_t family;         /* ug_family_at index */
    int32_t isa;
    uint32_t kernel_threads;
    uint32_t n_buffers;
    uint32_t alarm_seconds;  /* the worker's own backstop, should the harness vanish */
    uint64_t shm_bytes;      /* the mapping's size for this call */
    ug_params params;
    struct {
        uint64_t offset, count;
        int32_t dtype;
    } buf[UG_MAX_BUFFERS];
} request;

/* Worker to harness: the answer to the load (with provided) or to one call. */
typedef struct {
    ug_status status;
    uint8_t provided[MAX_FAMILIES];
} reply;

typedef struct {
    pid_t pid;              /* 0: no worker */
    int sock;               /* the harness's end; -1 when none */
    int memfd;              /* the slot's shared memory, kept across workers */
    unsigned char *shm;     /* the harness's mapping of it */
    size_t shm_bytes;
    bool busy;
} worker;

struct ug_isolate {
    ug_worker_kernels kernels;
    char what[256];
    double case_timeout;    /* 0: the default per call */
    bool provided[MAX_FAMILIES];
    pthread_mutex_t lock;   /* the slots' pid, sock, busy and mapping */
    worker slots[MAX_WORKERS];
    ug_kernel_source source;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static size_t page_bytes(void) { return (size_t)sysconf(_SC_PAGESIZE); }

double ug_isolate_default_timeout(size_t buffer_bytes)
{
    return (10.0 + (double)buffer_bytes / (1 << 20)) * (RUNNING_ON_VALGRIND ? 20 : 1);
}

/* ---- the shared mapping: buffers between guard zones ---------------------- */

typedef struct {
    size_t n;
    size_t offset[UG_MAX_BUFFERS], bytes[UG_MAX_BUFFERS];
    size_t total;           /* a multiple of the page size */
} shm_layout;

static ug_status layout_buffers(const ug_buf *bufs, size_t n, shm_layout *l)
{
    l->n = n;
    size_t at = UG_GUARD_BYTES;
    for (size_t i = 0; i < n; i++) {
        size_t size = ug_dtype_size(bufs[i].dtype);
        if (bufs[i].count > (SIZE_MAX / 4 - at) / 8)
            return ug_fail(UG_ENOMEM, "buffer %zu of %zu elements does not fit a shared mapping", i, bufs[i].count);
        l->offset[i] = at;
        l->bytes[i] = bufs[i].count * size;
        at += round_up(l->bytes[i], UG_GUARD_BYTES) + UG_GUARD_BYTES;
    }
    l->total = round_up(at, page_bytes());
    return ug_ok();
}

/* Guard gap g: before buffer 0 (g = 0), or from the end of buffer g - 1 to
 * the next buffer or the end of the mapping. */
static void gap_bounds(const shm_layout *l, size_t g, size_t *begin, size_t *end)
{
    *begin = g == 0 ? 0 : l->offset[g - 1] + l->bytes[g - 1];
    *end = g == l->n ? l->total : l->offset[g];
}

static void gaps_fill(const shm_layout *l, unsigned char *shm)
{
    for (size_t g = 0, b, e; g <= l->n; g++) {
        gap_bounds(l, g, &b, &e);
        memset(shm + b, guard_pattern, e - b);
    }
}

/* The first overwritten gap, or SIZE_MAX. */
static size_t gaps_broken(const shm_layout *l, const unsigned char *shm)
{
    for (size_t g = 0, b, e; g <= l->n; g++) {
        gap_bounds(l, g, &b, &e);
        for (size_t k = b; k < e; k++)
            if (shm[k] != guard_pattern) return g;
    }
    return SIZE_MAX;
}

/* In the worker under valgrind: the gaps no-access, so that a read past a
 * buffer is reported at the faulting instruction, as in the harness. */
static void gaps_set_access(const shm_layout *l, unsigned char *shm, bool accessible)
{
    for (size_t g = 0, b, e; g <= l->n; g++) {
        gap_bounds(l, g, &b, &e);
        if (accessible) VALGRIND_MAKE_MEM_DEFINED(shm + b, e - b);
        else VALGRIND_MAKE_MEM_NOACCESS(shm + b, e - b);
    }
}

/* ---- the worker process ------------------------------------------------- */

/* The worker's view: the mapping between two inaccessible pages. */
typedef struct {
    unsigned char *area;
    size_t bytes;
} worker_map;

static bool worker_map_to(worker_map *m, int memfd, size_t bytes)
{
    if (m->area && m->bytes == bytes) return true;
    size_t page = page_bytes();
    if (m->area) munmap(m->area - page, m->bytes + 2 * page);
    m->area = NULL;
    unsigned char *reserved =
        mmap(NULL, bytes + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) return false;
    if (mmap(reserved + page, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd, 0) == MAP_FAILED) {
        munmap(reserved, bytes + 2 * page);
        return false;
    }
    m->area = reserved + page;
    m->bytes = bytes;
    return true;
}

/* Sends status (and provided) with every byte defined: nothing of the worker's memory past the message. */
static void worker_send(int sock, const ug_status *status, const bool *provided)
{
    reply r;
    memset(&r, 0, sizeof r);
    r.status.code = status->code;
    snprintf(r.status.msg, sizeof r.status.msg, "%s", status->msg);
    for (size_t f = 0; provided && f < MAX_FAMILIES; f++) r.provided[f] = provided[f];
    (void)send(sock, &r, sizeof r, MSG_NOSIGNAL);
}

static ug_status worker_call(const ug_isolate *iso, void *state, int memfd, worker_map *map, const request *rq)
{
    if (rq->family >= ug_family_count() || rq->n_buffers > UG_MAX_BUFFERS || rq->isa < 0 || rq->isa >= UG_ISA_COUNT)
        return ug_fail(UG_EKERNEL, "malformed request (family %u, %u buffers, isa %d)", rq->family, rq->n_buffers,
                       rq->isa);
    if (!worker_map_to(map, memfd, rq->shm_bytes))
        return ug_fail(UG_ENOMEM, "the worker cannot map %llu bytes of shared memory: %s",
                       (unsigned long long)rq->shm_bytes, strerror(errno));
    ug_case c = {.family = ug_family_at(rq->family), .params = rq->params};
    ug_buf bufs[UG_MAX_BUFFERS];
    shm_layout l = {.n = rq->n_buffers, .total = rq->shm_bytes};
    for (size_t i = 0; i < rq->n_buffers; i++) {
        bufs[i] = (ug_buf){map->area + rq->buf[i].offset, rq->buf[i].count, (ug_dtype)rq->buf[i].dtype};
        l.offset[i] = rq->buf[i].offset;
        l.bytes[i] = rq->buf[i].count * ug_dtype_size(bufs[i].dtype);
    }
    UG_TRY(ug_isa_select((ug_isa)rq->isa));
    UG_TRY(ug_kernel_threads_set(rq->kernel_threads ? rq->kernel_threads : 1));
    unsigned errors_before = VALGRIND_COUNT_ERRORS;
    gaps_set_access(&l, map->area, false);
    alarm(rq->alarm_seconds);
    ug_status st = iso->kernels.run(state, &c, bufs);
    alarm(0);
    gaps_set_access(&l, map->area, true);
    unsigned errors = VALGRIND_COUNT_ERRORS - errors_before;
    if (errors)
        return ug_fail(UG_EKERNEL, "valgrind reported %u error(s) in the worker during the call (its log names them)",
                       errors);
    return st;
}

/* Registered in a worker after the harness's exit handlers (inherited with
 * the fork), so run before them by a kernel's exit(): they must not run in a worker. */
static void worker_exit(int status, __attribute__((unused)) void *arg)
{
    fflush(NULL);
    _exit(status);
}

/* A worker's normal end. valgrind's leak check of a worker would list the harness's own blocks (its
 * heap is their copy, without the other threads that held some of them): the harness's check covers them. */
static _Noreturn void worker_end(void)
{
    if (RUNNING_ON_VALGRIND) raise(SIGKILL);
    _exit(0);
}

/* The child after fork: drops the other workers' ends, loads the kernels,
 * reports the table, then answers calls until the harness closes its end. */
static _Noreturn void worker_main(ug_isolate *iso, worker *self)
{
    on_exit(worker_exit, NULL);
    for (size_t k = 0; k < MAX_WORKERS; k++) {
        worker *w = &iso->slots[k];
        if (w == self) continue;
        if (w->sock >= 0) close(w->sock);
        if (w->memfd >= 0) close(w->memfd);
        if (w->shm) munmap(w->shm, w->shm_bytes);
    }
    if (self->shm) munmap(self->shm, self->shm_bytes);
    /* The harness's handlers (if any) are not the worker's; its stdout is the verdict's. */
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    bool provided[MAX_FAMILIES] = {false};
    void *state = NULL;
    ug_status st = iso->kernels.load(iso->kernels.arg, &state, provided);
    worker_send(self->sock, &st, provided);
    if (!ug_is_ok(&st)) worker_end();
    worker_map map = {NULL, 0};
    request rq;
    while (recv(self->sock, &rq, sizeof rq, 0) == (ssize_t)sizeof rq) {
        st = worker_call(iso, state, self->memfd, &map, &rq);
        worker_send(self->sock, &st, NULL);
    }
    worker_end();
}

/* ---- the harness's side ------------------------------------------------- */

static void describe_end(int status, char *out, size_t size)
{
    if (WIFEXITED(status)) {
        snprintf(out, size, "exited with status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        const char *abbrev = sigabbrev_np(WTERMSIG(status));
        snprintf(out, size, "was killed by signal SIG%s (%s)", abbrev ? abbrev : "?", strsignal(WTERMSIG(status)));
    } else {
        snprintf(out, size, "ended with wait status %#x", (unsigned)status);
    }
}

/* The worker has been waited for: the slot takes a fresh one next. */
static void worker_forget(worker *w)
{
    close(w->sock);
    w->sock = -1;
    w->pid = 0;
}

/* Ends the worker (it ended or is killed) and frees the slot for a fresh one. */
static void worker_reap(worker *w, bool kill_it, char *how, size_t size)
{
    int status = 0;
    if (kill_it) kill(w->pid, SIGKILL);
    while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {}
    if (how) describe_end(status, how, size);
    worker_forget(w);
}

typedef enum { WAIT_REPLY, WAIT_ENDED, WAIT_TIMEOUT } wait_result;

/* Waits for the worker's reply until the deadline; on its end, reaps it
 * (a worker that closed its socket but lives on is killed at the deadline). */
static wait_result wait_reply(worker *w, double deadline, reply *r, char *how, size_t size)
{
    for (;;) {
        double left = deadline - now_seconds();
        if (left <= 0) return WAIT_TIMEOUT;
        struct pollfd p = {w->sock, POLLIN, 0};
        int n = poll(&p, 1, (int)ceil(fmin(left, 3600) * 1000));
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) continue;
        if (n > 0 && recv(w->sock, r, sizeof *r, MSG_DONTWAIT) == (ssize_t)sizeof *r) return WAIT_REPLY;
        /* EOF or an error: the worker is ending */
        while (now_seconds() < deadline) {
            int status;
            pid_t got = waitpid(w->pid, &status, WNOHANG);
            if (got == w->pid) {
                describe_end(status, how, size);
                worker_forget(w);
                return WAIT_ENDED;
            }
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        }
        return WAIT_TIMEOUT;
    }
}

/* Forks a worker into slot w (the lock held, so that no other worker is
 * forked between this one's socketpair and the close of its end here). */
static ug_status worker_start(ug_isolate *iso, worker *w)
{
    if (w->memfd < 0) {
        w->memfd = memfd_create("ulpgate-worker", MFD_CLOEXEC);
        if (w->memfd < 0) return ug_fail(UG_ENOMEM, "cannot create a worker's shared memory: %s", strerror(errno));
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return ug_fail(UG_ENOMEM, "cannot create a worker's socket: %s", strerror(errno));
    fflush(NULL); /* nothing buffered here may be written twice */
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return ug_fail(UG_ENOMEM, "cannot start a worker process for %s: %s", iso->what, strerror(errno));
    }
    if (pid == 0) {
        close(sv[0]);
        w->sock = sv[1];
        worker_main(iso, w);
    }
    close(sv[1]);
    w->pid = pid;
    w->sock = sv[0];
    double limit = fmax(iso->case_timeout, load_timeout_floor);
    reply r;
    char how[160];
    switch (wait_reply(w, now_seconds() + limit, &r, how, sizeof how)) {
    case WAIT_REPLY: break;
    case WAIT_ENDED:
        return ug_fail(UG_EINVAL, "%s: the worker process loading it %s before it reported its kernel table "
                       "(a constructor or the entry point ended it)", iso->what, how);
    case WAIT_TIMEOUT:
        worker_reap(w, true, NULL, 0);
        return ug_fail(UG_EINVAL, "%s: the worker process loading it did not report its kernel table within %g s",
                       iso->what, limit);
    }
    if (!ug_is_ok(&r.status)) {
        worker_reap(w, false, NULL, 0);
        return r.status;
    }
    for (size_t f = 0; f < ug_family_count(); f++) iso->provided[f] = r.provided[f];
    return ug_ok();
}

/* A free worker for this call, started when none is running. */
static ug_status worker_acquire(ug_isolate *iso, worker **out)
{
    pthread_mutex_lock(&iso->lock);
    worker *w = NULL;
    for (size_t k = 0; k < MAX_WORKERS && !w; k++)
        if (!iso->slots[k].busy && iso->slots[k].pid) w = &iso->slots[k];
    for (size_t k = 0; k < MAX_WORKERS && !w; k++)
        if (!iso->slots[k].busy) w = &iso->slots[k];
    ug_status st = w ? ug_ok() : ug_fail(UG_EINVAL, "more than %d concurrent kernel calls", MAX_WORKERS);
    if (w && !w->pid) st = worker_start(iso, w);
    if (ug_is_ok(&st)) w->busy = true;
    pthread_mutex_unlock(&iso->lock);
    *out = w;
    return st;
}

static void worker_release(ug_isolate *iso, worker *w)
{
    pthread_mutex_lock(&iso->lock);
    w->busy = false;
    pthread_mutex_unlock(&iso->lock);
}

static ug_status shm_reserve(ug_isolate *iso, worker *w, size_t bytes)
{
    if (w->shm && w->shm_bytes == bytes) return ug_ok();
    pthread_mutex_lock(&iso->lock); /* a worker forked now must see a whole mapping */
    if (w->shm) munmap(w->shm, w->shm_bytes);
    w->shm = NULL;
    w->shm_bytes = 0;
    void *p = ftruncate(w->memfd, (off_t)bytes) == 0
                  ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, w->memfd, 0)
                  : MAP_FAILED;
    if (p != MAP_FAILED) {
        w->shm = p;
        w->shm_bytes = bytes;
    }
    pthread_mutex_unlock(&iso->lock);
    if (p == MAP_FAILED)
        return ug_fail(UG_ENOMEM, "cannot map %zu bytes of shared memory for a worker: %s", bytes, strerror(errno));
    return ug_ok();
}

static size_t family_index(const ug_family *f)
{
    size_t i = 0;
    while (i < ug_family_count() && ug_family_at(i) != f) i++;
    return i;
}

/* One call on worker w: buffers in, request, reply or the worker's end, buffers out. */
static ug_status call_on(ug_isolate *iso, worker *w, const ug_case *c, ug_buf *bufs)
{
    const size_t n = c->family->n_buffers;
    shm_layout l = {0};
    UG_TRY(layout_buffers(bufs, n, &l));
    UG_TRY(shm_reserve(iso, w, l.total));
    size_t bytes = 0;
    request rq;
    memset(&rq, 0, sizeof rq); /* padding too: the worker's valgrind checks what it reads */
    rq.family = (uint32_t)family_index(c->family);
    rq.isa = (int32_t)ug_isa_current();
    rq.kernel_threads = ug_kernel_threads();
    rq.n_buffers = (uint32_t)n;
    rq.shm_bytes = w->shm_bytes;
    rq.params = c->params;
    gaps_fill(&l, w->shm);
    for (size_t i = 0; i < n; i++) {
        memcpy(w->shm + l.offset[i], bufs[i].data, l.bytes[i]);
        rq.buf[i].offset = l.offset[i];
        rq.buf[i].count = bufs[i].count;
        rq.buf[i].dtype = (int32_t)bufs[i].dtype;
        bytes += l.bytes[i];
    }
    double limit = iso->case_timeout > 0 ? iso->case_timeout : ug_isolate_default_timeout(bytes);
    rq.alarm_seconds = (uint32_t)fmin(2 * limit + 10, 1e7);
    reply r;
    char how[160] = "";
    /* A failed send (the worker ended since its last call) shows as its end below. */
    (void)send(w->sock, &rq, sizeof rq, MSG_NOSIGNAL);
    wait_result got = wait_reply(w, now_seconds() + limit, &r, how, sizeof how);
    if (got == WAIT_TIMEOUT) {
        worker_reap(w, true, NULL, 0);
        return ug_fail(UG_EKERNEL, "%s: %s/%s timed out after %g s (%s); the worker process was killed", iso->what,
                       c->family->name, c->label, limit,
                       iso->case_timeout > 0 ? "--case-timeout" : "the default for its buffers, see --case-timeout");
    }
    if (got == WAIT_ENDED)
        return ug_fail(UG_EKERNEL, "%s: the worker process running %s/%s %s", iso->what, c->family->name, c->label,
                       how);
    size_t broken = gaps_broken(&l, w->shm);
    for (size_t i = 0; i < n; i++) memcpy(bufs[i].data, w->shm + l.offset[i], l.bytes[i]);
    if (broken != SIZE_MAX)
        return ug_fail(UG_EGUARD, "guard zone of buffer %s overwritten (%s, in %s)",
                       c->family->buffers[broken ? broken - 1 : 0].name, broken ? "past its end" : "before its start",
                       iso->what);
    return r.status;
}

static ug_status isolated_run(void *ctx, const ug_case *c, ug_buf *bufs)
{
    ug_isolate *iso = ctx;
    worker *w;
    ug_status st = worker_acquire(iso, &w);
    if (!ug_is_ok(&st))
        return ug_fail(UG_EKERNEL, "no worker process for %s/%s: %s", c->family->name, c->label, st.msg);
    st = call_on(iso, w, c, bufs);
    worker_release(iso, w);
    return st;
}

ug_status ug_isolate_open(const ug_worker_kernels *kernels, const char *label, double case_timeout, ug_isolate **out)
{
    *out = NULL;
    if (!(case_timeout >= 0 && case_timeout <= 1e6))
        return ug_fail(UG_EINVAL, "case timeout %g s is not in [0, 1e6] (0: the default)", case_timeout);
    if (ug_family_count() > MAX_FAMILIES)
        return ug_fail(UG_EINVAL, "%zu families exceed the worker protocol's %d", ug_family_count(), MAX_FAMILIES);
    ug_isolate *iso = calloc(1, sizeof *iso);
    if (!iso) return ug_fail(UG_ENOMEM, "cannot allocate the worker pool for %s", kernels->what);
    iso->kernels = *kernels;
    snprintf(iso->what, sizeof iso->what, "%s", kernels->what);
    iso->case_timeout = case_timeout;
    pthread_mutex_init(&iso->lock, NULL);
    for (size_t k = 0; k < MAX_WORKERS; k++) iso->slots[k] = (worker){0, -1, -1, NULL, 0, false};
    iso->source = (ug_kernel_source){label, isolated_run, iso};
    worker *w;
    ug_status st = worker_acquire(iso, &w);
    if (!ug_is_ok(&st)) {
        ug_isolate_close(iso);
        return st;
    }
    worker_release(iso, w);
    *out = iso;
    return ug_ok();
}

void ug_isolate_close(ug_isolate *iso)
{
    if (!iso) return;
    for (size_t k = 0; k < MAX_WORKERS; k++) {
        worker *w = &iso->slots[k];
        if (w->pid) {
            shutdown(w->sock, SHUT_RDWR); /* the worker's recv ends: it exits */
            double deadline = now_seconds() + close_timeout;
            int status;
            pid_t got;
            while ((got = waitpid(w->pid, &status, WNOHANG)) == 0 && now_seconds() < deadline)
                nanosleep(&(struct timespec){0, 1000000}, NULL);
            if (got == 0) worker_reap(w, true, NULL, 0);
            else worker_forget(w);
        }
        if (w->shm) munmap(w->shm, w->shm_bytes);
        if (w->memfd >= 0) close(w->memfd);
    }
    pthread_mutex_destroy(&iso->lock);
    free(iso);
}

const ug_kernel_source *ug_isolate_source(const ug_isolate *iso) { return &iso->source; }

bool ug_isolate_provides(const ug_isolate *iso, const ug_family *f)
{
    size_t i = family_index(f);
    return i < ug_family_count() && iso->provided[i];
}

/* ---- the built-in kernels in workers ------------------------------------ */

static ug_status builtin_load(__attribute__((unused)) void *arg, __attribute__((unused)) void **state,
                              bool *provided)
{
    for (size_t f = 0; f < ug_family_count(); f++) provided[f] = true;
    return ug_ok();
}

static ug_status builtin_run(__attribute__((unused)) void *state, const ug_case *c, ug_buf *bufs)
{
    return c->family->run(&c->params, bufs);
}

ug_status ug_isolate_open_builtin(double case_timeout, ug_isolate **out)
{
    const ug_worker_kernels builtin = {"built-in kernels", builtin_load, builtin_run, NULL};
    return ug_isolate_open(&builtin, "isolated", case_timeout, out);
}
