/* dist.c — the MPI layer; see dist.h. */
#include "train/dist.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/util.h"
#if DEBERTA_MPI
#include <mpi.h>
#endif

static int g_init, g_rank, g_world = 1, g_local = 1;

/* 1 when the environment says a launcher (mpirun) started this process. */
static int dist_launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

uint64_t dist_hash(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

int dist_rank(void) { return g_rank; }
int dist_world(void) { return g_world; }
int dist_local_size(void) { return g_local; }

#if DEBERTA_MPI
/* mpirun ends the surviving ranks with SIGTERM when one fails: say so in one line (write(2) only). */
static char g_term_msg[200];
static void on_sigterm(int sig) {
    (void)sig;
    ssize_t w = write(2, g_term_msg, strlen(g_term_msg));
    (void)w;
    _exit(143);
}

static void check(int rc, const char *what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fatal("MPI %s failed: %s", what, msg);
}

void dist_init(int *argc, char ***argv) {
    if (g_init || !dist_launched()) return;
    int provided;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "init");
    g_init = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_world);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &g_local);
    MPI_Comm_free(&local);
    if (g_world > 1) {
        snprintf(g_msg_prefix, sizeof g_msg_prefix, "rank %d: ", g_rank);
        snprintf(g_term_msg, sizeof g_term_msg,
                 "error: rank %d: stopped by the launcher (another rank failed, or the job was interrupted); "
                 "the last checkpoint is intact, continue with --resume\n",
                 g_rank);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigterm;
        sigaction(SIGTERM, &sa, NULL);
    }
}

void dist_finalize(void) {
    if (!g_init) return;
    MPI_Finalize();
    g_init = 0;
}

void dist_exit(int code) {
    signal(SIGTERM, SIG_DFL); /* this rank has said why it stops: no second line if mpirun ends it first */
    fflush(stdout);
    fflush(stderr);
    dist_finalize();
    exit(code);
}

#if REAL_IS_DOUBLE
#define MPI_REAL_T MPI_DOUBLE
#else
#define MPI_REAL_T MPI_FLOAT
#endif

void dist_allreduce_real(real *buf, long n) {
    if (g_world == 1) return;
    /* In pieces of 8 MB: on Open MPI's shared-memory transport one allreduce of 32 MB or more was
     * many times slower per byte than pieces of 16 MB or less (docs/PERFORMANCE.md, "Data
     * parallel", has the figures).  With 2 ranks each element's sum is the same whatever the pieces. */
    const long chunk = (8L << 20) / (long)sizeof(real);
    for (long i = 0; i < n; i += chunk)
        check(MPI_Allreduce(MPI_IN_PLACE, buf + i, (int)MIN(chunk, n - i), MPI_REAL_T, MPI_SUM, MPI_COMM_WORLD), "allreduce");
}

/* int counts of the regions, then their displacements (MPI counts are int), in one buffer to free */
static int *regions(const long *counts) {
    int *ic = xmalloc(2 * (size_t)g_world * sizeof(int)), *id = ic + g_world;
    long off = 0;
    for (int r = 0; r < g_world; r++) {
        if (counts[r] > 0x7fffffffL || off > 0x7fffffffL) fatal("a shard of %ld elements is too large for one MPI call", counts[r]);
        ic[r] = (int)counts[r];
        id[r] = (int)off;
        off += counts[r];
    }
    return ic;
}

void dist_reduce_scatter_real(real *buf, const long *counts) {
    if (g_world == 1) return;
    int *ic = regions(counts), *id = ic + g_world;
    check(MPI_Reduce_scatter(MPI_IN_PLACE, buf, ic, MPI_REAL_T, MPI_SUM, MPI_COMM_WORLD), "reduce_scatter");
    memmove(buf + id[g_rank], buf, (size_t)ic[g_rank] * sizeof(real)); /* MPI leaves the result at the start */
    free(ic);
}

void dist_allgather_real(real *buf, const long *counts) {
    if (g_world == 1) return;
    int *ic = regions(counts), *id = ic + g_world;
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, ic, id, MPI_REAL_T, MPI_COMM_WORLD), "allgather");
    free(ic);
}

void dist_gather_real(real *buf, const long *counts) {
    if (g_world == 1) return;
    int *ic = regions(counts), *id = ic + g_world;
    if (g_rank == 0) check(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_REAL_T, buf, ic, id, MPI_REAL_T, 0, MPI_COMM_WORLD), "gather");
    else check(MPI_Gatherv(buf + id[g_rank], ic[g_rank], MPI_REAL_T, NULL, NULL, NULL, MPI_REAL_T, 0, MPI_COMM_WORLD), "gather");
    free(ic);
}

void dist_allreduce_double(double *buf, int n) {
    if (g_world == 1) return;
    check(MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "allreduce");
}

void dist_allreduce_i64(int64_t *buf, int n) {
    if (g_world == 1) return;
    check(MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD), "allreduce");
}

void dist_allgather_i64(const int64_t *mine, int n, int64_t *all) {
    if (g_world == 1) {
        memcpy(all, mine, (size_t)n * sizeof *all);
        return;
    }
    check(MPI_Allgather(mine, n, MPI_INT64_T, all, n, MPI_INT64_T, MPI_COMM_WORLD), "allgather");
}

void *dist_gather_bytes(const void *mine, size_t n, size_t *total) {
    if (g_world == 1) {
        void *p = xmalloc(n ? n : 1);
        memcpy(p, mine, n);
        *total = n;
        return p;
    }
    if (n > (size_t)1 << 30) fatal("gather of %zu bytes per rank is too large", n);
    int mine_n = (int)n, *counts = NULL, *displs = NULL;
    char *all = NULL;
    if (g_rank == 0) counts = xcalloc((size_t)g_world, sizeof(int));
    check(MPI_Gather(&mine_n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD), "gather");
    if (g_rank == 0) {
        displs = xcalloc((size_t)g_world, sizeof(int));
        size_t sum = 0;
        for (int r = 0; r < g_world; r++) {
            if (sum > (size_t)1 << 30) fatal("gather of more than 1 GiB");
            displs[r] = (int)sum;
            sum += (size_t)counts[r];
        }
        all = xmalloc(sum ? sum : 1);
        *total = sum;
    }
    check(MPI_Gatherv(mine, mine_n, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD), "gather");
    free(counts);
    free(displs);
    return all;
}

void dist_bcast(void *buf, size_t bytes, int root) {
    if (g_world == 1) return;
    if (bytes > (size_t)1 << 30) fatal("broadcast of %zu bytes is too large", bytes);
    check(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD), "broadcast");
}

void dist_barrier(void) {
    if (g_world > 1) check(MPI_Barrier(MPI_COMM_WORLD), "barrier");
}

#else /* built without MPI */

void dist_init(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (dist_launched() && !(n && atoi(n) == 1))
        fatal("launched by mpirun, but this binary was built without MPI (install libopenmpi-dev, then make clean && make)");
}
void dist_finalize(void) {}
void dist_exit(int code) { exit(code); }
void dist_allreduce_real(real *buf, long n) { (void)buf, (void)n; }
void dist_allreduce_double(double *buf, int n) { (void)buf, (void)n; }
void dist_reduce_scatter_real(real *buf, const long *counts) { (void)buf, (void)counts; }
void dist_allgather_real(real *buf, const long *counts) { (void)buf, (void)counts; }
void dist_gather_real(real *buf, const long *counts) { (void)buf, (void)counts; }
void dist_allreduce_i64(int64_t *buf, int n) { (void)buf, (void)n; }
void dist_allgather_i64(const int64_t *mine, int n, int64_t *all) { memcpy(all, mine, (size_t)n * sizeof *all); }
void *dist_gather_bytes(const void *mine, size_t n, size_t *total) {
    void *p = xmalloc(n ? n : 1);
    memcpy(p, mine, n);
    *total = n;
    return p;
}
void dist_bcast(void *buf, size_t bytes, int root) { (void)buf, (void)bytes, (void)root; }
void dist_barrier(void) {}
#endif

static void agree(const char *what, uint64_t hash, const char *hint, const char *detail) {
    if (g_world == 1) return;
    int64_t *all = xmalloc((size_t)g_world * sizeof(int64_t));
    const int64_t mine = (int64_t)hash;
    dist_allgather_i64(&mine, 1, all);
    char ranks[256] = "";
    size_t len = 0;
    int n_diff = 0;
    for (int r = 1; r < g_world; r++)
        if (all[r] != all[0]) {
            if (len < sizeof ranks - 16) len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%d", n_diff ? ", " : "", r);
            n_diff++;
        }
    free(all);
    if (!n_diff) return;
    fflush(stdout);
    fprintf(stderr, "error: %sthe ranks disagree on %s: rank%s %s differ%s from rank 0%s%s (%s)\n", g_msg_prefix, what, n_diff > 1 ? "s" : "",
            ranks, n_diff > 1 ? "" : "s", detail && *detail ? ": " : "", detail ? detail : "", hint);
    dist_exit(1);
}

void dist_agree(const char *what, uint64_t hash, const char *hint) { agree(what, hash, hint, NULL); }

/* the line of s that starts at p, without its newline, quoted into out */
static void quote_line(const char *p, char *out, size_t n) {
    size_t len = strcspn(p, "\n");
    snprintf(out, n, "'%.*s'", (int)MIN(len, n - 3), p);
}

void dist_agree_text(const char *what, const char *text, const char *hint) {
    if (g_world == 1) return;
    uint64_t len = strlen(text) + 1;
    dist_bcast(&len, sizeof len, 0);
    char *r0 = g_rank == 0 ? (char *)text : xmalloc(len);
    dist_bcast(r0, len, 0);
    char detail[400] = "";
    if (strcmp(r0, text)) {
        const char *a = r0, *b = text;
        for (;;) { /* the first line that differs */
            size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
            if (la != lb || memcmp(a, b, la) || !a[la] || !b[lb]) break;
            a += la + 1;
            b += lb + 1;
        }
        char qa[180], qb[180];
        quote_line(a, qa, sizeof qa);
        quote_line(b, qb, sizeof qb);
        snprintf(detail, sizeof detail, "rank 0 has %s, this rank %s", qa, qb);
    }
    if (g_rank != 0) free(r0);
    agree(what, dist_hash(DIST_HASH_INIT, text, strlen(text)), hint, detail);
}
