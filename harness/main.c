/* SPDX-License-Identifier: MIT */
/* ulpgate command line: verbs over the registered kernel families.
 *
 * Exit codes (README "Exit codes" lists every path): 0 pass; 1 the gate
 * failed (a kernel out of budget, a case failed, a regression); 2 bad usage
 * or a bad input (a missing, unreadable or malformed file, a sweep case over
 * the memory cap, an unusable reports directory), found before anything runs;
 * 3 an internal error (out of memory, I/O after the start, the reference
 * could not compute). The verdict is printed last: a run that exits 2 or 3
 * prints none. */
#include <errno.h>
#include <getopt.h>
#include <mpfr.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/hash.h"
#include "../core/input_file.h"
#include "../core/json_dir.h"
#include "../include/ulpgate/kernel_abi.h"
#include "../kernels/parallel.h"
#include "gate.h"
#include "interop.h"
#include "merge.h"
#include "plugin.h"
#include "profile.h"
#include "report.h"
#include "runner.h"
#include "userinputs.h"

enum { EXIT_PASS = 0, EXIT_GATE = 1, EXIT_USAGE = 2, EXIT_INTERNAL = 3 };

static const char *exe_path; /* argv[0]: --profile NAME also looks beside the executable */

/* The model of --profile's argument (default UG_PROFILE_DEFAULT), announced on stdout. */
static ug_status load_profile(const char *arg, ug_f32_model *out)
{
    UG_TRY(ug_profile_resolve(arg ? arg : UG_PROFILE_DEFAULT, exe_path, out));
    printf("ulpgate: profile %s (%s, %s)%s\n", out->id.name, out->id.origin, out->id.hash,
           out->products == UG_PRODUCTS_TF32 ? ", tf32 products" : "");
    return ug_ok();
}

static int fail_with(const ug_status *st)
{
    fprintf(stderr, "ulpgate: %s\n", st->msg);
    switch (st->code) {
    case UG_EPARSE:
    case UG_EINVAL:
    case UG_EINPUT: return EXIT_USAGE;
    default: return EXIT_INTERNAL;
    }
}

/* An input file or directory named on the command line, before any work:
 * missing or unreadable is an input error (exit 2) naming the option. */
static ug_status input_path(const char *option, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || access(path, R_OK) != 0)
        return ug_fail(UG_EINPUT, "%s %s: %s", option, path, strerror(errno));
    return ug_ok();
}

/* The directory of an output file must exist and be writable before the run. */
static ug_status output_file_dir(const char *option, const char *path)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    if (!ug_is_directory(dir) || access(dir, W_OK | X_OK) != 0)
        return ug_fail(UG_EINVAL, "%s %s: the directory %s does not exist or is not writable", option, path, dir);
    return ug_ok();
}

static const char version_text[] = "ulpgate (unreleased; kernel ABI %u, reports ulpgate-report/1)\n";

static int print_version(void)
{
    printf(version_text, (unsigned)ULPGATE_KERNEL_ABI_VERSION);
    return EXIT_PASS;
}

/* -h, --help and --version of every verb (getopt_long values). */
enum { OPT_HELP = 'h', OPT_VERSION = 0x100 };
#define COMMON_OPTIONS {"help", no_argument, 0, OPT_HELP}, {"version", no_argument, 0, OPT_VERSION}

static void usage_verify(FILE *out)
{
    fputs("usage: ulpgate verify --sweep FILE --budgets FILE [--baseline FILE] [--reports DIR]\n"
          "                      [--write-baseline FILE] [--filter TEXT] [--isa LIST] [--max-case-mib N] [--jobs N] [--shard I/N] [--quiet]\n"
          "                      [--kernel-threads N] [--kernel-lib PATH] [--profile NAME|PATH] [--enforce-stat-budgets]\n"
          "                      [--isolate] [--case-timeout SECONDS]\n"
          "Runs every case of the sweep on every ISA path of this CPU, measures each output\n"
          "element against the MPFR reference (exact and staged modes), gates the figures\n"
          "against the budgets and the baseline, prints a summary and writes the reports.\n"
          "  --sweep PATH           shape grid: a file or a directory of files (fixtures/sweeps/default/)\n"
          "  --budgets PATH         error budgets: a file or a directory of files (fixtures/budgets/)\n"
          "  --baseline FILE        compare against this baseline (fixtures/baseline.json)\n"
          "  --reports DIR          write the report set there (report.md, .json, .html, cases.csv, junit.xml),\n"
          "                         replacing the previous set whole (docs/report-format.md)\n"
          "  --write-baseline FILE  accept this run's figures as the new baseline\n"
          "  --filter TEXT          only cases whose family/label contains TEXT\n"
          "  --isa LIST             comma-separated paths to run (portable,avx2,avx512, or best: the fastest\n"
          "                         this CPU runs; default all supported)\n"
          "  --max-case-mib N       refuse cases whose buffers exceed N MiB, and start a case only while\n"
          "                         what it holds (its buffers, one slice's reference) and the running\n"
          "                         cases' fit under N MiB together (default 1024)\n"
          "  --jobs N               run cases on N threads (default 1); results do not depend on N\n"
          "  --kernel-threads N     split each kernel call over N threads (default 1; 1 .. 64); nor on N\n"
          "  --shard I/N            run only the cases whose index modulo N is I (0 <= I < N);\n"
          "                         `ulpgate merge` combines the shards' report.json files\n"
          "  --quiet                no progress line even on a terminal\n"
          "  --kernel-lib PATH      verify the kernels of this shared library (include/ulpgate/kernel_abi.h)\n"
          "                         instead of the built-in ones, on the sweep's families it provides;\n"
          "                         they run in worker processes: a call that exits, crashes or hangs fails its case\n"
          "  --isolate              run the built-in kernels in worker processes too (slower; default in-process)\n"
          "  --case-timeout SECONDS limit of one kernel call in a worker (default 10 s + 1 s per MiB of its\n"
          "                         buffers, x20 under valgrind); a call past it fails its case\n"
          "  --enforce-stat-budgets the budgets' ULP statistics (measured on the built-in kernels) gate\n"
          "                         a --kernel-lib library too, not only advise (docs/budgets.md)\n"
          "  --profile NAME|PATH    the kernels' target arithmetic (fixtures/profiles/NAME.json; default cpu)\n"
          "  --sample-slices F      opt-in sampled checking for huge shapes: the reference and bound of only\n"
          "                         ceil(F n) of a case's n slices (batch entry x value head), drawn at random;\n"
          "                         every element is still run and checked for poison; report.md states the\n"
          "                         sample and the probability of missing an error (not with --baseline,\n"
          "                         --write-baseline or --shard)\n"
          "  --sample-seed N        the draw's seed (default 0; with the case seed)\n"
          "  -h, --help, --version  this text; the version\n"
          "exit: 0 pass, 1 gate failed, 2 usage or input error (before anything runs), 3 internal error\n",
          out);
}

static void usage(FILE *out)
{
    fputs("usage: ulpgate VERB [options]\n"
          "verbs:\n"
          "  verify   run a sweep, gate it, write reports (ulpgate verify --help)\n"
          "  compare  compare two results (before/after a change); exit 1 on a regression\n"
          "  merge    combine the reports of verify --shard I/N runs, then gate and report\n"
          "  report   re-gate and re-render one run's report.json (e.g. against another baseline)\n"
          "  export   write a sweep's cases as safetensors fixtures for a kernel outside ulpgate\n"
          "  score    gate a candidate's outputs read from safetensors files (docs/interop.md)\n"
          "  reference  the reference and bounds on your own input tensors, as fixtures for score\n"
          "  list     the kernel families: parameters, buffers, regimes, mutants\n"
          "  mutants  the deliberately broken kernel builds, one per line: FAMILY ID NAME\n"
          "  variants the numerically legitimate rewrites the gate must accept: FAMILY ID NAME\n"
          "ulpgate -h | --help | --version; every verb takes -h, --help and --version too.\n"
          "exit: 0 pass, 1 gate failed, 2 usage or input error, 3 internal error (README: every exit path)\n",
          out);
}

static bool parse_isa_list(char *list, bool enabled[UG_ISA_COUNT])
{
    for (int i = 0; i < UG_ISA_COUNT; i++) enabled[i] = false;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        ug_isa isa = ug_isa_best();
        if (strcmp(tok, "best") != 0 && !ug_isa_parse(tok, &isa)) {
            fprintf(stderr, "ulpgate: --isa: unknown path '%s' (expected portable, avx2, avx512 or best)\n", tok);
            return false;
        }
        if (!ug_isa_supported(isa)) {
            fprintf(stderr, "ulpgate: --isa: this CPU cannot run the %s path\n", tok);
            return false;
        }
        enabled[isa] = true;
    }
    return true;
}

static bool parse_max_case_mib(const char *arg, size_t *bytes)
{
    char *end;
    unsigned long long mib = strtoull(arg, &end, 10);
    if (*end || mib == 0 || mib > (1ull << 20)) {
        fprintf(stderr, "ulpgate: --max-case-mib: '%s' is not a number of MiB in [1, 1048576]\n", arg);
        return false;
    }
    *bytes = (size_t)mib << 20;
    return true;
}

/* The value of a thread-count option: 1 .. max. */
static bool parse_thread_count(const char *option, const char *arg, long max, long *n)
{
    char *end;
    *n = strtol(arg, &end, 10);
    if (*end || *n < 1 || *n > max) {
        fprintf(stderr, "ulpgate: %s: '%s' is not a number of threads in [1, %ld]\n", option, arg, max);
        return false;
    }
    return true;
}

static bool parse_jobs(const char *arg, int *jobs)
{
    long n;
    if (!parse_thread_count("--jobs", arg, 256, &n)) return false;
    *jobs = (int)n;
    return true;
}

static bool parse_kernel_threads(const char *arg, unsigned *threads)
{
    long n;
    if (!parse_thread_count("--kernel-threads", arg, UG_KERNEL_MAX_THREADS, &n)) return false;
    *threads = (unsigned)n;
    return true;
}

typedef struct {
    const char *sweep, *budgets, *baseline, *reports, *write_baseline, *filter, *kernel_lib, *profile;
    bool enforce_stats;
    size_t shard_index, shard_count;
    bool isolate, sample_seed_given;
    double case_timeout;        /* 0: the default per call */
    ug_run_options run;
} verify_args;

static int parse_verify(int argc, char **argv, verify_args *a)
{
    static const struct option opts[] = {
        {"sweep", required_argument, 0, 's'},    {"budgets", required_argument, 0, 'b'},
        {"baseline", required_argument, 0, 'B'}, {"reports", required_argument, 0, 'r'},
        {"write-baseline", required_argument, 0, 'w'}, {"filter", required_argument, 0, 'f'},
        {"isa", required_argument, 0, 'i'},      {"max-case-mib", required_argument, 0, 'm'},
        {"quiet", no_argument, 0, 'q'},          COMMON_OPTIONS,
        {"jobs", required_argument, 0, 'j'},    {"shard", required_argument, 0, 'S'},
        {"kernel-lib", required_argument, 0, 'k'}, {"kernel-threads", required_argument, 0, 'K'},
        {"enforce-stat-budgets", no_argument, 0, 'E'}, {"profile", required_argument, 0, 'P'},
        {"isolate", no_argument, 0, 'I'},        {"case-timeout", required_argument, 0, 'T'},
        {"sample-slices", required_argument, 0, 'F'}, {"sample-seed", required_argument, 0, 'Z'},
        {0, 0, 0, 0},
    };
    memset(a, 0, sizeof *a);
    for (int i = 0; i < UG_ISA_COUNT; i++) a->run.isa_enabled[i] = true;
    a->run.max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT;
    a->run.jobs = 1;
    a->run.progress = isatty(STDERR_FILENO) && !getenv("CI");
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (ch) {
        case 's': a->sweep = optarg; break;
        case 'b': a->budgets = optarg; break;
        case 'B': a->baseline = optarg; break;
        case 'r': a->reports = optarg; break;
        case 'w': a->write_baseline = optarg; break;
        case 'f': a->filter = optarg; break;
        case 'k': a->kernel_lib = optarg; break;
        case 'E': a->enforce_stats = true; break;
        case 'P': a->profile = optarg; break;
        case 'q': a->run.progress = false; break;
        case 'I': a->isolate = true; break;
        case 'T': {
            char *end;
            a->case_timeout = strtod(optarg, &end);
            if (*end || end == optarg || !(a->case_timeout > 0 && a->case_timeout <= 1e6)) {
                fprintf(stderr, "ulpgate: --case-timeout: '%s' is not a number of seconds in (0, 1e6]\n", optarg);
                return EXIT_USAGE;
            }
            break;
        }
        case 'i':
            if (!parse_isa_list(optarg, a->run.isa_enabled)) return EXIT_USAGE;
            break;
        case 'm':
            if (!parse_max_case_mib(optarg, &a->run.max_case_bytes)) return EXIT_USAGE;
            break;
        case 'F': {
            char *end;
            a->run.sample_fraction = strtod(optarg, &end);
            if (*end || end == optarg || !(a->run.sample_fraction > 0 && a->run.sample_fraction <= 1)) {
                fprintf(stderr, "ulpgate: --sample-slices: '%s' is not a fraction in (0, 1]\n", optarg);
                return EXIT_USAGE;
            }
            break;
        }
        case 'Z': {
            char *end;
            errno = 0;
            a->run.sample_seed = strtoull(optarg, &end, 0);
            if (*end || end == optarg || errno || optarg[0] == '-') {
                fprintf(stderr, "ulpgate: --sample-seed: '%s' is not an unsigned 64-bit integer\n", optarg);
                return EXIT_USAGE;
            }
            a->sample_seed_given = true;
            break;
        }
        case 'j':
            if (!parse_jobs(optarg, &a->run.jobs)) return EXIT_USAGE;
            break;
        case 'K':
            if (!parse_kernel_threads(optarg, &a->run.kernel_threads)) return EXIT_USAGE;
            break;
        case 'S': {
            unsigned long i, n;
            int used = 0;
            if (sscanf(optarg, "%lu/%lu%n", &i, &n, &used) != 2 || optarg[used] || n == 0 || i >= n) {
                fprintf(stderr, "ulpgate: --shard: '%s' is not I/N with 0 <= I < N\n", optarg);
                return EXIT_USAGE;
            }
            a->shard_index = i;
            a->shard_count = n;
            break;
        }
        case OPT_HELP: usage_verify(stdout); return -1;
        case OPT_VERSION: print_version(); return -1;
        default: usage_verify(stderr); return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ulpgate verify: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (!a->sweep || !a->budgets) {
        fprintf(stderr, "ulpgate verify: --sweep and --budgets are required\n");
        usage_verify(stderr);
        return EXIT_USAGE;
    }
    if (a->sample_seed_given && a->run.sample_fraction == 0) {
        fprintf(stderr, "ulpgate verify: --sample-seed without --sample-slices: nothing is sampled\n");
        return EXIT_USAGE;
    }
    if (a->run.sample_fraction > 0 && (a->baseline || a->write_baseline || a->shard_count)) {
        fprintf(stderr, "ulpgate verify: --sample-slices measures part of each case: its figures cannot be compared "
                        "with a baseline, written as one or sharded (%s)\n",
                a->baseline ? "--baseline" : a->write_baseline ? "--write-baseline" : "--shard");
        return EXIT_USAGE;
    }
    return EXIT_PASS;
}

typedef struct {
    const char *budgets, *baseline, *reports, *write_baseline;
    bool enforce_stats;     /* --enforce-stat-budgets */
} gate_args;

/* A verb's own part of a gated run, between the loading of the budgets and
 * the gate: it fills the sweep and the run's result. */
typedef ug_status run_step(void *ctx, const ug_budgets *budgets, ug_sweep *sweep, ug_run_result *run);

/* The tail every gating verb shares (verify, merge, report, score). Before
 * anything runs: the budgets and the baseline are loaded and the reports
 * directory is checked and locked; then the verb's run; the gate; the report
 * set and the baseline are written; the summary and the verdict are printed
 * last, so that a run that exits 2 or 3 never shows a verdict. */
static int gate_run(const gate_args *g, run_step *run_cases, void *ctx)
{
    ug_budgets budgets = {0};
    ug_baseline baseline = {0};
    ug_report_dir reports = {0};
    ug_sweep sweep = {0};
    ug_run_result run = {0};
    ug_verdict verdict = {0};
    ug_status st = input_path("--budgets", g->budgets);
    if (ug_is_ok(&st) && g->baseline) st = input_path("--baseline", g->baseline);
    if (ug_is_ok(&st)) st = ug_budgets_load(g->budgets, &budgets);
    budgets.enforce_stats = g->enforce_stats;
    if (ug_is_ok(&st) && g->baseline) st = ug_baseline_load(g->baseline, &baseline);
    if (ug_is_ok(&st) && g->write_baseline) st = output_file_dir("--write-baseline", g->write_baseline);
    if (ug_is_ok(&st) && g->reports) st = ug_report_open(g->reports, &reports);
    if (ug_is_ok(&st)) st = run_cases(ctx, &budgets, &sweep, &run);
    if (ug_is_ok(&st)) st = ug_gate_evaluate(&run, &budgets, g->baseline ? &baseline : NULL, &verdict);
    if (ug_is_ok(&st) && g->reports) st = ug_report_write(&reports, &run, &budgets, &verdict);
    bool write_baseline = ug_is_ok(&st) && g->write_baseline && verdict.pass;
    if (write_baseline) st = ug_baseline_write(g->write_baseline, &run);
    int rc;
    if (ug_is_ok(&st)) {
        ug_report_print_summary(stdout, &run, &budgets, &verdict);
        if (write_baseline) printf("ulpgate: wrote baseline %s\n", g->write_baseline);
        else if (g->write_baseline) printf("ulpgate: baseline %s not written: the run fails the gate\n", g->write_baseline);
        rc = verdict.pass ? EXIT_PASS : EXIT_GATE;
    } else {
        rc = fail_with(&st);
    }
    ug_report_dir_close(&reports);
    ug_verdict_free(&verdict);
    ug_run_result_free(&run);
    ug_sweep_free(&sweep);
    ug_baseline_free(&baseline);
    ug_budgets_free(&budgets);
    mpfr_free_cache();
    return rc;
}

/* Loads the library and keeps the sweep's cases of its families (before
 * --filter and --shard, which then apply to what it runs). */
static ug_status open_kernel_lib(const char *path, double case_timeout, ug_sweep *sweep, ug_plugin **plugin,
                                 ug_run_options *run, uint64_t *content_hash)
{
    unsigned char *bytes;
    size_t size;
    /* The baseline records which build of the library it measured. */
    UG_TRY(ug_input_read("kernel library", path, UG_INPUT_MAX_LIBRARY, &bytes, &size));
    *content_hash = ug_fnv1a(UG_FNV1A_OFFSET, bytes, size);
    free(bytes);
    UG_TRY(ug_plugin_open(path, case_timeout, plugin));
    char skipped[1024];
    UG_TRY(ug_plugin_restrict_sweep(*plugin, sweep, skipped, sizeof skipped));
    run->source = ug_plugin_source(*plugin);
    printf("ulpgate: kernels from %s (plugin); families skipped, not in the library: %s\n",
           ug_plugin_basename(*plugin), skipped[0] ? skipped : "none");
    return ug_ok();
}

/* --filter matched nothing: with a library, say whether the sweep has such
 * cases that the library cannot run. */
static ug_status filter_matched_nothing(const verify_args *a)
{
    if (!a->kernel_lib) return ug_fail(UG_EINVAL, "--filter '%s' matches no case of %s", a->filter, a->sweep);
    ug_sweep all = {0};
    ug_status st = ug_sweep_load(a->sweep, &all);
    if (ug_is_ok(&st)) st = ug_sweep_filter(&all, a->filter);
    char families[256] = "";
    for (size_t i = 0, len = 0; ug_is_ok(&st) && i < all.n_cases && len < sizeof families; i++)
        if (i == 0 || all.cases[i].family != all.cases[i - 1].family)
            len += (size_t)snprintf(families + len, sizeof families - len, "%s%s", len ? ", " : "",
                                    all.cases[i].family->name);
    ug_sweep_free(&all);
    if (families[0])
        return ug_fail(UG_EINVAL, "--filter '%s': the library %s has no kernel of family %s, which the matching "
                       "cases of %s belong to", a->filter, a->kernel_lib, families, a->sweep);
    return ug_fail(UG_EINVAL, "--filter '%s' matches no case of %s", a->filter, a->sweep);
}

typedef struct {
    verify_args *a;
    ug_plugin *plugin;
    uint64_t lib_hash;
    ug_isolate *isolated;       /* --isolate: the built-in kernels' workers */
    ug_f32_model model;
} verify_ctx;

static ug_status verify_run(void *ctx, const ug_budgets *budgets, ug_sweep *sweep, ug_run_result *run)
{
    verify_ctx *v = ctx;
    verify_args *a = v->a;
    UG_TRY(load_profile(a->profile, &v->model));
    a->run.model = &v->model;
    UG_TRY(ug_sweep_load(a->sweep, sweep));
    if (a->kernel_lib)
        UG_TRY(open_kernel_lib(a->kernel_lib, a->case_timeout, sweep, &v->plugin, &a->run, &v->lib_hash));
    if (a->isolate && !a->kernel_lib) {
        UG_TRY(ug_isolate_open_builtin(a->case_timeout, &v->isolated));
        a->run.isolated = ug_isolate_source(v->isolated);
    }
    if (a->filter) {
        UG_TRY(ug_sweep_filter(sweep, a->filter));
        if (sweep->n_cases == 0) return filter_matched_nothing(a);
    }
    if (a->shard_count) UG_TRY(ug_sweep_shard(sweep, a->shard_index, a->shard_count));
    UG_TRY(ug_run_check_sizes(sweep, a->run.max_case_bytes));
    a->run.moderate_cond = budgets->moderate_cond;
    UG_TRY(ug_run_sweep(sweep, &a->run, run));
    if (v->plugin) {
        snprintf(run->source_detail, sizeof run->source_detail, "%s", ug_plugin_basename(v->plugin));
        run->has_source_hash = true;
        run->source_hash = v->lib_hash;
    }
    return ug_ok();
}

static int cmd_verify(int argc, char **argv)
{
    verify_args a;
    int rc = parse_verify(argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_PASS : rc;
    ug_status st = input_path("--sweep", a.sweep);
    if (ug_is_ok(&st) && a.kernel_lib) st = input_path("--kernel-lib", a.kernel_lib);
    if (!ug_is_ok(&st)) return fail_with(&st);
    verify_ctx v = {.a = &a};
    gate_args g = {a.budgets, a.baseline, a.reports, a.write_baseline, a.enforce_stats};
    rc = gate_run(&g, verify_run, &v);
    ug_plugin_close(v.plugin);
    ug_isolate_close(v.isolated);
    return rc;
}

typedef struct {
    const char *const *shards;
    size_t n;
} merge_ctx;

static ug_status merge_run(void *ctx, __attribute__((unused)) const ug_budgets *budgets, ug_sweep *sweep,
                           ug_run_result *run)
{
    const merge_ctx *m = ctx;
    for (size_t i = 0; i < m->n; i++) UG_TRY(input_path("report file", m->shards[i]));
    return ug_merge_shards(m->shards, m->n, sweep, run);
}

static const char merge_usage[] =
    "usage: ulpgate merge --budgets PATH [--baseline FILE] [--reports DIR] [--write-baseline FILE]\n"
    "                     [--enforce-stat-budgets] SHARD_REPORT.json...\n"
    "Combines the report.json files of `verify --shard I/N` runs (all N of them) into the\n"
    "result of the unsharded run, then gates and reports it exactly as verify does.\n"
    "  -h, --help, --version  this text; the version\n"
    "exit: 0 pass, 1 gate failed, 2 usage or input error (before anything is written), 3 internal error\n";

static const char report_usage[] =
    "usage: ulpgate report --budgets PATH [--baseline FILE] [--reports DIR] [--write-baseline FILE]\n"
    "                      [--enforce-stat-budgets] REPORT.json\n"
    "Re-gates one unsharded run's report.json (e.g. against other budgets or another baseline)\n"
    "and re-renders its reports.\n"
    "  -h, --help, --version  this text; the version\n"
    "exit: 0 pass, 1 gate failed, 2 usage or input error (before anything is written), 3 internal error\n";

/* merge SHARD... and report RUN.json: the same rebuild of a run from report.json files. */
static int cmd_merge(const char *verb, int argc, char **argv)
{
    static const struct option opts[] = {
        {"budgets", required_argument, 0, 'b'}, {"baseline", required_argument, 0, 'B'},
        {"reports", required_argument, 0, 'r'}, {"write-baseline", required_argument, 0, 'w'},
        {"enforce-stat-budgets", no_argument, 0, 'E'}, COMMON_OPTIONS, {0, 0, 0, 0},
    };
    bool is_report = strcmp(verb, "report") == 0;
    const char *text = is_report ? report_usage : merge_usage;
    gate_args g = {0};
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (ch) {
        case 'b': g.budgets = optarg; break;
        case 'B': g.baseline = optarg; break;
        case 'r': g.reports = optarg; break;
        case 'w': g.write_baseline = optarg; break;
        case 'E': g.enforce_stats = true; break;
        case OPT_VERSION: return print_version();
        default:
            fputs(text, ch == OPT_HELP ? stdout : stderr);
            return ch == OPT_HELP ? EXIT_PASS : EXIT_USAGE;
        }
    }
    size_t n = (size_t)(argc - optind);
    if (!g.budgets || n == 0 || (is_report && n != 1)) {
        fprintf(stderr, "ulpgate %s: --budgets and %s are required\n%s", verb,
                is_report ? "exactly one report.json" : "at least one shard report", text);
        return EXIT_USAGE;
    }
    merge_ctx m = {(const char *const *)argv + optind, n};
    return gate_run(&g, merge_run, &m);
}

static const char compare_usage[] =
    "usage: ulpgate compare OLD NEW [--budgets PATH]\n"
    "Compares two results (report.json of two runs, or baseline.json files), e.g. before\n"
    "and after a kernel change: prints what got worse, what got better and what changed\n"
    "bits. Worse beyond the budgets' regression_tolerance (zero without --budgets) fails.\n"
    "  -h, --help, --version  this text; the version\n"
    "exit: 0 no regression, 1 regression, 2 usage or input error, 3 internal error\n";

static int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {{"budgets", required_argument, 0, 'b'}, COMMON_OPTIONS, {0, 0, 0, 0}};
    const char *budgets_path = NULL;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (ch == 'b') budgets_path = optarg;
        else if (ch == OPT_VERSION) return print_version();
        else {
            fputs(compare_usage, ch == OPT_HELP ? stdout : stderr);
            return ch == OPT_HELP ? EXIT_PASS : EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "ulpgate compare: expected two result files (OLD NEW), got %d\n", argc - optind);
        return EXIT_USAGE;
    }
    ug_budgets budgets = {0};
    ug_baseline old = {0}, new = {0};
    ug_verdict verdict = {0};
    ug_status st = budgets_path ? input_path("--budgets", budgets_path) : ug_ok();
    if (ug_is_ok(&st)) st = input_path("OLD", argv[optind]);
    if (ug_is_ok(&st)) st = input_path("NEW", argv[optind + 1]);
    if (ug_is_ok(&st) && budgets_path) st = ug_budgets_load(budgets_path, &budgets);
    if (ug_is_ok(&st)) st = ug_figures_load(argv[optind], &old);
    if (ug_is_ok(&st)) st = ug_figures_load(argv[optind + 1], &new);
    if (ug_is_ok(&st)) st = ug_compare(&old, &new, &budgets, &verdict);
    int rc = ug_is_ok(&st) ? (verdict.pass ? EXIT_PASS : EXIT_GATE) : fail_with(&st);
    static const char *const kind[] = {"WORSE", "worse (within tolerance)", "BETTER", "CHANGED"};
    for (size_t i = 0; ug_is_ok(&st) && i < verdict.n; i++)
        printf("%s: %s\n", kind[verdict.items[i].kind], verdict.items[i].text);
    if (ug_is_ok(&st)) printf("ulpgate compare: %s\n", verdict.pass ? "no regression" : "REGRESSION");
    ug_verdict_free(&verdict);
    ug_baseline_free(&old);
    ug_baseline_free(&new);
    ug_budgets_free(&budgets);
    return rc;
}

/* Options of a verb that takes none but -h, --help and --version. */
static int parse_no_options(const char *usage_text, int argc, char **argv)
{
    static const struct option opts[] = {COMMON_OPTIONS, {0, 0, 0, 0}};
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (ch == OPT_VERSION) return print_version(), -1;
        fputs(usage_text, ch == OPT_HELP ? stdout : stderr);
        return ch == OPT_HELP ? -1 : EXIT_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "ulpgate %s: unexpected argument '%s'\n%s", argv[0], argv[optind], usage_text);
        return EXIT_USAGE;
    }
    return EXIT_PASS;
}

static int cmd_list(int argc, char **argv)
{
    int rc = parse_no_options("usage: ulpgate list\n"
                              "The kernel families: parameters, buffers (-> outputs), regimes, mutants; the ISA paths.\n",
                              argc, argv);
    if (rc) return rc < 0 ? EXIT_PASS : rc;
    for (size_t i = 0; i < ug_family_count(); i++) {
        const ug_family *f = ug_family_at(i);
        printf("%s (%s)\n  params:", f->name, f->spec_section);
        for (size_t p = 0; p < f->n_params; p++) printf(" %s", f->param_names[p]);
        printf("\n  buffers:");
        for (size_t b = 0; b < f->n_buffers; b++) {
            char layout[128];
            ug_family_buffer_layout(f, b, layout, sizeof layout);
            printf(" %s%s %s%s%s", f->buffers[b].is_output ? "->" : "", f->buffers[b].name,
                   ug_dtype_name(f->buffers[b].dtype), layout, f->buffers[b].optional ? " optional" : "");
        }
        for (size_t s = 0; s < f->n_stages; s++)
            printf("%s%s", s ? ", " : "\n  stages (chained): ", f->stages[s].family);
        printf("\n  regimes:");
        for (size_t r = 0; r < f->n_regimes; r++) printf(" %s", f->regimes[r]);
        printf("\n  mutants:");
        for (size_t m = 0; m < f->n_mutants; m++) printf(" %s", f->mutants[m].name);
        printf("\n");
    }
    printf("isa paths:");
    for (int isa = 0; isa < UG_ISA_COUNT; isa++)
        printf(" %s%s", ug_isa_name((ug_isa)isa), ug_isa_supported((ug_isa)isa) ? "" : "(unsupported)");
    printf(" (default %s)\n", ug_isa_name(ug_isa_best()));
    return EXIT_PASS;
}

static const char export_usage[] =
    "usage: ulpgate export --sweep PATH --out DIR [--filter TEXT] [--max-case-mib N] [--quiet]\n"
    "                      [--profile NAME|PATH]\n"
    "Writes, for every accepted case of the sweep, DIR/NNNN-FAMILY.safetensors with the case's\n"
    "inputs and, per output and reference mode, OUT.MODE.ref (the correctly rounded reference in\n"
    "the output's dtype), OUT.MODE.ref_f64 and OUT.MODE.bound (f64, under --profile's arithmetic,\n"
    "default cpu); then DIR/manifest.json, which names the profile.\n"
    "Rejected cases are not exported (a file cannot ask a kernel to refuse a shape).\n"
    "A candidate writes CDIR/NNNN-FAMILY.safetensors with each output under its own name;\n"
    "`ulpgate score` gates it (docs/interop.md). Progress on stderr when it is a terminal\n"
    "and CI is not set (--quiet: never).\n"
    "  -h, --help, --version  this text; the version\n"
    "exit: 0 written, 2 usage or input error (before anything is written), 3 internal error\n";

static int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"sweep", required_argument, 0, 's'},  {"out", required_argument, 0, 'o'},
        {"filter", required_argument, 0, 'f'}, {"max-case-mib", required_argument, 0, 'm'},
        {"quiet", no_argument, 0, 'q'},        {"profile", required_argument, 0, 'P'},
        COMMON_OPTIONS,                        {0, 0, 0, 0},
    };
    const char *sweep_path = NULL, *out = NULL, *filter = NULL, *profile = NULL;
    size_t max_bytes = UG_MAX_CASE_BYTES_DEFAULT;
    bool progress = isatty(STDERR_FILENO) && !getenv("CI");
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (ch == 's') sweep_path = optarg;
        else if (ch == 'o') out = optarg;
        else if (ch == 'f') filter = optarg;
        else if (ch == 'q') progress = false;
        else if (ch == 'P') profile = optarg;
        else if (ch == OPT_VERSION) return print_version();
        else if (ch != 'm' || !parse_max_case_mib(optarg, &max_bytes)) {
            fputs(export_usage, ch == OPT_HELP ? stdout : stderr);
            return ch == OPT_HELP ? EXIT_PASS : EXIT_USAGE;
        }
    }
    if (!sweep_path || !out || optind < argc) {
        fprintf(stderr, "ulpgate export: --sweep and --out are required, and nothing else\n%s", export_usage);
        return EXIT_USAGE;
    }
    ug_sweep sweep = {0};
    size_t exported = 0, skipped = 0;
    ug_f32_model model;
    ug_status st = input_path("--sweep", sweep_path);
    if (ug_is_ok(&st)) st = ug_sweep_load(sweep_path, &sweep);
    if (ug_is_ok(&st)) st = load_profile(profile, &model);
    if (ug_is_ok(&st) && filter) st = ug_sweep_filter(&sweep, filter);
    if (ug_is_ok(&st) && filter && sweep.n_cases == 0)
        st = ug_fail(UG_EINVAL, "--filter '%s' matches no case of %s", filter, sweep_path);
    if (ug_is_ok(&st)) st = ug_run_check_sizes(&sweep, max_bytes);
    if (ug_is_ok(&st)) {
        st = ug_make_dirs(out);
        if (!ug_is_ok(&st)) st = ug_fail(UG_EINVAL, "--out %s: %s", out, st.msg);
    }
    if (ug_is_ok(&st)) st = ug_export(&sweep, &model, out, max_bytes, progress, &exported, &skipped);
    if (ug_is_ok(&st))
        printf("ulpgate export: %zu cases to %s/ (+ %s); %zu rejected cases not exported\n", exported, out,
               UG_FIXTURES_MANIFEST, skipped);
    int rc = ug_is_ok(&st) ? EXIT_PASS : fail_with(&st);
    ug_sweep_free(&sweep);
    mpfr_free_cache();
    return rc;
}

static const char score_usage[] =
    "usage: ulpgate score --fixtures DIR --candidate CDIR --budgets PATH [--baseline FILE]\n"
    "                     [--write-baseline FILE] [--enforce-stat-budgets] [--filter TEXT]\n"
    "                     [--reports DIR] [--jobs N] [--max-case-mib N] [--quiet] [--profile NAME|PATH]\n"
    "Gates a kernel that ran outside ulpgate: for every case of DIR/manifest.json (written by\n"
    "`ulpgate export`), reads the outputs from CDIR/<the case's file> (each output under its\n"
    "buffer name, the manifest's dtype and shape) and measures, gates and reports them exactly as\n"
    "verify does its own kernels. Missing or malformed candidate files, and fixtures exported by\n"
    "a version of ulpgate that draws other inputs, stop it before anything is written.\n"
    "  --filter TEXT          only the cases whose family/label contains TEXT: CDIR needs only\n"
    "                         their files (a subset the candidate ran); the reports name the filter\n"
    "  --write-baseline FILE  record this candidate's figures and bits (source: candidate, named\n"
    "                         after CDIR's last component) as its own baseline\n"
    "  --baseline FILE        gate against the candidate's own earlier baseline\n"
    "  --enforce-stat-budgets the budgets' ULP statistics gate the candidate, not only advise\n"
    "--profile names the candidate's target arithmetic (fixtures/profiles/NAME.json; default cpu).\n"
    "  -h, --help, --version  this text; the version\n"
    "exit: 0 pass, 1 gate failed, 2 usage or input error, 3 internal error\n";

typedef struct {
    const char *fixtures, *candidate, *filter, *profile;
    ug_f32_model model;
    ug_run_options run;
    ug_candidate *cand;
    ug_kernel_source source;
} score_ctx;

/* The candidate's label in reports and baselines: its directory's last
 * component ("cand" for cand/, ./cand or /ci/work/cand), so that a baseline
 * does not depend on where CI unpacks the candidate. */
static void candidate_label(const char *dir, char *out, size_t size)
{
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(out, size, "%.*s", (int)(end - start), dir + start);
}

static ug_status score_run(void *ctx, const ug_budgets *budgets, ug_sweep *sweep, ug_run_result *run)
{
    score_ctx *sc = ctx;
    UG_TRY(load_profile(sc->profile, &sc->model));
    sc->run.model = &sc->model;
    UG_TRY(ug_candidate_open(sc->fixtures, sc->candidate, sc->filter, sc->run.max_case_bytes, sweep, &sc->cand,
                             &sc->source));
    UG_TRY(ug_run_check_sizes(sweep, sc->run.max_case_bytes));
    sc->run.moderate_cond = budgets->moderate_cond;
    sc->run.source = &sc->source;
    UG_TRY(ug_run_sweep(sweep, &sc->run, run));
    candidate_label(sc->candidate, run->source_detail, sizeof run->source_detail);
    return ug_ok();
}

static int cmd_score(int argc, char **argv)
{
    static const struct option opts[] = {
        {"fixtures", required_argument, 0, 'x'}, {"candidate", required_argument, 0, 'c'},
        {"budgets", required_argument, 0, 'b'},  {"baseline", required_argument, 0, 'B'},
        {"reports", required_argument, 0, 'r'},  {"jobs", required_argument, 0, 'j'},
        {"max-case-mib", required_argument, 0, 'm'}, {"quiet", no_argument, 0, 'q'},
        {"write-baseline", required_argument, 0, 'w'}, {"enforce-stat-budgets", no_argument, 0, 'E'},
        {"profile", required_argument, 0, 'P'},  {"filter", required_argument, 0, 'f'},
        COMMON_OPTIONS,                          {0, 0, 0, 0},
    };
    score_ctx sc = {.run = {.max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT, .jobs = 1,
                            .progress = isatty(STDERR_FILENO) && !getenv("CI")}};
    gate_args g = {0};
    bool ok = true;
    optind = 1;
    for (int ch; ok && (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        switch (ch) {
        case 'x': sc.fixtures = optarg; break;
        case 'c': sc.candidate = optarg; break;
        case 'b': g.budgets = optarg; break;
        case 'B': g.baseline = optarg; break;
        case 'r': g.reports = optarg; break;
        case 'w': g.write_baseline = optarg; break;
        case 'E': g.enforce_stats = true; break;
        case 'q': sc.run.progress = false; break;
        case 'P': sc.profile = optarg; break;
        case 'f': sc.filter = optarg; break;
        case 'j': ok = parse_jobs(optarg, &sc.run.jobs); break;
        case 'm': ok = parse_max_case_mib(optarg, &sc.run.max_case_bytes); break;
        case OPT_VERSION: return print_version();
        default:
            fputs(score_usage, ch == OPT_HELP ? stdout : stderr);
            return ch == OPT_HELP ? EXIT_PASS : EXIT_USAGE;
        }
    }
    if (!ok) return EXIT_USAGE;
    if (!sc.fixtures || !sc.candidate || !g.budgets || optind < argc) {
        fprintf(stderr, "ulpgate score: --fixtures, --candidate and --budgets are required, and nothing else\n%s",
                score_usage);
        return EXIT_USAGE;
    }
    for (int i = 0; i < UG_ISA_COUNT; i++) sc.run.isa_enabled[i] = true;
    ug_status st = input_path("--fixtures", sc.fixtures);
    if (ug_is_ok(&st)) st = input_path("--candidate", sc.candidate);
    if (!ug_is_ok(&st)) return fail_with(&st);
    int rc = gate_run(&g, score_run, &sc);
    ug_candidate_free(sc.cand);
    return rc;
}

static const char reference_usage[] =
    "usage: ulpgate reference --family F --inputs IN.safetensors --out DIR [--param NAME=VALUE ...]\n"
    "                         [--profile NAME|PATH] [--max-case-mib N]\n"
    "Computes the reference (both modes) and the per-element bounds of family F on your own\n"
    "inputs and writes them to DIR as a fixture directory in export's layout, for `ulpgate score\n"
    "--fixtures DIR` (docs/interop.md \"Your own inputs\").\n"
    "IN holds F's input tensors under their names, dtypes and shapes (`ulpgate list`) and nothing\n"
    "else; F's parameters come from IN's __metadata__ (string values, {\"B\": \"1\", ...}) and --param,\n"
    "which wins. Refused with exit 2, naming the tensor, index and value, and writing nothing: a\n"
    "missing or unknown parameter, a missing tensor or one of another dtype or shape, a shape the\n"
    "kernel's validation rejects, inputs outside the family's data contract (a gate or beta not\n"
    "finite, A not lower-triangular, L not strictly lower-triangular, htmp's S < 0 or M = +inf/NaN).\n"
    "  --out DIR            must be absent or an empty directory; it appears complete or not at all\n"
    "  --param NAME=VALUE   one of F's parameters (repeatable)\n"
    "  --profile NAME|PATH  the target arithmetic of the bounds (fixtures/profiles/NAME.json; default cpu)\n"
    "  -h, --help, --version  this text; the version\n"
    "exit: 0 written, 2 usage or input error, 3 internal error\n";

static int cmd_reference(int argc, char **argv)
{
    static const struct option opts[] = {
        {"family", required_argument, 0, 'F'}, {"inputs", required_argument, 0, 'i'},
        {"out", required_argument, 0, 'o'},    {"param", required_argument, 0, 'p'},
        {"profile", required_argument, 0, 'P'}, {"max-case-mib", required_argument, 0, 'm'},
        COMMON_OPTIONS,                        {0, 0, 0, 0},
    };
    const char **params = calloc((size_t)argc + 1, sizeof *params);
    if (!params) return EXIT_INTERNAL;
    ug_user_request rq = {.params = params, .max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT};
    const char *profile = NULL;
    int rc = -1;
    optind = 1;
    for (int ch; rc < 0 && (ch = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        if (ch == 'F') rq.family = optarg;
        else if (ch == 'i') rq.inputs = optarg;
        else if (ch == 'o') rq.out = optarg;
        else if (ch == 'p') params[rq.n_params++] = optarg;
        else if (ch == 'P') profile = optarg;
        else if (ch == OPT_VERSION) rc = print_version();
        else if (ch != 'm' || !parse_max_case_mib(optarg, &rq.max_case_bytes)) {
            fputs(reference_usage, ch == OPT_HELP ? stdout : stderr);
            rc = ch == OPT_HELP ? EXIT_PASS : EXIT_USAGE;
        }
    }
    if (rc < 0 && (!rq.family || !rq.inputs || !rq.out || optind < argc)) {
        fprintf(stderr, "ulpgate reference: --family, --inputs and --out are required, and nothing else\n%s",
                reference_usage);
        rc = EXIT_USAGE;
    }
    if (rc < 0) {
        ug_f32_model model;
        ug_status st = input_path("--inputs", rq.inputs);
        if (ug_is_ok(&st)) st = load_profile(profile, &model);
        if (ug_is_ok(&st)) st = ug_user_reference(&rq, &model);
        if (ug_is_ok(&st))
            printf("ulpgate reference: %s on %s -> %s/ (score it with --fixtures %s)\n", rq.family, rq.inputs, rq.out,
                   rq.out);
        rc = ug_is_ok(&st) ? EXIT_PASS : fail_with(&st);
        mpfr_free_cache();
    }
    free(params);
    return rc;
}

/* One line per build: FAMILY ID NAME PATHS<tab>WHAT, PATHS "vector" for a
 * bug planted in the vector paths only, else "all" (ci/mutants.sh reads them). */
static int cmd_builds(bool variants, int argc, char **argv)
{
    int rc = parse_no_options(variants ? "usage: ulpgate variants\nThe legitimate rewrites the gate must accept, "
                                         "one per line: FAMILY ID NAME PATHS<tab>WHAT.\n"
                                       : "usage: ulpgate mutants\nThe deliberately broken kernel builds, one per "
                                         "line: FAMILY ID NAME PATHS<tab>WHAT.\n",
                              argc, argv);
    if (rc) return rc < 0 ? EXIT_PASS : rc;
    for (size_t i = 0; i < ug_family_count(); i++) {
        const ug_family *f = ug_family_at(i);
        size_t n = variants ? f->n_variants : f->n_mutants;
        const ug_mutant_desc *list = variants ? f->variants : f->mutants;
        for (size_t m = 0; m < n; m++) printf("%s %d %s %s\t%s\n", f->name, list[m].id, list[m].name, list[m].vector_only ? "vector" : "all",
                   list[m].what);
    }
    return EXIT_PASS;
}

int main(int argc, char **argv)
{
    /* A file-size limit (ulimit -f) then fails the write with EFBIG, which
     * the report set names, instead of killing the run without a word. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *verb = argv[1];
    exe_path = argv[0];
    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0 || strcmp(verb, "help") == 0) {
        usage(stdout);
        return EXIT_PASS;
    }
    if (strcmp(verb, "--version") == 0) return print_version();
    if (strcmp(verb, "verify") == 0) return cmd_verify(argc - 1, argv + 1);
    if (strcmp(verb, "compare") == 0) return cmd_compare(argc - 1, argv + 1);
    if (strcmp(verb, "merge") == 0 || strcmp(verb, "report") == 0) return cmd_merge(verb, argc - 1, argv + 1);
    if (strcmp(verb, "export") == 0) return cmd_export(argc - 1, argv + 1);
    if (strcmp(verb, "score") == 0) return cmd_score(argc - 1, argv + 1);
    if (strcmp(verb, "reference") == 0) return cmd_reference(argc - 1, argv + 1);
    if (strcmp(verb, "list") == 0) return cmd_list(argc - 1, argv + 1);
    if (strcmp(verb, "mutants") == 0) return cmd_builds(false, argc - 1, argv + 1);
    if (strcmp(verb, "variants") == 0) return cmd_builds(true, argc - 1, argv + 1);
    fprintf(stderr, "ulpgate: unknown verb '%s'\n", verb);
    usage(stderr);
    return EXIT_USAGE;
}
