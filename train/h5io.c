/* h5io.c — plain-HDF5 parity files: weights and the full-model batch.  See h5io.h. */
#include "train/h5io.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "autograd/base/util.h"
#include "data/h5util.h"

/* Errors are one line "<what> <path>: <message>" (data/h5util.h): what is "weights", "batch" or "output". */

static hid_t open_file(H5Ctx *c) {
    if (access(c->path, R_OK) != 0) {
        h5ctx_fail(c, "cannot open (%s)", strerror(errno));
        return -1;
    }
    /* these files come from the reference or h5py and carry no seal; a sealed one (a checkpoint,
     * a shard) is checked before libhdf5 sees it */
    char msg[1024];
    if (h5_seal_verify_if_present(c->path, msg, sizeof msg) != 0) {
        h5ctx_fail(c, "%s", msg);
        return -1;
    }
    if (H5Fis_hdf5(c->path) <= 0) {
        h5ctx_fail(c, "not an HDF5 file (or truncated)");
        return -1;
    }
    hid_t f = H5Fopen(c->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) h5ctx_fail(c, "cannot open as HDF5 (truncated or corrupt?)");
    return f;
}

/* ---- config from root attributes ---- */

static const char *const FULL_KEYS[] = {"gen_num_hidden_layers", "embedding_sharing", "rtd_lambda", "use_emd", "training_mode"};

typedef struct AttrIter {
    H5Ctx *c;
    ModelConfig *cfg;
    int n_full, has_msl, rc;
} AttrIter;

/* Reads a scalar attribute as text ("%lld", "%.17g", the string, or an enum's value as for numpy
 * bools). 0 ok, -1 unreadable.  Class, size, precision and element count are checked
 * (h5_scalar_sane) before H5Aread. */
static int attr_text(hid_t a, char *out, size_t len) {
    if (!h5_scalar_sane(a, 1)) return -1;
    hid_t t = H5Aget_type(a), s = H5Aget_space(a);
    int rc = -1;
    const hssize_t npts = H5Sget_simple_extent_npoints(s);
    const H5T_class_t cl = H5Tget_class(t);
    if (npts == 1 && cl == H5T_INTEGER) {
        long long v;
        if (H5Aread(a, H5T_NATIVE_LLONG, &v) >= 0) rc = snprintf(out, len, "%lld", v) > 0 ? 0 : -1;
    } else if (npts == 1 && cl == H5T_ENUM && H5Tget_size(t) <= 8) {
        /* numpy bool (h5py: enum FALSE=0/TRUE=1 over int8): the value bytes, little-endian host */
        hid_t nt = H5Tget_native_type(t, H5T_DIR_ASCEND);
        unsigned long long v = 0;
        if (nt >= 0 && H5Aread(a, nt, &v) >= 0) rc = snprintf(out, len, "%llu", v) > 0 ? 0 : -1;
        if (nt >= 0) H5Tclose(nt);
    } else if (npts == 1 && cl == H5T_FLOAT) {
        double v;
        if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0) rc = snprintf(out, len, "%.17g", v) > 0 ? 0 : -1;
    } else if (npts == 1 && cl == H5T_STRING) {
        char *v = h5_read_string(a, 1, H5Tget_cset(t)); /* h5py writes str as UTF-8 */
        if (v) {
            snprintf(out, len, "%s", v);
            free(v);
            rc = 0;
        }
    }
    H5Sclose(s);
    H5Tclose(t);
    return rc;
}

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data) {
    AttrIter *it = data;
    if (!strcmp(name, "preset")) return 0; /* would reset every field */
    ModelConfig probe = *it->cfg;
    char msg[256], text[512];
    /* not a config key (e.g. "producer"): ignore */
    if (config_set(&probe, name, "0", msg, sizeof msg) != 0 && !strncmp(msg, "unknown config key", 18)) return 0;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0 || attr_text(a, text, sizeof text) != 0) {
        if (a >= 0) H5Aclose(a);
        it->rc = h5ctx_fail(it->c, "root attribute '%s' is not a readable scalar integer, float or string", name);
        return 1;
    }
    H5Aclose(a);
    if (config_set(it->cfg, name, text, msg, sizeof msg) != 0) {
        it->rc = h5ctx_fail(it->c, "root attribute %s", msg);
        return 1;
    }
    for (size_t i = 0; i < sizeof FULL_KEYS / sizeof FULL_KEYS[0]; i++) it->n_full += !strcmp(name, FULL_KEYS[i]);
    it->has_msl |= !strcmp(name, "max_seq_len");
    return 0;
}

int h5io_read_config(const char *path, ModelConfig *cfg, int *n_full, int *has_max_seq_len, char *err, size_t errlen) {
    H5Ctx c;
    h5ctx_begin(&c, "weights", path, err, errlen);
    hid_t f = open_file(&c);
    if (f < 0) return h5ctx_end(&c, -1);
    AttrIter it = {&c, cfg, 0, 0, 0};
    hsize_t idx = 0;
    if (H5Aiterate2(f, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_cb, &it) < 0 && !it.rc)
        it.rc = h5ctx_fail(&c, "cannot list the root attributes");
    H5Fclose(f);
    if (n_full) *n_full = it.n_full;
    if (has_max_seq_len) *has_max_seq_len = it.has_msl;
    return h5ctx_end(&c, it.rc);
}

int h5io_is_checkpoint(const char *path) {
    char msg[512];
    struct stat sb;
    /* sealed (intact or not): one of deberta.c's training files; the checkpoint reader checks the seal and says */
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && h5_seal_check(path, msg, sizeof msg) != H5_SEAL_NONE) return 1;
    H5Ctx c;
    h5ctx_begin(&c, "weights", path, NULL, 0); /* no message: a plain yes or no */
    hid_t f = open_file(&c);
    const int yes = f >= 0 && H5Aexists(f, "format") > 0;
    if (f >= 0) H5Fclose(f);
    return h5ctx_end(&c, yes);
}

/* ---- parameters ---- */

typedef struct DsList {
    char **path;   /* HDF5 path of each dataset */
    char **name;   /* the same with '/' -> '.' */
    int n, cap;
    hid_t f;
} DsList;

static herr_t list_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    DsList *l = data;
    if (info->type != H5L_TYPE_HARD) return 0;
    hid_t d = H5Dopen2(l->f, name, H5P_DEFAULT);
    if (d < 0) return 0; /* a group */
    H5Dclose(d);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->path = xrealloc(l->path, (size_t)l->cap * sizeof(char *));
        l->name = xrealloc(l->name, (size_t)l->cap * sizeof(char *));
    }
    l->path[l->n] = xstrdup(name);
    l->name[l->n] = xstrdup(name);
    for (char *p = l->name[l->n]; *p; p++)
        if (*p == '/') *p = '.';
    l->n++;
    return 0;
}

static void dslist_free(DsList *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->path[i]);
        free(l->name[i]);
    }
    free(l->path);
    free(l->name);
}

static int load_param(H5Ctx *c, hid_t f, const char *dpath, Tensor *t) {
    hid_t d = H5Dopen2(f, dpath, H5P_DEFAULT);
    if (d < 0) return h5ctx_fail(c, "cannot open dataset '%s' (truncated or corrupt file?)", dpath);
    int rc = h5_read_tensor(c, d, t, t->data, "parameter", "do the root attributes match the tensors?", NULL);
    H5Dclose(d);
    return rc;
}

int h5io_read_params(const char *path, ParamSet *ps, char *err, size_t errlen) {
    H5Ctx c;
    h5ctx_begin(&c, "weights", path, err, errlen);
    if (!ps->finalized) return h5ctx_end(&c, h5ctx_fail(&c, "the parameter set is not finalized"));
    hid_t f = open_file(&c);
    if (f < 0) return h5ctx_end(&c, -1);
    DsList l = {0};
    l.f = f;
    int rc = 0;
    if (H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, list_cb, &l) < 0) rc = h5ctx_fail(&c, "cannot list the datasets");
    /* extra tensors first: they usually mean a config mismatch (e.g. another sharing mode) */
    for (int i = 0; !rc && i < l.n; i++)
        if (!params_find(ps, l.name[i]))
            rc = h5ctx_fail(&c, "has tensor '%s' that the model does not have (wrong embedding_sharing, layer counts or names?)",
                            l.path[i]);
    for (int p = 0; !rc && p < ps->n; p++) {
        Tensor *t = ps->params[p];
        int k = -1;
        for (int i = 0; i < l.n && k < 0; i++)
            if (!strcmp(l.name[i], t->name)) k = i;
        if (k < 0) rc = h5ctx_fail(&c, "parameter '%s' is missing", t->name);
        else rc = load_param(&c, f, l.path[k], t);
    }
    dslist_free(&l);
    H5Fclose(f);
    return h5ctx_end(&c, rc);
}

/* ---- batch ---- */

/* Reads an integer [B,T] dataset; *B, *T set by the first call (when *B == 0), checked after. */
static int read_ids(H5Ctx *c, hid_t f, const char *name, int *B, int *T, int32_t **out) {
    *out = NULL;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return h5ctx_fail(c, "dataset '%s' is missing", name);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return h5ctx_fail(c, "cannot open dataset '%s'", name);
    hid_t ty = H5Dget_type(d), sp = H5Dget_space(d);
    int rc = 0;
    if (H5Tget_class(ty) != H5T_INTEGER) {
        char ds[32];
        h5_dtype_str(ds, sizeof ds, ty);
        rc = h5ctx_fail(c, "dataset '%s' has dtype %s, expected int32", name, ds);
    }
    hsize_t dims[H5S_MAX_RANK];
    int nd = rc ? 0 : H5Sget_simple_extent_ndims(sp);
    if (!rc && nd != 2) rc = h5ctx_fail(c, "dataset '%s' has %d dimensions, expected 2 ([B, T])", name, nd);
    if (!rc) {
        H5Sget_simple_extent_dims(sp, dims, NULL);
        if (dims[0] < 1 || dims[1] < 1 || dims[0] > 1u << 20 || dims[1] > 1u << 20)
            rc = h5ctx_fail(c, "dataset '%s' has shape [%llu, %llu]", name, (unsigned long long)dims[0], (unsigned long long)dims[1]);
        else if (*B == 0) {
            *B = (int)dims[0];
            *T = (int)dims[1];
        } else if (dims[0] != (hsize_t)*B || dims[1] != (hsize_t)*T)
            rc = h5ctx_fail(c, "dataset '%s' has shape [%llu, %llu], input_ids has [%d, %d]", name, (unsigned long long)dims[0],
                            (unsigned long long)dims[1], *B, *T);
    }
    if (!rc) {
        *out = xmalloc((size_t)*B * *T * sizeof(int32_t));
        if (H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
            rc = h5ctx_fail(c, "cannot read dataset '%s' (values outside int32, or a corrupt file?)", name);
            free(*out);
            *out = NULL;
        }
    }
    H5Sclose(sp);
    H5Tclose(ty);
    H5Dclose(d);
    return rc;
}

static int check_range(H5Ctx *c, const char *name, const int32_t *a, int B, int T, int lo, int hi, const char *what) {
    for (long i = 0; i < (long)B * T; i++)
        if (a[i] < lo || a[i] >= hi)
            return h5ctx_fail(c, "%s[%ld, %ld] = %d is outside %s [%d, %d)", name, i / T, i % T, a[i], what, lo, hi);
    return 0;
}

int h5io_read_batch(const char *path, int vocab, int max_pos, Batch *b, int32_t **replaced, int32_t **position_ids, char *err,
                    size_t errlen) {
    H5Ctx c;
    h5ctx_begin(&c, "batch", path, err, errlen);
    memset(b, 0, sizeof *b);
    *replaced = NULL;
    *position_ids = NULL;
    hid_t f = open_file(&c);
    if (f < 0) return h5ctx_end(&c, -1);
    int B = 0, T = 0;
    int32_t *ids = NULL, *mask = NULL, *labels = NULL, *rep = NULL, *pos = NULL;
    int rc = read_ids(&c, f, "input_ids", &B, &T, &ids);
    if (!rc) rc = read_ids(&c, f, "attention_mask", &B, &T, &mask);
    if (!rc) rc = read_ids(&c, f, "labels", &B, &T, &labels);
    if (!rc) rc = read_ids(&c, f, "replaced_ids", &B, &T, &rep);
    if (!rc && H5Lexists(f, "position_ids", H5P_DEFAULT) > 0) rc = read_ids(&c, f, "position_ids", &B, &T, &pos);
    H5Fclose(f);
    if (!rc) rc = check_range(&c, "input_ids", ids, B, T, 0, vocab, "the vocabulary");
    if (!rc) rc = check_range(&c, "attention_mask", mask, B, T, 0, 2, "the mask values");
    if (!rc) rc = check_range(&c, "labels", labels, B, T, 0, vocab, "the vocabulary");
    if (!rc) rc = check_range(&c, "replaced_ids", rep, B, T, 0, vocab, "the vocabulary");
    if (!rc && pos) rc = check_range(&c, "position_ids", pos, B, T, 0, max_pos, "the position table");
    int n_masked = 0, n_tokens = 0;
    for (long i = 0; !rc && i < (long)B * T; i++) {
        if (labels[i] > 0 && !mask[i])
            rc = h5ctx_fail(&c, "labels[%ld, %ld] = %d is at a padded position (attention_mask 0)", i / T, i % T, labels[i]);
        n_masked += labels[i] > 0;
        n_tokens += mask[i];
    }
    if (!rc && n_masked == 0) rc = h5ctx_fail(&c, "no masked position (labels > 0 nowhere); the MLM loss is undefined");
    if (rc) {
        free(ids), free(mask), free(labels), free(rep), free(pos);
        return h5ctx_end(&c, -1);
    }
    batch_alloc(b, B, T);
    memcpy(b->input_ids, ids, (size_t)B * T * sizeof(int32_t));
    memcpy(b->attention_mask, mask, (size_t)B * T * sizeof(int32_t));
    memcpy(b->labels, labels, (size_t)B * T * sizeof(int32_t));
    b->n_masked = n_masked;
    b->n_tokens = n_tokens;
    free(ids), free(mask), free(labels);
    *replaced = rep;
    *position_ids = pos;
    return h5ctx_end(&c, 0);
}
