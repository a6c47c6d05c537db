/* cmd_dump_encoder.c — `deberta dump-encoder`: the encoder half of the parity contract
 * (docs/FORMATS.md "Parity and dump files", encoder parity), compared against
 * scripts/reference/deberta_ref.py by tests/e2e-parity-encoder.sh.  The pass itself (forward, loss,
 * backward, the output file) is train/parity/dump_encoder.h; this file reads the weights and inputs files.
 *
 *   deberta dump-encoder --init --out W.h5 [--preset P] [--KEY VALUE ...] [--seed N] [--perturb]
 *       a bare encoder ("deberta." names) initialised per spec §4.8 (--perturb also randomises
 *       biases and LayerNorm affine), written as a weights file: one root dataset per parameter,
 *       the config as root attributes.
 *   deberta dump-encoder --weights W.h5 --inputs I.h5 --out O.h5
 *       forward (dropout off) of input_ids/attention_mask, loss = Σ last_hidden ⊙ loss_weight,
 *       backward; writes embedding_output, hidden_states/layer_N, loss, grad/<name>.
 *   With a task head (--init --head token|sequence --num-labels L writes classifier.* and, for
 *   sequence, pooler.dense.*; a weights file holding classifier.weight runs it): the loss is the
 *   head's cross-entropy on the inputs' `labels` ([B,T] token, [B] sequence; -100 ignored) instead
 *   of the loss_weight sum, and `logits` is written too.  --head regression writes a sequence head
 *   with one output; a weights file with one output run on float `labels` [B] is the regression
 *   head, its loss the MSE.
 */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "data/h5util.h"
#include "model/encoder.h"
#include "model/init.h"
#include "model/task_head.h"
#include "train/cli/cli.h"
#include "train/h5io.h"
#include "train/outpath.h"
#include "train/parity/dump_encoder.h"

static void usage(FILE *f) {
    fprintf(f, "usage: deberta dump-encoder --init --out W.h5 [--preset tiny|xsmall|test] [--KEY VALUE ...] [--seed N] [--perturb]\n"
               "                                  [--head token|sequence --num-labels L | --head regression]\n"
               "       deberta dump-encoder --weights W.h5 --inputs I.h5 --out O.h5\n"
               "Encoder parity files (docs/FORMATS.md, \"Parity and dump files\"): --init writes a weights file\n"
               "(\"deberta.\" parameter names, config as root attributes); the second form runs the encoder with\n"
               "dropout off on input_ids/attention_mask and writes embedding_output, hidden_states/layer_N, the\n"
               "loss sum(last_hidden * loss_weight) and grad/<name> of every parameter.\n");
}

/* ---------------- weights writer ---------------- */

static int write_weights(const char *path, const ParamSet *ps, const ModelConfig *c, char *err, size_t errlen) {
    H5Out o;
    if (h5out_create(&o, "weights", path, 0, err, errlen) != 0) return -1;
    for (int i = 0; i < ps->n; i++) h5out_real(&o, ps->params[i]->name, ps->params[i]->ndim, ps->params[i]->shape, ps->params[i]->data);
    /* the root attributes the reference reads (docs/FORMATS.md, Weights file) */
    h5out_attr_i64(&o, "hidden_size", c->hidden_size);
    h5out_attr_i64(&o, "num_hidden_layers", c->num_hidden_layers);
    h5out_attr_i64(&o, "num_attention_heads", c->num_attention_heads);
    h5out_attr_i64(&o, "attention_head_size", c->attention_head_size);
    h5out_attr_i64(&o, "intermediate_size", c->intermediate_size);
    h5out_attr_i64(&o, "vocab_size", c->vocab_size);
    h5out_attr_i64(&o, "max_position_embeddings", c->max_position_embeddings);
    h5out_attr_i64(&o, "position_buckets", c->position_buckets);
    h5out_attr_i64(&o, "max_relative_positions", c->max_relative_positions);
    h5out_attr_f64(&o, "layer_norm_eps", c->layer_norm_eps);
    h5out_attr_bytes(&o, "pos_att_type", config_terms_str(c->att_terms));
    h5out_attr_f64(&o, "hidden_dropout_prob", c->hidden_dropout_prob);
    h5out_attr_f64(&o, "attention_probs_dropout_prob", c->attention_probs_dropout_prob);
    h5out_attr_bytes(&o, "producer", "deberta dump-encoder --init");
    return h5out_close(&o, err, errlen);
}

/* ---------------- inputs ---------------- */

/* Reads dataset `name` of rank ndim into a malloc'd buffer of memory type mt (int32 or real);
 * shape out.  Exits with one clear line on a missing dataset, wrong rank or wrong class. */
static void *read_ds(hid_t f, const char *path, const char *name, int ndim, hsize_t *dims, int want_float) {
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) fatal("inputs %s: dataset '%s' missing (docs/FORMATS.md, encoder parity)", path, name);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), s = H5Dget_space(d), ty = H5Dget_type(d);
    if (H5Sget_simple_extent_ndims(s) != ndim) fatal("inputs %s: dataset '%s' must have %d dimensions", path, name, ndim);
    H5Sget_simple_extent_dims(s, dims, NULL);
    const H5T_class_t cl = H5Tget_class(ty);
    if (want_float ? cl != H5T_FLOAT : cl != H5T_INTEGER)
        fatal("inputs %s: dataset '%s' has the wrong type (expected %s)", path, name, want_float ? "float" : "integer");
    long n = 1;
    for (int i = 0; i < ndim; i++) n *= (long)dims[i];
    void *buf = xmalloc((size_t)(n ? n : 1) * (want_float ? sizeof(real) : sizeof(int32_t)));
    if (H5Dread(d, want_float ? H5T_REAL_NATIVE : H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
        fatal("inputs %s: cannot read dataset '%s'", path, name);
    H5Tclose(ty);
    H5Sclose(s);
    H5Dclose(d);
    return buf;
}

/* 1 when the weights file has a task head (classifier.weight [L, H]): its kind (pooler.dense.*: a
 * sequence head; one output and float labels in the inputs: the regression head) and L. */
static int weights_head(const char *wpath, const char *ipath, HeadKind *kind, int *n_labels) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int has_head = 0;
    *n_labels = 0;
    *kind = HEAD_TOKEN;
    hid_t wf = H5Fopen(wpath, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (wf >= 0 && H5Lexists(wf, "classifier.weight", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(wf, "classifier.weight", H5P_DEFAULT), sp = H5Dget_space(d);
        hsize_t dims[2] = {0, 0};
        if (H5Sget_simple_extent_ndims(sp) == 2) H5Sget_simple_extent_dims(sp, dims, NULL);
        H5Sclose(sp);
        H5Dclose(d);
        if (dims[0] < 1) fatal("weights %s: classifier.weight must be [num_labels, hidden]", wpath);
        has_head = 1;
        *n_labels = (int)dims[0];
        *kind = H5Lexists(wf, "pooler.dense.weight", H5P_DEFAULT) > 0 ? HEAD_SEQUENCE : HEAD_TOKEN;
    }
    if (wf >= 0) H5Fclose(wf);
    /* one output and float labels: the regression head (MSE) */
    hid_t inf = *kind == HEAD_SEQUENCE && *n_labels == 1 ? H5Fopen(ipath, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
    if (inf >= 0 && H5Lexists(inf, "labels", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(inf, "labels", H5P_DEFAULT), ty = H5Dget_type(d);
        if (H5Tget_class(ty) == H5T_FLOAT) *kind = HEAD_REGRESSION;
        H5Tclose(ty);
        H5Dclose(d);
    }
    if (inf >= 0) H5Fclose(inf);
    return has_head;
}

/* The inputs file (sealed or plain): input_ids, attention_mask, and loss_weight [B,T,H] (no head) or
 * labels (a head), checked against the config; the buffers are malloc'd. */
static void read_inputs(const char *ipath, const ModelConfig *cfg, const TaskHead *head, DumpEncoderInput *in) {
    char err[1024];
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (h5_seal_verify_if_present(ipath, err, sizeof err) != 0) fatal("inputs %s: %s", ipath, err);
    hid_t f = H5Fopen(ipath, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) fatal("inputs %s: cannot open as HDF5", ipath);
    hsize_t di[2], dm[2], dw[3], dl[2];
    const HeadKind kind = head ? head->kind : HEAD_TOKEN;
    in->ids = read_ds(f, ipath, "input_ids", 2, di, 0);
    in->mask = read_ds(f, ipath, "attention_mask", 2, dm, 0);
    in->loss_weight = head ? NULL : read_ds(f, ipath, "loss_weight", 3, dw, 1);
    in->labels = head ? read_ds(f, ipath, "labels", kind == HEAD_TOKEN ? 2 : 1, dl, kind == HEAD_REGRESSION) : NULL;
    H5Fclose(f);
    const int B = in->B = (int)di[0], T = in->T = (int)di[1], H = cfg->hidden_size;
    if (dm[0] != di[0] || dm[1] != di[1]) fatal("inputs %s: attention_mask shape differs from input_ids [%d, %d]", ipath, B, T);
    if (!head && ((int)dw[0] != B || (int)dw[1] != T || (int)dw[2] != H)) fatal("inputs %s: loss_weight must be [%d, %d, %d]", ipath, B, T, H);
    if (head && ((int)dl[0] != B || (kind == HEAD_TOKEN && (int)dl[1] != T)))
        fatal("inputs %s: labels must be [%d%s]", ipath, B, kind == HEAD_TOKEN ? ", T" : "");
    for (long i = 0; i < (long)B * T; i++) {
        if (in->ids[i] < 0 || in->ids[i] >= cfg->vocab_size) fatal("inputs %s: input_ids[%ld] = %d outside [0, %d)", ipath, i, in->ids[i], cfg->vocab_size);
        if (in->mask[i] != 0 && in->mask[i] != 1) fatal("inputs %s: attention_mask[%ld] = %d (0 or 1)", ipath, i, in->mask[i]);
    }
}

static int run_encoder(const char *wpath, const char *ipath, const char *opath) {
    char err[1024];
    ModelConfig cfg;
    config_defaults(&cfg);
    int has_msl = 0;
    if (h5io_read_config(wpath, &cfg, NULL, &has_msl, err, sizeof err)) fatal("%s", err);
    if (!has_msl && cfg.max_seq_len > cfg.max_position_embeddings) cfg.max_seq_len = cfg.max_position_embeddings;
    if (config_validate(&cfg, err, sizeof err)) fatal("weights %s: %s", wpath, err);
    ParamSet ps;
    params_init(&ps);
    Encoder e;
    encoder_register(&e, &ps, &cfg, cfg.num_hidden_layers, "deberta.", 0);
    HeadKind kind;
    int n_labels;
    TaskHead head;
    const int has_head = weights_head(wpath, ipath, &kind, &n_labels);
    if (has_head) task_head_register(&head, &ps, kind, cfg.hidden_size, n_labels, 0, 0, "");
    params_finalize(&ps);
    if (h5io_read_params(wpath, &ps, err, sizeof err)) fatal("%s", err);
    DumpEncoderInput in;
    read_inputs(ipath, &cfg, has_head ? &head : NULL, &in);
    long double loss;
    if (dump_encoder_pass(&e, &ps, has_head ? &head : NULL, &in, opath, &loss, err, sizeof err)) fatal("%s", err);
    printf("dump-encoder: B=%d T=%d layers=%d terms=%s loss=%.9g -> %s\n", in.B, in.T, e.n_layers, config_terms_str(cfg.att_terms),
           (double)loss, opath);
    free((void *)in.ids);
    free((void *)in.mask);
    free((void *)in.loss_weight);
    free((void *)in.labels);
    encoder_free(&e);
    params_free(&ps);
    return 0;
}

/* --init: a bare encoder (and head) initialised per spec §4.8, written as a weights file. */
static int init_weights(ModelConfig *cfg, const char *out, const char *head, int n_labels, unsigned long long seed, int perturb) {
    char err[1024];
    if (config_validate(cfg, err, sizeof err)) fatal("dump-encoder: %s", err);
    ParamSet ps;
    params_init(&ps);
    Encoder e;
    encoder_register(&e, &ps, cfg, cfg->num_hidden_layers, "deberta.", 0);
    if (head) {
        const int reg = !strcmp(head, "regression");
        if (reg) n_labels = n_labels ? n_labels : 1;
        if ((strcmp(head, "token") && strcmp(head, "sequence") && !reg) || n_labels < 1 || (reg && n_labels != 1))
            fatal("dump-encoder: --head token|sequence needs --num-labels L >= 1 (regression: one output)");
        TaskHead th;
        task_head_register(&th, &ps, !strcmp(head, "token") ? HEAD_TOKEN : reg ? HEAD_REGRESSION : HEAD_SEQUENCE, cfg->hidden_size,
                           n_labels, 0, 0, "");
    }
    params_finalize(&ps);
    model_init_params(&ps, cfg->initializer_range, seed);
    if (perturb) model_perturb_params(&ps, seed + 1);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (write_weights(out, &ps, cfg, err, sizeof err)) fatal("%s", err);
    printf("dump-encoder: %d parameters (%ld values, %s) -> %s\n", ps.n, params_count(&ps), REAL_NAME, out);
    encoder_free(&e);
    params_free(&ps);
    return 0;
}

int cmd_dump_encoder(int argc, char **argv) {
    DumpEncoderOptions o;
    dump_encoder_options_default(&o);
    ModelConfig cfg;
    config_defaults(&cfg);
    char err[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = config_parse_flag(&cfg, argc, argv, &i, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "error: dump-encoder: %s\n", err);
            return 2;
        }
        if (r > 0) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        r = strncmp(a, "--", 2) ? 0 : dump_encoder_options_set_flag(&o, a + 2, i + 1 < argc ? argv[i + 1] : NULL, err, sizeof err);
        if (r < 0) return cli_usage_error("dump-encoder", "%s", err);
        if (r == 0) return cli_usage_error("dump-encoder", "unknown or incomplete argument '%s'", a);
        i += r == 1;
    }
    if (!o.out[0]) {
        return cli_usage_error("dump-encoder", "--out is required");
    }
    const char *ins[2] = {o.weights[0] ? o.weights : NULL, o.inputs[0] ? o.inputs : NULL};
    if (out_path_check("--out", o.out, OUT_FILE, ins, 2, err, sizeof err)) fatal("dump-encoder: %s", err);
    if (!o.init) {
        if (!o.weights[0] || !o.inputs[0]) {
            fprintf(stderr, "error: dump-encoder: --weights and --inputs are required (or --init)\n");
            return 2;
        }
        return run_encoder(o.weights, o.inputs, o.out);
    }
    return init_weights(&cfg, o.out, o.head[0] ? o.head : NULL, o.num_labels, o.seed, o.perturb);
}
