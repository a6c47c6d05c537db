/* cmd_gradcheck.c — `deberta gradcheck`: every registered finite-difference case, one line each. */
#include <stdio.h>
#include <string.h>
#include "autograd/gradcheck/gradcheck_ops.h"
#include "autograd/base/util.h"
#include "model/gradcheck_model.h"
#include "train/cli/cli.h"

/* Runs the cases whose op name matches `only` (all if NULL); one line each. */
static void run_cases(Tape *t, const GCCase *cases, int n, const char *only, int *ran, int *fails) {
    for (int i = 0; i < n; i++) {
        const GCCase *c = &cases[i];
        if (only && strcmp(only, c->op)) continue;
        GCResult r = c->run(t);
        (*ran)++;
        *fails += !r.ok;
        printf("%-22s %-34s max_rel_err %.3e  (%ld checked)  %s\n", c->op, c->shapes, r.max_err, r.n_checked, r.ok ? "PASS" : "FAIL");
        fflush(stdout);
    }
}

int cmd_gradcheck(int argc, char **argv) {
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: deberta gradcheck [--op NAME]   (NAME: an op, or 'layer' / 'encoder2' / 'token_head' / 'seq_head' / 'reg_head' for the model)\n"
                   "  Central finite differences (4th order) against every hand-written backward.\n"
                   "  Build with `make PRECISION=double` for the real check (tolerance 1e-7);\n"
                   "  the float build runs the same cases as a smoke test (tolerance 5e-2).\n");
            return 0;
        } else if (!strcmp(argv[i], "--op") && i + 1 < argc) {
            only = argv[++i];
        } else {
            return cli_usage_error("gradcheck", "unknown argument '%s'", argv[i]);
        }
    }
    Tape t;
    tape_init(&t, 1 << 20);
    int fails = 0, ran = 0;
    printf("gradcheck (%s build, step %.0e, tolerance %.0e, error = |a-n|/max(|a|,|n|,%.0e))\n", REAL_NAME, gradcheck_step(),
           gradcheck_tolerance(), GC_FLOOR);
    run_cases(&t, gradcheck_op_cases, gradcheck_n_op_cases, only, &ran, &fails);
    /* whole-model cases (model/gradcheck_model.c): "layer", "encoder2", "token_head", "seq_head" */
    run_cases(&t, gradcheck_model_cases, gradcheck_n_model_cases, only, &ran, &fails);
    tape_free(&t);
    if (!ran) {
        fprintf(stderr, "error: gradcheck: no case for op '%s'\n", only ? only : "?");
        return 2;
    }
    printf("%d cases, %d failed\n", ran, fails);
    return fails ? 1 : 0;
}
