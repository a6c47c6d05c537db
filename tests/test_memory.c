/* test_memory.c — the up-front memory estimate of a pretraining run (train/memory.c): the parameter
 * count without building equals the built model's, the arena formula bounds the measured arena peak
 * of a real step from above by at most 2x at three shapes (it prints each ratio; the double build
 * doubles the activations but not the byte masks and indices, so its ratio is a little higher),
 * deberta predict's reservation holds a whole forward of every task head (the arena never overflows),
 * memory_check refuses with one line, the arena's block is 2 MiB-aligned, advised for huge pages and
 * exactly as long as asked (xcalloc_pages_huge), and the parameters' buffers cost no page until written. */
#include "tests/testutil.h"
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "data/loader.h"
#include "model/electra.h"
#include "train/finetune.h"
#include "train/memory.h"
#include "train/eval/task_eval.h"
#include "train/optim.h"
#include "train/step.h"

static void shape_config(ModelConfig *c, int T, int H, int inter, int A, int V, int L) {
    config_defaults(c);
    config_preset(c, "test");
    c->hidden_size = H;
    c->intermediate_size = inter;
    c->num_attention_heads = A;
    c->attention_head_size = H / A;
    c->vocab_size = V;
    c->num_hidden_layers = L;
    c->gen_num_hidden_layers = 0;
    c->max_seq_len = T;
    if (c->max_position_embeddings < T) c->max_position_embeddings = T;
    char err[256];
    if (config_validate(c, err, sizeof err)) fail_msg("%s", err);
}

static void param_count_without_building(void **state) {
    const int sharing[3] = {SHARE_GDES, SHARE_NES, SHARE_ES};
    for (int k = 0; k < 3; k++) {
        ModelConfig c;
        shape_config(&c, 32, 16, 64, 2, 300, 2);
        c.embedding_sharing = sharing[k];
        if (sharing[k] == SHARE_ES) c.training_mode = TRAIN_JOINT;
        Electra m;
        electra_build(&m, &c, 1);
        assert_true(electra_param_slots(&c) == (double)m.ps.total);
        electra_free(&m);
    }
}

/* The arena peak of one pretraining step at this shape, measured. */
static size_t measured_peak(const ModelConfig *cfg, int B) {
    const int T = cfg->max_seq_len;
    Electra m;
    electra_build(&m, cfg, 5);
    Tape t;
    tape_init(&t, 4096);
    t.seed = 5;
    OptimConfig oc;
    optim_config_default(&oc, OPTIM_ADAMW);
    oc.total_steps = 100;
    OptimMoments mo;
    optim_moments_init(&mo, &m.ps, NULL);
    OptimGroup g[2];
    optim_group_init(&g[0], "generator", &oc, &m.ps, &mo, "generator.");
    optim_group_init(&g[1], "discriminator", &oc, &m.ps, &mo, "discriminator.");
    Batch b;
    batch_alloc(&b, B, T);
    b.n_masked = b.n_tokens = 0;
    for (int s = 0; s < B; s++) {
        int32_t *ids = b.input_ids + (long)s * T, *lab = b.labels + (long)s * T, *am = b.attention_mask + (long)s * T;
        for (int i = 0; i < T; i++) {
            ids[i] = 5 + (int32_t)rng_below(5, rng_stream(RNG_TEST, 0, (uint64_t)s), (uint64_t)i, (uint64_t)(cfg->vocab_size - 5));
            am[i] = 1;
        }
        ids[0] = cfg->cls_id;
        ids[T - 1] = cfg->sep_id;
        b.n_tokens += T;
        b.n_masked += mask_sequence(ids, lab, T, T, MASK_OFFICIAL, 0.15, cfg->vocab_size, 5, rng_stream(RNG_MASK, 0, 0), (uint64_t)s << 20);
    }
    int32_t *rep = xmalloc((size_t)B * T * sizeof(int32_t)), *reps[1] = {rep};
    const StepCtx c = {&m, &t, g, &b, reps, 1, 5};
    pretrain_step(&c, 0, 1);
    const size_t peak = t.arena.peak;
    free(rep);
    batch_free(&b);
    optim_group_free(&g[0]);
    optim_group_free(&g[1]);
    optim_moments_free(&mo);
    tape_free(&t);
    electra_free(&m);
    return peak;
}

static void arena_formula_bounds_the_measured_peak(void **state) {
    static const int shapes[3][7] = {
        /* B, T, H, I, heads, V, layers */
        {4, 64, 64, 256, 4, 1000, 2},
        {16, 128, 128, 512, 4, 2000, 4},
        {8, 32, 256, 1024, 4, 8000, 2},
    };
    omp_set_num_threads(1);
    for (int k = 0; k < 3; k++) {
        const int *s = shapes[k];
        ModelConfig c;
        shape_config(&c, s[1], s[2], s[3], s[4], s[5], s[6]);
        const double est = memory_arena_elements(&c, s[0]) * sizeof(real);
        const double got = (double)measured_peak(&c, s[0]);
        fprintf(stderr, "  B=%d T=%d H=%d I=%d heads=%d V=%d layers=%d: arena peak %.2f MB, estimate %.2f MB (x%.2f)\n", s[0], s[1], s[2],
                s[3], s[4], s[5], s[6], got / 1e6, est / 1e6, est / got);
        if (!(est >= got && est <= 2.0 * got)) fail_msg( /* NaN-safe */"estimate %.0f bytes vs measured %.0f: outside [1, 2] times", est, got);
    }
}

/* deberta predict reserves memory_forward_arena_bytes(cfg, T, B) and runs task_eval_run over the examples:
 * at the tiny preset (where the reservation lies above its 64 MiB floor) and two sequence lengths, for
 * each head, no batch takes more than the reservation (the arena's peak, overflow blocks included). */
static void predict_reservation_holds_a_forward(void **state) {
    (void)state;
    static const int shapes[2][2] = {{128, 32}, {256, 16}}; /* T, B */
    static const HeadKind kinds[3] = {HEAD_SEQUENCE, HEAD_TOKEN, HEAD_REGRESSION};
    omp_set_num_threads(2);
    for (int k = 0; k < 2; k++) {
        const int T = shapes[k][0], B = shapes[k][1], N = B + 3; /* a full batch, then a partial one */
        ModelConfig c;
        config_defaults(&c);
        config_preset(&c, "tiny");
        c.max_seq_len = 32; /* the pretraining's length, shorter than the task's: the reservation must follow T */
        char err[256];
        if (config_validate(&c, err, sizeof err)) fail_msg("%s", err);
        int32_t *ids = xmalloc((size_t)N * T * sizeof(int32_t)), *lab = xmalloc((size_t)N * T * sizeof(int32_t));
        float *target = xmalloc((size_t)N * sizeof(float));
        for (int n = 0; n < N; n++) {
            const int len = T - (n % 5) * (T / 8); /* some padding */
            for (int i = 0; i < T; i++) {
                ids[(long)n * T + i] = i == 0 ? c.cls_id : i == len - 1 ? c.sep_id : i < len ? 5 + (n * 31 + i * 7) % (c.vocab_size - 5) : c.pad_id;
                lab[(long)n * T + i] = i > 0 && i < len - 1 ? (n + i) % 3 : HEAD_IGNORE;
            }
            target[n] = (float)n / N;
        }
        for (int h = 0; h < 3; h++) {
            FtModel m;
            ft_model_build(&m, &c, kinds[h], kinds[h] == HEAD_REGRESSION ? 1 : 3, 0, 7);
            TaskSet ts = {0};
            ts.kind = kinds[h] == HEAD_TOKEN ? TASK_TAGGING : kinds[h] == HEAD_REGRESSION ? TASK_REGRESSION : TASK_CLASSIFICATION;
            ts.T = T;
            ts.N = N;
            ts.n_labels = m.head.n_labels;
            ts.pad_id = c.pad_id;
            ts.ids = ids;
            int32_t *seq_lab = xmalloc((size_t)N * sizeof(int32_t));
            for (int n = 0; n < N; n++) seq_lab[n] = n % 3;
            ts.labels = kinds[h] == HEAD_TOKEN ? lab : seq_lab;
            ts.targets = target;
            const double reserve = memory_forward_arena_bytes(&c, T, B);
            if (!(reserve > (double)(64 << 20))) fail_msg("T=%d B=%d: the reservation %.0f is at its floor; the check would prove nothing", T, B, reserve);
            Tape t;
            tape_init(&t, (size_t)reserve);
            TaskPreds p;
            task_eval_run(&m.enc, &m.head, &t, &ts, B, &p);
            const double peak = (double)t.arena.peak;
            fprintf(stderr, "  tiny, T=%d B=%d, head %d: forward peak %.1f MB, reserved %.1f MB (x%.2f)\n", T, B, (int)kinds[h], peak / 1e6,
                    reserve / 1e6, reserve / peak);
            if (!(peak > 0 && peak <= reserve)) fail_msg("T=%d B=%d head %d: the forward took %.0f bytes, more than the %.0f reserved", T, B, (int)kinds[h], peak, reserve);
            task_preds_free(&p);
            tape_free(&t);
            free(seq_lab);
            ft_model_free(&m);
        }
        free(ids);
        free(lab);
        free(target);
    }
}

static void check_refuses_with_one_line(void **state) {
    ModelConfig c;
    shape_config(&c, 32, 16, 64, 2, 300, 2);
    char err[1024];
    MemEstimate e;
    memory_estimate(&c, 4, NULL, &e);
    assert_int_equal(memory_check(&c, 4, NULL, e.total_bytes, err, sizeof err), 0);
    assert_int_equal(memory_check(&c, 4, NULL, -1, err, sizeof err), 0);
    assert_int_equal(memory_check(&c, 4, NULL, e.total_bytes - 1, err, sizeof err), -1);
    fprintf(stderr, "  got: error: %s\n", err);
    assert_non_null(strstr(err, "MemAvailable"));
    assert_null(strchr(err, '\n'));
    c.hidden_size = 16384;
    c.intermediate_size = 65536;
    c.attention_head_size = 16384 / 2;
    memory_estimate(&c, 4, NULL, &e);
    assert_true(e.param_elements > 1e9); /* counted without allocating */
}

/* The mapping of /proc/self/smaps that starts at p: its end and whether its VmFlags hold "hg" (MADV_HUGEPAGE).
 * Returns 0 when no mapping starts at p. */
static int smaps_entry(const void *p, uintptr_t *end, int *hg) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2) { /* a mapping's first line */
            if (found) break;
            if (a == (uintptr_t)p) found = 1, *end = b, *hg = 0;
        } else if (found && !strncmp(line, "VmFlags:", 8)) {
            *hg = strstr(line, " hg") != NULL;
        }
    }
    fclose(f);
    return found;
}

/* The process's mapped bytes (/proc/self/statm's first field), read without allocating. */
static long mapped_pages(void) {
    char buf[128];
    const int fd = open("/proc/self/statm", O_RDONLY);
    assert_true(fd >= 0);
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    assert_true(n > 0);
    buf[n] = 0;
    return strtol(buf, NULL, 10);
}

/* The arena's block (xcalloc_pages_huge): 2 MiB-aligned, one mapping exactly the rounded length (the alignment's
 * slack unmapped, nothing left mapped after xfree_pages), zeroed, advised MADV_HUGEPAGE where the kernel has transparent huge pages; and again after
 * an overflow regrows it; small blocks page-aligned. */
static void arena_block_is_huge_page_aligned(void **state) {
    const size_t huge = (size_t)2 << 20;
    const int thp = access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
    const size_t sizes[3] = {huge, 5 * huge + 100, (size_t)3 << 20};
    uintptr_t end = 0;
    int hg = -1;
    (void)smaps_entry(NULL, &end, &hg); /* stdio's first use, before the mapped bytes are counted */
    for (int k = 0; k < 3; k++) {
        const long before = mapped_pages();
        unsigned char *p = xcalloc_pages_huge(sizes[k]);
        const size_t len = (sizes[k] + 4095) & ~(size_t)4095;
        assert_int_equal((uintptr_t)p % huge, 0);
        assert_int_equal(smaps_entry(p, &end, &hg), 1);
        assert_int_equal(end - (uintptr_t)p, len);
        if (thp) assert_int_equal(hg, 1);
        for (size_t i = 0; i < len; i += 4096) assert_int_equal(p[i], 0);
        memset(p, 0xA5, sizes[k]);
        xfree_pages(p, sizes[k]);
        assert_int_equal(smaps_entry(p, &end, &hg), 0); /* all of it unmapped, */
        assert_int_equal(mapped_pages(), before);       /* and the alignment's slack too */
    }
    unsigned char *small = xcalloc_pages_huge(100);
    assert_int_equal((uintptr_t)small % 4096, 0);
    xfree_pages(small, 100);
    Arena a;
    arena_init(&a, (size_t)5 << 20);
    assert_int_equal((uintptr_t)a.base % huge, 0);
    memset(arena_alloc(&a, (size_t)4 << 20), 1, (size_t)4 << 20);
    memset(arena_alloc(&a, (size_t)4 << 20), 2, (size_t)4 << 20); /* an overflow block */
    arena_reset(&a);
    assert_true(a.cap >= ((size_t)8 << 20));
    assert_int_equal((uintptr_t)a.base % huge, 0);
    memset(arena_alloc(&a, (size_t)8 << 20), 3, (size_t)8 << 20);
    arena_free(&a);
    if (!thp) test_skip("the huge-page advice: no transparent huge pages on this kernel");
}

/* Pages of [p, p + bytes) in memory (mincore). */
static long resident_pages(const void *p, size_t bytes) {
    const size_t len = (bytes + 4095) & ~(size_t)4095;
    unsigned char vec[4096];
    assert_true(len / 4096 <= sizeof vec);
    assert_int_equal(mincore((void *)p, len, vec), 0);
    long n = 0;
    for (size_t i = 0; i < len / 4096; i++) n += vec[i] & 1;
    return n;
}

/* params_finalize maps the data and gradient buffers without writing them: no page of either is in memory
 * until the model writes it (a forward that loads a checkpoint never touches the gradients), every element
 * reads 0, the buffers are page-aligned, and params_free unmaps both. */
static void param_buffers_cost_no_page_until_written(void **state) {
    ParamSet ps;
    params_init(&ps);
    params_add(&ps, "w", 2, (const int[]){512, 1000});
    params_add(&ps, "b", 1, (const int[]){7});
    params_add(&ps, "e", 2, (const int[]){300, 256});
    params_finalize(&ps);
    const size_t bytes = (size_t)ps.total * sizeof(real);
    assert_int_equal((uintptr_t)ps.data % 4096, 0);
    assert_int_equal((uintptr_t)ps.grad % 4096, 0);
    assert_int_equal(resident_pages(ps.data, bytes), 0);
    assert_int_equal(resident_pages(ps.grad, bytes), 0);
    ps.params[2]->data[5] = 1; /* one page of the data written */
    assert_int_equal(resident_pages(ps.data, bytes), 1);
    assert_int_equal(resident_pages(ps.grad, bytes), 0);
    for (long i = 0; i < ps.total; i++)
        if (ps.grad[i] != 0 || (ps.data[i] != 0) != (ps.data + i == ps.params[2]->data + 5)) fail_msg("element %ld not zero", i);
    void *data = ps.data, *grad = ps.grad;
    unsigned char vec[1];
    params_free(&ps);
    errno = 0;
    assert_int_equal(mincore(data, 4096, vec), -1); /* unmapped: ENOMEM */
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    assert_int_equal(mincore(grad, 4096, vec), -1);
    assert_int_equal(errno, ENOMEM);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(param_count_without_building),
        cmocka_unit_test(arena_formula_bounds_the_measured_peak),
        cmocka_unit_test(predict_reservation_holds_a_forward),
        cmocka_unit_test(check_refuses_with_one_line),
        cmocka_unit_test(arena_block_is_huge_page_aligned),
        cmocka_unit_test(param_buffers_cost_no_page_until_written),
    };
    return test_exit(cmocka_run_group_tests_name("memory", tests, NULL, NULL));
}
