/* dump_encoder.c — one encoder parity pass; see dump_encoder.h. */
#include "train/parity/dump_encoder.h"
#include <stdio.h>
#include <string.h>
#include "autograd/tape.h"
#include "autograd/base/keytable.h"
#include "data/h5util.h"

void dump_encoder_options_default(DumpEncoderOptions *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
}

#define F(m) KEY_FIELD(DumpEncoderOptions, m)
#define STR(fl, m) {NULL, fl, NULL, KEY_STR, F(m), 0, 0, "", 0, NULL}
static const KeyRow KEYS[] = {
    {NULL, "init", NULL, KEY_BOOL, F(init), 0, 0, "", 0, NULL},
    {NULL, "perturb", NULL, KEY_BOOL, F(perturb), 0, 0, "", 0, NULL},
    STR("weights", weights), STR("inputs", inputs), STR("out", out), STR("head", head),
    {NULL, "num-labels", NULL, KEY_INT, F(num_labels), 1, 0, "a positive integer", 0, NULL},
    {NULL, "seed", NULL, KEY_U64, F(seed), 0, 0, "a non-negative integer", 0, NULL},
};
#undef STR
#undef F

int dump_encoder_options_set_flag(DumpEncoderOptions *o, const char *flag, const char *value, char *err, size_t errlen) {
    return key_set_flag(KEYS, (int)(sizeof KEYS / sizeof KEYS[0]), o, flag, value, err, errlen);
}

int dump_encoder_pass(Encoder *e, ParamSet *ps, TaskHead *head, const DumpEncoderInput *in, const char *path, long double *loss, char *err,
                      size_t errlen) {
    const int B = in->B, T = in->T;
    Tape t;
    tape_init(&t, 1 << 24);
    t.training = 0; /* parity: dropout off */
    EncoderOut out;
    Tensor *last = encoder_forward(&t, e, NULL, in->ids, in->mask, B, T, &out);
    *loss = 0; /* loss = Σ last ⊙ loss_weight; d loss / d last = loss_weight */
    params_zero_grad(ps);
    TaskHeadOut ho;
    if (head) {
        Tensor *l = head->kind == HEAD_REGRESSION ? task_head_mse(&t, head, last, B, T, in->mask, in->labels, &ho)
                                                  : task_head_forward(&t, head, last, B, T, in->mask, in->labels, &ho);
        *loss = l->data[0];
        tape_backward(&t, l, 1);
    } else {
        for (long i = 0; i < last->n; i++) *loss += (long double)last->data[i] * in->loss_weight[i];
        tape_backward_from(&t, last, in->loss_weight);
    }
    H5Out w;
    if (h5out_create(&w, "output", path, 0, err, errlen)) return tape_free(&t), -1;
    h5out_real(&w, "embedding_output", 3, out.emb->shape, out.emb->data);
    char name[600];
    for (int l = 0; l < e->n_layers; l++) {
        snprintf(name, sizeof name, "hidden_states/layer_%d", l);
        h5out_real(&w, name, 3, out.layers[l]->shape, out.layers[l]->data);
    }
    const real lv = (real)*loss;
    h5out_real(&w, "loss", 0, NULL, &lv);
    if (head) h5out_real(&w, "logits", 2, ho.logits->shape, ho.logits->data);
    for (int i = 0; i < ps->n; i++) {
        snprintf(name, sizeof name, "grad/%s", ps->params[i]->name);
        h5out_real(&w, name, ps->params[i]->ndim, ps->params[i]->shape, ps->params[i]->grad);
    }
    h5out_attr_bytes(&w, "producer", "deberta dump-encoder");
    const int rc = h5out_close(&w, err, errlen);
    tape_free(&t);
    return rc;
}
