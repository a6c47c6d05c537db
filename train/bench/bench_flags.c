/* bench_flags.c — the command-line flags `deberta bench step` and `deberta bench attention` share
 * (declared in train/bench/bench.h): one loop, so both modes answer --help, an unknown argument and a bad
 * config flag the same way, and both keep dropout 0.1 unless a flag sets it. */
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "train/bench/bench.h"

int bench_parse_flags(const BenchFlags *f, ModelConfig *cfg, int argc, char **argv) {
    const struct {
        const char *flag;
        int *dst;
    } ints[] = {{"--batch", f->batch},   {"--seq", f->seq},         {"--steps", f->steps},
                {"--warmup", f->warmup}, {"--threads", f->threads}, {"--profile", f->profile}};
    char err[512];
    int hidden_given = 0, attention_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            f->usage(stdout);
            return 0;
        }
        int taken = 0;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0] && !taken; k++)
            if (ints[k].dst && !strcmp(a, ints[k].flag) && i + 1 < argc) {
                *ints[k].dst = atoi(argv[++i]);
                taken = 1;
            }
        if (taken || (f->extra && f->extra(f->ctx, argc, argv, &i))) continue;
        const int r = config_parse_flag(cfg, argc, argv, &i, err, sizeof err);
        if (r < 0) fatal("%s: %s", f->who, err);
        if (r == 0) {
            fprintf(stderr, "error: %s: unknown argument '%s' (see deberta %s --help)\n", f->who, a, f->help_cmd);
            return 2;
        }
        hidden_given |= strstr(a, "hidden_dropout") || strstr(a, "hidden-dropout");
        attention_given |= strstr(a, "probs_dropout") || strstr(a, "probs-dropout");
    }
    /* The benchmarks keep the spec's dropout 0.1 (their PyTorch yardsticks' and every recorded figure's)
     * whatever the preset pretrains with (tiny: 0), unless a flag sets it. */
    if (!hidden_given) cfg->hidden_dropout_prob = 0.1;
    if (!attention_given) cfg->attention_probs_dropout_prob = 0.1;
    return -1;
}
