/* ulpgate command line: verbs over the registered kernel families.
 *
 * Exit codes: 0 pass; 1 the gate failed (a kernel out of budget, a case
 * failed, a regression); 2 bad usage or bad input file; 3 an internal error
 * (out of memory, I/O, the reference could not compute). */
#include <getopt.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernels/parallel.h"
#include "gate.h"
#include "interop.h"
#include "merge.h"
#include "plugin.h"
#include "report.h"
#include "runner.h"

enum { EXIT_PASS = 0, EXIT_GATE = 1, EXIT_USAGE = 2, EXIT_INTERNAL = 3 };

static int fail_with(const ug_status *st)
{
    fprintf(stderr, "ulpgate: %s\n", st->msg);
    return st->code == UG_EPARSE || st->code == UG_EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
}

static void usage_verify(FILE *out)
{
    fputs("usage: ulpgate verify --sweep FILE --budgets FILE [--baseline FILE] [--reports DIR]\n"
          "                      [--write-baseline FILE] [--filter TEXT] [--isa LIST] [--max-case-mib N] [--jobs N] [--shard I/N] [--quiet]\n"
          "                      [--kernel-threads N] [--kernel-lib PATH]\n"
          "Runs every case of the sweep on every ISA path of this CPU, measures each output\n"
          "element against the MPFR reference (exact and staged modes), gates the figures\n"
          "against the budgets and the baseline, prints a summary and writes the reports.\n"
          "  --sweep PATH           shape grid: a file or a directory of files (fixtures/sweeps/default/)\n"
          "  --budgets PATH         error budgets: a file or a directory of files (fixtures/budgets/)\n"
          "  --baseline FILE        compare against this baseline (fixtures/baseline.json)\n"
          "  --reports DIR          write report.md, report.json, cases.csv there\n"
          "  --write-baseline FILE  accept this run's figures as the new baseline\n"
          "  --filter TEXT          only cases whose family/label contains TEXT\n"
          "  --isa LIST             comma-separated paths to run (portable,avx2,avx512; default all supported)\n"
          "  --max-case-mib N       refuse cases whose buffers exceed N MiB (default 1024)\n"
          "  --jobs N               run cases on N threads (default 1); results do not depend on N\n"
          "  --kernel-threads N     split each kernel call over N threads (default 1; 1 .. 64); nor on N\n"
          "  --shard I/N            run only the cases whose index modulo N is I (0 <= I < N);\n"
          "                         `ulpgate merge` combines the shards' report.json files\n"
          "  --quiet                no progress line even on a terminal\n"
          "  --kernel-lib PATH      verify the kernels of this shared library (include/ulpgate/kernel_abi.h)\n"
          "                         instead of the built-in ones, on the sweep's families it provides\n"
          "exit: 0 pass, 1 gate failed, 2 usage or input error, 3 internal error\n",
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
          "  list     the kernel families: parameters, buffers, regimes, mutants\n"
          "  mutants  the deliberately broken kernel builds, one per line: FAMILY ID NAME\n"
          "  variants the numerically legitimate rewrites the gate must accept: FAMILY ID NAME\n",
          out);
}

static bool parse_isa_list(char *list, bool enabled[UG_ISA_COUNT])
{
    for (int i = 0; i < UG_ISA_COUNT; i++) enabled[i] = false;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        ug_isa isa;
        if (!ug_isa_parse(tok, &isa)) {
            fprintf(stderr, "ulpgate: --isa: unknown path '%s' (expected portable, avx2, avx512)\n", tok);
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
    const char *sweep, *budgets, *baseline, *reports, *write_baseline, *filter, *kernel_lib;
    size_t shard_index, shard_count;
    ug_run_options run;
} verify_args;

static int parse_verify(int argc, char **argv, verify_args *a)
{
    static const struct option opts[] = {
        {"sweep", required_argument, 0, 's'},    {"budgets", required_argument, 0, 'b'},
        {"baseline", required_argument, 0, 'B'}, {"reports", required_argument, 0, 'r'},
        {"write-baseline", required_argument, 0, 'w'}, {"filter", required_argument, 0, 'f'},
        {"isa", required_argument, 0, 'i'},      {"max-case-mib", required_argument, 0, 'm'},
        {"quiet", no_argument, 0, 'q'},          {"help", no_argument, 0, 'h'},
        {"jobs", required_argument, 0, 'j'},    {"shard", required_argument, 0, 'S'},
        {"kernel-lib", required_argument, 0, 'k'}, {"kernel-threads", required_argument, 0, 'K'},
        {0, 0, 0, 0},
    };
    memset(a, 0, sizeof *a);
    for (int i = 0; i < UG_ISA_COUNT; i++) a->run.isa_enabled[i] = true;
    a->run.max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT;
    a->run.jobs = 1;
    a->run.progress = isatty(STDERR_FILENO) && !getenv("CI");
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 's': a->sweep = optarg; break;
        case 'b': a->budgets = optarg; break;
        case 'B': a->baseline = optarg; break;
        case 'r': a->reports = optarg; break;
        case 'w': a->write_baseline = optarg; break;
        case 'f': a->filter = optarg; break;
        case 'k': a->kernel_lib = optarg; break;
        case 'q': a->run.progress = false; break;
        case 'i':
            if (!parse_isa_list(optarg, a->run.isa_enabled)) return EXIT_USAGE;
            break;
        case 'm':
            if (!parse_max_case_mib(optarg, &a->run.max_case_bytes)) return EXIT_USAGE;
            break;
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
        case 'h': usage_verify(stdout); return -1;
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
    return EXIT_PASS;
}

typedef struct {
    const char *budgets, *baseline, *reports, *write_baseline;
} gate_args;

/* The gate and the reports over a run's result (verify and merge). */
static ug_status gate_and_report(const gate_args *g, const ug_run_result *run, const ug_budgets *budgets,
                                 ug_verdict *verdict)
{
    ug_baseline baseline = {0};
    ug_status st = g->baseline ? ug_baseline_load(g->baseline, &baseline) : ug_ok();
    if (ug_is_ok(&st)) st = ug_gate_evaluate(run, budgets, g->baseline ? &baseline : NULL, verdict);
    ug_baseline_free(&baseline);
    UG_TRY(st);
    ug_report_print_summary(stdout, run, budgets, verdict);
    if (g->reports) UG_TRY(ug_report_write_all(g->reports, run, budgets, verdict));
    if (!g->write_baseline) return ug_ok();
    if (!verdict->pass)
        return ug_fail(UG_EINVAL, "refusing to write baseline %s from a run that fails the gate", g->write_baseline);
    UG_TRY(ug_baseline_write(g->write_baseline, run));
    printf("ulpgate: wrote baseline %s\n", g->write_baseline);
    return ug_ok();
}

/* Loads the library and keeps the sweep's cases of its families (before
 * --filter and --shard, which then apply to what it runs). */
static ug_status open_kernel_lib(const char *path, ug_sweep *sweep, ug_plugin **plugin, ug_run_options *run)
{
    UG_TRY(ug_plugin_open(path, plugin));
    char skipped[1024];
    UG_TRY(ug_plugin_restrict_sweep(*plugin, sweep, skipped, sizeof skipped));
    run->source = ug_plugin_source(*plugin);
    printf("ulpgate: kernels from %s (plugin); families skipped, not in the library: %s\n",
           ug_plugin_basename(*plugin), skipped[0] ? skipped : "none");
    return ug_ok();
}

static int cmd_verify(int argc, char **argv)
{
    verify_args a;
    int rc = parse_verify(argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_PASS : rc;
    ug_budgets budgets = {0};
    ug_sweep sweep = {0};
    ug_run_result run = {0};
    ug_verdict verdict = {0};
    ug_plugin *plugin = NULL;
    ug_status st = ug_budgets_load(a.budgets, &budgets);
    if (ug_is_ok(&st)) st = ug_sweep_load(a.sweep, &sweep);
    if (ug_is_ok(&st) && a.kernel_lib) st = open_kernel_lib(a.kernel_lib, &sweep, &plugin, &a.run);
    if (ug_is_ok(&st) && a.filter) {
        st = ug_sweep_filter(&sweep, a.filter);
        if (ug_is_ok(&st) && sweep.n_cases == 0)
            st = ug_fail(UG_EINVAL, "--filter '%s' matches no case of %s", a.filter, a.sweep);
    }
    if (ug_is_ok(&st) && a.shard_count) st = ug_sweep_shard(&sweep, a.shard_index, a.shard_count);
    if (ug_is_ok(&st)) {
        a.run.moderate_cond = budgets.moderate_cond;
        st = ug_run_sweep(&sweep, &a.run, &run);
        if (plugin) snprintf(run.source_detail, sizeof run.source_detail, "%s", ug_plugin_basename(plugin));
    }
    gate_args g = {a.budgets, a.baseline, a.reports, a.write_baseline};
    if (ug_is_ok(&st)) st = gate_and_report(&g, &run, &budgets, &verdict);
    rc = ug_is_ok(&st) ? (verdict.pass ? EXIT_PASS : EXIT_GATE) : fail_with(&st);
    ug_verdict_free(&verdict);
    ug_run_result_free(&run);
    ug_sweep_free(&sweep);
    ug_budgets_free(&budgets);
    ug_plugin_close(plugin);
    mpfr_free_cache();
    return rc;
}

static int cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {
        {"budgets", required_argument, 0, 'b'}, {"baseline", required_argument, 0, 'B'},
        {"reports", required_argument, 0, 'r'}, {"write-baseline", required_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
    };
    gate_args g = {0};
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'b': g.budgets = optarg; break;
        case 'B': g.baseline = optarg; break;
        case 'r': g.reports = optarg; break;
        case 'w': g.write_baseline = optarg; break;
        default:
            fputs("usage: ulpgate merge --budgets PATH [--baseline FILE] [--reports DIR] [--write-baseline FILE]\n"
                  "                     SHARD_REPORT.json...\n"
                  "       ulpgate report (same options) REPORT.json\n"
                  "Combines the report.json files of `verify --shard I/N` runs (all N of them) into the\n"
                  "result of the unsharded run, then gates and reports it exactly as verify does; with\n"
                  "one unsharded report.json, re-gates and re-renders that run.\n"
                  "exit: 0 pass, 1 gate failed, 2 usage or input error, 3 internal error\n",
                  ch == 'h' ? stdout : stderr);
            return ch == 'h' ? EXIT_PASS : EXIT_USAGE;
        }
    }
    if (!g.budgets || optind >= argc) {
        fprintf(stderr, "ulpgate merge: --budgets and at least one shard report are required\n");
        return EXIT_USAGE;
    }
    ug_budgets budgets = {0};
    ug_sweep sweep = {0};
    ug_run_result run = {0};
    ug_verdict verdict = {0};
    ug_status st = ug_budgets_load(g.budgets, &budgets);
    if (ug_is_ok(&st)) st = ug_merge_shards((const char *const *)argv + optind, (size_t)(argc - optind), &sweep, &run);
    if (ug_is_ok(&st)) st = gate_and_report(&g, &run, &budgets, &verdict);
    int rc = ug_is_ok(&st) ? (verdict.pass ? EXIT_PASS : EXIT_GATE) : fail_with(&st);
    ug_verdict_free(&verdict);
    ug_run_result_free(&run);
    ug_sweep_free(&sweep);
    ug_budgets_free(&budgets);
    return rc;
}

static int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {{"budgets", required_argument, 0, 'b'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *budgets_path = NULL;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (ch == 'b') budgets_path = optarg;
        else {
            FILE *out = ch == 'h' ? stdout : stderr;
            fputs("usage: ulpgate compare OLD NEW [--budgets PATH]\n"
                  "Compares two results (report.json of two runs, or baseline.json files), e.g. before\n"
                  "and after a kernel change: prints what got worse, what got better and what changed\n"
                  "bits. Worse beyond the budgets' regression_tolerance (zero without --budgets) fails.\n"
                  "exit: 0 no regression, 1 regression, 2 usage or input error\n",
                  out);
            return ch == 'h' ? EXIT_PASS : EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "ulpgate compare: expected two result files (OLD NEW), got %d\n", argc - optind);
        return EXIT_USAGE;
    }
    ug_budgets budgets = {0};
    ug_baseline old = {0}, new = {0};
    ug_verdict verdict = {0};
    ug_status st = budgets_path ? ug_budgets_load(budgets_path, &budgets) : ug_ok();
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

static int cmd_list(void)
{
    for (size_t i = 0; i < ug_family_count(); i++) {
        const ug_family *f = ug_family_at(i);
        printf("%s (%s)\n  params:", f->name, f->spec_section);
        for (size_t p = 0; p < f->n_params; p++) printf(" %s", f->param_names[p]);
        printf("\n  buffers:");
        for (size_t b = 0; b < f->n_buffers; b++)
            printf(" %s%s %s%s", f->buffers[b].is_output ? "->" : "", f->buffers[b].name,
                   ug_dtype_name(f->buffers[b].dtype), f->buffers[b].layout);
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
    "usage: ulpgate export --sweep PATH --out DIR [--filter TEXT] [--max-case-mib N]\n"
    "Writes, for every accepted case of the sweep, DIR/NNNN-FAMILY.safetensors with the case's\n"
    "inputs and, per output and reference mode, OUT.MODE.ref (the correctly rounded reference in\n"
    "the output's dtype), OUT.MODE.ref_f64 and OUT.MODE.bound (f64); then DIR/manifest.json.\n"
    "Rejected cases are not exported (a file cannot ask a kernel to refuse a shape).\n"
    "A candidate writes CDIR/NNNN-FAMILY.safetensors with each output under its own name;\n"
    "`ulpgate score` gates it (docs/interop.md).\n"
    "exit: 0 written, 2 usage or input error, 3 internal error\n";

static int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"sweep", required_argument, 0, 's'},  {"out", required_argument, 0, 'o'},
        {"filter", required_argument, 0, 'f'}, {"max-case-mib", required_argument, 0, 'm'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
    };
    const char *sweep_path = NULL, *out = NULL, *filter = NULL;
    size_t max_bytes = UG_MAX_CASE_BYTES_DEFAULT;
    optind = 1;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (ch == 's') sweep_path = optarg;
        else if (ch == 'o') out = optarg;
        else if (ch == 'f') filter = optarg;
        else if (ch != 'm' || !parse_max_case_mib(optarg, &max_bytes)) {
            fputs(export_usage, ch == 'h' ? stdout : stderr);
            return ch == 'h' ? EXIT_PASS : EXIT_USAGE;
        }
    }
    if (!sweep_path || !out || optind < argc) {
        fprintf(stderr, "ulpgate export: --sweep and --out are required, and nothing else\n%s", export_usage);
        return EXIT_USAGE;
    }
    ug_sweep sweep = {0};
    size_t exported = 0, skipped = 0;
    ug_status st = ug_sweep_load(sweep_path, &sweep);
    if (ug_is_ok(&st) && filter) st = ug_sweep_filter(&sweep, filter);
    if (ug_is_ok(&st)) st = ug_export(&sweep, out, max_bytes, &exported, &skipped);
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
    "                     [--reports DIR] [--jobs N] [--max-case-mib N] [--quiet]\n"
    "Gates a kernel that ran outside ulpgate: for every case of DIR/manifest.json (written by\n"
    "`ulpgate export`), reads the outputs from CDIR/<the case's file> (each output under its\n"
    "buffer name, the manifest's dtype and shape) and measures, gates and reports them exactly as\n"
    "verify does its own kernels. Missing or malformed candidate files, and fixtures exported by\n"
    "a version of ulpgate that draws other inputs, stop it before anything is written.\n"
    "exit: 0 pass, 1 gate failed, 2 usage or input error, 3 internal error\n";

static int cmd_score(int argc, char **argv)
{
    static const struct option opts[] = {
        {"fixtures", required_argument, 0, 'x'}, {"candidate", required_argument, 0, 'c'},
        {"budgets", required_argument, 0, 'b'},  {"baseline", required_argument, 0, 'B'},
        {"reports", required_argument, 0, 'r'},  {"jobs", required_argument, 0, 'j'},
        {"max-case-mib", required_argument, 0, 'm'}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0},
    };
    const char *fixtures = NULL, *candidate = NULL;
    gate_args g = {0};
    ug_run_options run_opt = {.max_case_bytes = UG_MAX_CASE_BYTES_DEFAULT, .jobs = 1,
                              .progress = isatty(STDERR_FILENO) && !getenv("CI")};
    bool ok = true;
    optind = 1;
    for (int ch; ok && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'x': fixtures = optarg; break;
        case 'c': candidate = optarg; break;
        case 'b': g.budgets = optarg; break;
        case 'B': g.baseline = optarg; break;
        case 'r': g.reports = optarg; break;
        case 'q': run_opt.progress = false; break;
        case 'j': ok = parse_jobs(optarg, &run_opt.jobs); break;
        case 'm': ok = parse_max_case_mib(optarg, &run_opt.max_case_bytes); break;
        default:
            fputs(score_usage, ch == 'h' ? stdout : stderr);
            return ch == 'h' ? EXIT_PASS : EXIT_USAGE;
        }
    }
    if (!ok) return EXIT_USAGE;
    if (!fixtures || !candidate || !g.budgets || optind < argc) {
        fprintf(stderr, "ulpgate score: --fixtures, --candidate and --budgets are required, and nothing else\n%s",
                score_usage);
        return EXIT_USAGE;
    }
    for (int i = 0; i < UG_ISA_COUNT; i++) run_opt.isa_enabled[i] = true;
    ug_budgets budgets = {0};
    ug_sweep sweep = {0};
    ug_candidate *cand = NULL;
    ug_kernel_source source;
    ug_run_result run = {0};
    ug_verdict verdict = {0};
    ug_status st = ug_budgets_load(g.budgets, &budgets);
    if (ug_is_ok(&st)) st = ug_candidate_open(fixtures, candidate, run_opt.max_case_bytes, &sweep, &cand, &source);
    if (ug_is_ok(&st)) {
        run_opt.moderate_cond = budgets.moderate_cond;
        run_opt.source = &source;
        st = ug_run_sweep(&sweep, &run_opt, &run);
        snprintf(run.source_detail, sizeof run.source_detail, "%s", candidate);
    }
    if (ug_is_ok(&st)) st = gate_and_report(&g, &run, &budgets, &verdict);
    int rc = ug_is_ok(&st) ? (verdict.pass ? EXIT_PASS : EXIT_GATE) : fail_with(&st);
    ug_verdict_free(&verdict);
    ug_run_result_free(&run);
    ug_candidate_free(cand);
    ug_sweep_free(&sweep);
    ug_budgets_free(&budgets);
    mpfr_free_cache();
    return rc;
}

/* One line per build: FAMILY ID NAME<tab>WHAT (ci/mutants.sh reads them). */
static int cmd_builds(bool variants)
{
    for (size_t i = 0; i < ug_family_count(); i++) {
        const ug_family *f = ug_family_at(i);
        size_t n = variants ? f->n_variants : f->n_mutants;
        const ug_mutant_desc *list = variants ? f->variants : f->mutants;
        for (size_t m = 0; m < n; m++) printf("%s %d %s\t%s\n", f->name, list[m].id, list[m].name, list[m].what);
    }
    return EXIT_PASS;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : EXIT_PASS;
    }
    const char *verb = argv[1];
    if (strcmp(verb, "verify") == 0) return cmd_verify(argc - 1, argv + 1);
    if (strcmp(verb, "compare") == 0) return cmd_compare(argc - 1, argv + 1);
    if (strcmp(verb, "merge") == 0 || strcmp(verb, "report") == 0) return cmd_merge(argc - 1, argv + 1);
    if (strcmp(verb, "export") == 0) return cmd_export(argc - 1, argv + 1);
    if (strcmp(verb, "score") == 0) return cmd_score(argc - 1, argv + 1);
    if (strcmp(verb, "list") == 0) return cmd_list();
    if (strcmp(verb, "mutants") == 0) return cmd_builds(false);
    if (strcmp(verb, "variants") == 0) return cmd_builds(true);
    fprintf(stderr, "ulpgate: unknown verb '%s'\n", verb);
    usage(stderr);
    return EXIT_USAGE;
}
