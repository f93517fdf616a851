/* themis-bench's report: the coll/themis settings read through MPI_T for the header,
 * the derived figures of a result (bus bandwidth factor, ideal time, speedups), the
 * table printed on stdout and the --csv and --json files, whose handles live here
 * between open_outputs() and close_outputs().  Only rank 0 prints and writes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "bench_common.h"

/* ------------------------------------------------------------------ MPI_T */

/* Reads an Open MPI control variable into `out` as text; 0 when it exists. */
static int read_cvar(const char *name, char *out, size_t len)
{
    int index;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return -1;
    char vname[256], desc[1024];
    int nlen = sizeof vname, dlen = sizeof desc, verb, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (MPI_T_cvar_get_info(index, vname, &nlen, &verb, &dt, &en, desc, &dlen, &bind, &scope) !=
        MPI_SUCCESS)
        return -1;
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS) return -1;
    union {
        int i;
        unsigned u;
        unsigned long ul;
        unsigned long long ull;
        double d;
        _Bool b;
        char s[1024];
    } v;
    memset(&v, 0, sizeof v);
    int rc = MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    if (rc != MPI_SUCCESS) return -1;
    if (dt == MPI_CHAR) {
        const size_t n = strnlen(v.s, len - 1); /* truncates long strings */
        memcpy(out, v.s, n);
        out[n] = 0;
    } else if (dt == MPI_INT) {
        snprintf(out, len, "%d", v.i);
        if (en != MPI_T_ENUM_NULL) { /* show the name of the value */
            int items, elen = 64;
            char ename[64];
            if (MPI_T_enum_get_info(en, &items, ename, &elen) == MPI_SUCCESS)
                for (int k = 0; k < items; ++k) {
                    int value, ilen = 64;
                    char iname[64];
                    if (MPI_T_enum_get_item(en, k, &value, iname, &ilen) == MPI_SUCCESS &&
                        value == v.i)
                        snprintf(out, len, "%s", iname);
                }
        }
    } else if (dt == MPI_UNSIGNED) {
        snprintf(out, len, "%u", v.u);
    } else if (dt == MPI_UNSIGNED_LONG) {
        snprintf(out, len, "%lu", v.ul);
    } else if (dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_COUNT) {
        snprintf(out, len, "%llu", v.ull);
    } else if (dt == MPI_C_BOOL) {
        snprintf(out, len, "%s", v.b ? "true" : "false");
    } else if (dt == MPI_DOUBLE) {
        snprintf(out, len, "%g", v.d);
    } else {
        snprintf(out, len, "?");
    }
    return 0;
}

/* The settings every run records (stdout header, JSON config); the first exists only
 * while coll/themis is loaded. */
static const char *themis_cvars[] = {"coll_themis_priority",   "coll_themis_dims",
                                     "coll_themis_policy",     "coll_themis_chunks",
                                     "coll_themis_min_chunk_bytes", "coll_themis_max_active",
                                     "coll_themis_min_bytes",  "coll_themis_intra_policy",
                                     "coll_themis_load_model", "coll_themis_threshold",
                                     "coll_themis_transport", "coll_themis_single_dim",
                                     "coll_themis_pml_message_bytes",
                                     "coll_themis_max_active_bytes", "coll_themis_node_transport"};
#define N_THEMIS_CVARS ((int) (sizeof themis_cvars / sizeof themis_cvars[0]))
static char themis_cvar_values[N_THEMIS_CVARS][128];
static int themis_loaded;

void read_themis_settings(void)
{
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return;
    themis_loaded = 1;
    for (int k = 0; k < N_THEMIS_CVARS; ++k)
        if (read_cvar(themis_cvars[k], themis_cvar_values[k], sizeof themis_cvar_values[k])) {
            snprintf(themis_cvar_values[k], sizeof themis_cvar_values[k], "n/a");
            if (k == 0) themis_loaded = 0;
        }
    MPI_T_finalize();
}

void print_themis_settings(void)
{
    printf("# coll/themis %s", themis_loaded ? "loaded:" : "NOT loaded (themis rows measure "
                                                           "the fallback module)");
    if (themis_loaded)
        for (int k = 0; k < N_THEMIS_CVARS; ++k)
            printf(" %s=%s", themis_cvars[k] + strlen("coll_themis_"), themis_cvar_values[k]);
    printf("\n");
}

/* ------------------------------------------------------------------ results */

double bus_factor(enum coll c, int n)
{
    if (c == C_BCAST || c == C_REDUCE) return 1; /* as nccl-tests */
    return c == C_ALLREDUCE ? 2.0 * (n - 1) / n : (double) (n - 1) / n;
}

double ideal_time(const struct options *o, enum coll c, size_t bytes)
{
    if (o->n_bw == 0) return 0;
    double sum = 0;
    for (int d = 0; d < o->n_peers; ++d)
        if (o->peers[d] > 1) sum += o->bw[d];
    if (sum <= 0) return 0;
    /* Bcast and Reduce: every rank but the root receives (sends) all S, and no more reaches
     * a sub-grid the root is not in than the links into it carry: for every set Q of
     * dimensions, prod of the others' peers x the sum of Q's rates (the core's
     * Topology::broadcast_rate; a rank alone is Q = all). */
    if (c == C_BCAST || c == C_REDUCE) {
        double rate = sum;
        for (unsigned q = 1; q < (1u << o->n_peers); ++q) {
            double in = 0, ranks = 1;
            for (int d = 0; d < o->n_peers; ++d) {
                if (o->peers[d] < 2) continue;
                if (q >> d & 1)
                    in += o->bw[d];
                else
                    ranks *= o->peers[d];
            }
            if (in > 0 && ranks * in < rate) rate = ranks * in;
        }
        return (double) bytes / rate;
    }
    const double phases = c == C_ALLREDUCE ? 2 : 1;
    return phases * (double) bytes * (1.0 - 1.0 / world_size) / sum;
}

int impl_index(const struct options *o, const char *name)
{
    for (int k = 0; k < o->n_impls; ++k)
        if (strcmp(o->impls[k].def->name, name) == 0) return k;
    return -1;
}

void print_header(const struct options *o, enum coll c)
{
    printf("\n# themis-bench %s, %d ranks, datatype %s, %d iterations (+%d warm-up)%s\n",
           coll_names[c], world_size, type_names[o->type], o->iters, o->warmup,
           o->validate ? ", validated" : "");
    printf("# time = max over ranks of one call, avg/median/min over iterations; bandwidths GB/s "
           "(1e9 B/s); x_tuned = t_tuned/t (>1 faster)\n");
    printf("# bandwidths, util%% and speedups use the %s time\n", stat_names[o->stat]);
    if (o->nb != NB_BLOCKING)
        printf("# nonblocking %s: time = first start to MPI_Waitall's end of %d request%s "
               "(no compute), bytes = %d x S\n",
               mode_names[o->nb], o->buckets, o->buckets > 1 ? "s" : "", o->buckets);
    if (o->compute_factor > 0)
        printf("# compute_us, total_us: a busy loop of %g x t_pure between the starts and the "
               "wait (%s time); overlap%% = 100 (1 - (total - compute) / t_pure), >= 0\n",
               o->compute_factor, stat_names[o->stat]);
    printf("%12s  %-16s %11s %11s %11s %9s %9s %7s %8s %8s", "bytes", "impl", "avg_us", "med_us",
           "min_us", "algbw", "busbw", "util%", "x_tuned", "x_best");
    if (o->compute_factor > 0) printf(" %11s %11s %8s", "compute_us", "total_us", "overlap%");
    printf("%s\n", o->validate ? "  errors" : "");
}

static void print_row(const struct options *o, const struct result *r, const char *impl)
{
    char util[16] = "-", vt[16] = "-", vb[16] = "-", errs[32] = "";
    if (r->ideal > 0) snprintf(util, sizeof util, "%.1f", 100.0 * r->ideal / r->t);
    if (r->vs_tuned > 0) snprintf(vt, sizeof vt, "%.3f", r->vs_tuned);
    if (r->vs_best > 0) snprintf(vb, sizeof vb, "%.3f", r->vs_best);
    if (o->validate) snprintf(errs, sizeof errs, "  %6ld", r->errors);
    printf("%12zu  %-16s %11.1f %11.1f %11.1f %9.3f %9.3f %7s %8s %8s", r->bytes, impl,
           r->avg * 1e6, r->med * 1e6, r->min * 1e6, r->algbw / 1e9, r->busbw / 1e9, util, vt, vb);
    if (o->compute_factor > 0)
        printf(" %11.1f %11.1f %8.1f", r->compute * 1e6, r->total * 1e6, r->overlap);
    printf("%s\n", errs);
}

/* What the nonblocking rows time, once per run. */
void print_nonblocking_notes(const struct options *o, double spin_rate)
{
    printf("# nonblocking %s: %d request%s at once, each of S bytes", mode_names[o->nb],
           o->buckets, o->buckets > 1 ? "s" : "");
    if (o->compute_factor > 0)
        printf("; compute loop %g x t_pure (busy loop calibrated here: %.3g steps/us), "
               "MPI_Testall every %g us%s",
               o->compute_factor, spin_rate * 1e-6, o->test_every_us,
               o->test_every_us > 0 ? "" : " (never: progress only in MPI_Waitall)");
    printf("\n# nonblocking: tuned and han rows run libnbc's forms (Open MPI 4.1's tuned and han "
           "have none)\n");
    if (o->cold)
        printf("# cold: every sample runs on a fresh communicator: its set-up is timed with it\n");
    printf("# nonblocking: no blocking call: the first warm-up round's calls set each "
           "communicator up (below coll_themis_min_bytes themis rows are libnbc's)\n");
}

static FILE *csv_file, *json_file;
static int json_rows;
static char csv_label[256], json_label[256];

/* The label as a CSV field (quoted when needed) and as JSON string contents. */
static void escape_label(const char *label)
{
    size_t c = 0, j = 0;
    const int quote = strpbrk(label, ",\"\n") != NULL;
    if (quote) csv_label[c++] = '"';
    for (const char *p = label; *p && c < sizeof csv_label - 3 && j < sizeof json_label - 3; ++p) {
        if (*p == '"') csv_label[c++] = '"';
        csv_label[c++] = *p;
        if (*p == '"' || *p == '\\') json_label[j++] = '\\';
        json_label[j++] = (unsigned char) *p < 0x20 ? ' ' : *p;
    }
    if (quote) csv_label[c++] = '"';
    csv_label[c] = 0;
    json_label[j] = 0;
}

void open_outputs(const struct options *o, double measured_bw)
{
    if (world_rank != 0) return;
    escape_label(o->label ? o->label : "");
    if (o->csv) {
        csv_file = fopen(o->csv, "w");
        if (!csv_file) fail("cannot write %s: %s", o->csv, strerror(errno));
        fprintf(csv_file, "label,collective,impl,ranks,datatype,bytes,count,iters,avg_us,median_us,"
                          "min_us,max_us,stat,algbw_GBps,busbw_GBps,ideal_us,util,speedup_vs_tuned,"
                          "speedup_vs_best,errors,mode,buckets,compute_us,total_us,overlap_pct\n");
    }
    if (o->json) {
        json_file = fopen(o->json, "w");
        if (!json_file) fail("cannot write %s: %s", o->json, strerror(errno));
        fprintf(json_file, "{\n  \"config\": {\"label\": \"%s\", \"ranks\": %d, \"datatype\": "
                           "\"%s\", \"iterations\": %d, \"warmup\": %d, \"validate\": %s, "
                           "\"memory\": \"%s\", \"mode\": \"%s\", \"buckets\": %d, "
                           "\"compute_factor\": %g, \"test_every_us\": %g",
                json_label, world_size, type_names[o->type], o->iters,
                o->warmup, o->validate ? "true" : "false", o->device ? "device" : "host",
                mode_names[o->nb], o->buckets, o->compute_factor, o->test_every_us);
        fprintf(json_file, ", \"peers\": [");
        for (int d = 0; d < o->n_peers; ++d) fprintf(json_file, "%s%d", d ? ", " : "", o->peers[d]);
        fprintf(json_file, "], \"bw_Bps\": [");
        for (int d = 0; d < o->n_bw; ++d) fprintf(json_file, "%s%.6g", d ? ", " : "", o->bw[d]);
        fprintf(json_file, "], \"measured_ring_bw_Bps\": %.6g, \"themis_loaded\": %s",
                measured_bw, themis_loaded ? "true" : "false");
        for (int k = 0; k < N_THEMIS_CVARS; ++k)
            fprintf(json_file, ", \"%s\": \"%s\"", themis_cvars[k], themis_cvar_values[k]);
        fprintf(json_file, "},\n  \"results\": [");
    }
}

/* One row of --csv and --json, as far as they are open. */
static void write_row(const struct options *o, const struct result *r, const char *impl)
{
    if (world_rank != 0) return;
    const double util = r->ideal > 0 ? r->ideal / r->t : 0;
    /* -1: no compute phase */
    const double compute_us = r->compute < 0 ? -1 : r->compute * 1e6;
    const double total_us = r->total < 0 ? -1 : r->total * 1e6;
    if (csv_file)
        fprintf(csv_file, "%s,%s,%s,%d,%s,%zu,%zu,%d,%.3f,%.3f,%.3f,%.3f,%s,%.6f,%.6f,%.3f,%.4f,"
                          "%.4f,%.4f,%ld,%s,%d,%.3f,%.3f,%.2f\n",
                csv_label, coll_names[r->coll], impl, world_size, type_names[o->type], r->bytes,
                r->count, o->iters, r->avg * 1e6, r->med * 1e6, r->min * 1e6, r->max * 1e6,
                stat_names[o->stat], r->algbw / 1e9, r->busbw / 1e9, r->ideal * 1e6, util,
                r->vs_tuned, r->vs_best, r->errors, mode_names[o->nb], o->buckets, compute_us,
                total_us, r->overlap);
    if (json_file)
        fprintf(json_file,
                "%s\n    {\"label\": \"%s\", \"collective\": \"%s\", \"impl\": \"%s\", \"ranks\": "
                "%d, \"bytes\": %zu, \"count\": %zu, \"avg_us\": %.3f, \"median_us\": %.3f, "
                "\"min_us\": %.3f, \"max_us\": %.3f, \"stat\": \"%s\", \"algbw_GBps\": %.6f, "
                "\"busbw_GBps\": %.6f, \"ideal_us\": %.3f, \"util\": %.4f, "
                "\"speedup_vs_tuned\": %.4f, \"speedup_vs_best\": %.4f, "
                "\"errors\": %ld, \"mode\": \"%s\", \"buckets\": %d, \"compute_us\": %.3f, "
                "\"total_us\": %.3f, \"overlap_pct\": %.2f}",
                json_rows++ ? "," : "", json_label, coll_names[r->coll], impl,
                world_size, r->bytes, r->count, r->avg * 1e6, r->med * 1e6, r->min * 1e6,
                r->max * 1e6, stat_names[o->stat], r->algbw / 1e9, r->busbw / 1e9, r->ideal * 1e6,
                util, r->vs_tuned, r->vs_best, r->errors, mode_names[o->nb], o->buckets,
                compute_us, total_us, r->overlap);
}

/* Speedups against tuned and the best of tuned and han, then one row per implementation. */
void report(const struct options *o, struct result *res)
{
    const int tuned = impl_index(o, "tuned"), han = impl_index(o, "han");
    double best = 0;
    if (tuned >= 0) best = res[tuned].t;
    if (han >= 0 && (best == 0 || res[han].t < best)) best = res[han].t;
    for (int k = 0; k < o->n_impls; ++k) {
        res[k].vs_tuned = tuned >= 0 ? res[tuned].t / res[k].t : 0;
        res[k].vs_best = best > 0 ? best / res[k].t : 0;
        if (world_rank == 0) {
            print_row(o, &res[k], o->impls[k].def->name);
            write_row(o, &res[k], o->impls[k].def->name);
        }
    }
    if (world_rank == 0) fflush(stdout);
}

void close_outputs(void)
{
    if (csv_file) fclose(csv_file);
    if (json_file) {
        fprintf(json_file, "\n  ]\n}\n");
        fclose(json_file);
    }
}
