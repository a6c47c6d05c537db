/* checkpoint.c — HDF5 checkpoints: atomic write, validating load.  See checkpoint.h. */
#include "train/checkpoint.h"
#include "autograd/base/util.h"
#include "model/config.h"
#include "data/h5util.h"
#include "data/tokenizer.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- write ---- */

/* A parameter or moment: with no zero dimension (ndim >= 1) chunked by rows (chunks of at most
 * 16 MiB) with HDF5's Fletcher-32 filter, so that every read verifies the data against its
 * checksum; otherwise contiguous. */
static int write_checked(H5Out *o, hid_t loc, const char *name, int ndim, const hsize_t *dims, const void *buf) {
    H5Store st = {.fletcher32 = 1};
    hsize_t row = sizeof(real);
    int chunked = ndim > 0;
    for (int i = 0; i < ndim; i++) {
        chunked &= dims[i] > 0;
        st.chunk[i] = dims[i];
        if (i) row *= dims[i];
    }
    const hsize_t max_rows = MAX((hsize_t)1, ((hsize_t)16 << 20) / (row ? row : 1));
    if (st.chunk[0] > max_rows) st.chunk[0] = max_rows;
    return h5out_dataset(o, loc, name, H5T_REAL_FILE, H5T_REAL_NATIVE, ndim, dims, buf, chunked ? &st : NULL);
}

/* A NUL-terminated string as a scalar dataset (strlen + 1 bytes, NULLTERM). */
static int write_str_dataset(H5Out *o, const char *name, const char *val) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(val) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    const int r = h5out_dataset(o, H5OUT_ROOT, name, t, t, 0, NULL, val, NULL);
    H5Tclose(t);
    return r;
}

static int write_tensors(H5Out *o, hid_t grp, const ParamSet *ps, const real *base, long *n_written, long crash_after) {
    for (int i = 0; i < ps->n; i++) {
        const Tensor *t = ps->params[i];
        if (strchr(t->name, '/')) return h5out_fail(o, "parameter name '%s' contains '/'", t->name);
        hsize_t dims[TENSOR_MAX_DIMS];
        for (int k = 0; k < t->ndim; k++) dims[k] = (hsize_t)t->shape[k];
        if (write_checked(o, grp, t->name, t->ndim, dims, base + ps->offset[i]) < 0) return -1;
        ++*n_written;
        if (crash_after >= 0 && *n_written >= crash_after) raise(SIGKILL); /* crash-safety test hook */
    }
    return 0;
}

/* names[i], bufs[i]: the optimizer's n state buffers (/optim/<names[i]>) */
static int write_file(H5Out *o, const ParamSet *ps, int n_state, const char *const *names, real *const *bufs, const CheckpointState *st) {
    const char *env = getenv(CHECKPOINT_CRASH_ENV);
    const long crash_after = env && *env ? atol(env) : -1;
    const uint64_t seed = st->seed;
    const int32_t version = CHECKPOINT_VERSION;
    h5out_attr_str(o, "format", CHECKPOINT_FORMAT);
    h5out_attr(o, "version", H5T_STD_I32LE, H5T_NATIVE_INT32, &version);
    h5out_attr_str(o, "real", REAL_NAME);
    h5out_attr_i64(o, "step", st->step);
    h5out_attr(o, "seed", H5T_STD_U64LE, H5T_NATIVE_UINT64, &seed);
    h5out_attr_i64(o, "n_params", ps->n);
    if (st->tokenizer && st->n_tokenizer) {
        char hash[17];
        tokenizer_hash_bytes(st->tokenizer, st->n_tokenizer, hash);
        h5out_attr_str(o, "tokenizer_hash", hash);
    }
    long n_written = 0;
    hid_t gp = h5out_group(o, H5OUT_ROOT, "params"), go = h5out_group(o, H5OUT_ROOT, "optim"), gb[OPTIM_MAX_STATE];
    for (int b = 0; b < n_state; b++) {
        if (!strcmp(names[b], "step")) h5out_fail(o, "optimizer state named 'step'");
        gb[b] = h5out_group(o, go, names[b]);
    }
    hid_t gs = h5out_group(o, go, "step");
    write_tensors(o, gp, ps, ps->data, &n_written, crash_after);
    for (int b = 0; b < n_state; b++) write_tensors(o, gb[b], ps, bufs[b], &n_written, -1);
    for (int i = 0; i < st->n_groups; i++) {
        if (!st->group_name[i][0] || strchr(st->group_name[i], '/')) h5out_fail(o, "bad optimizer group name '%s'", st->group_name[i]);
        h5out_dataset(o, gs, st->group_name[i], H5T_STD_I64LE, H5T_NATIVE_INT64, 0, NULL, &st->group_step[i], NULL);
    }
    hsize_t n = (hsize_t)(st->loader_state ? st->n_loader_state : 0);
    h5out_dataset(o, H5OUT_ROOT, "loader_state", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, &n, st->loader_state, NULL);
    write_str_dataset(o, "config", st->config ? st->config : "");
    n = (hsize_t)(st->tokenizer ? st->n_tokenizer : 0);
    h5out_dataset(o, H5OUT_ROOT, "tokenizer", H5T_STD_U8LE, H5T_NATIVE_UCHAR, 1, &n, st->tokenizer, NULL);
    if (gs >= 0) H5Gclose(gs);
    for (int b = n_state - 1; b >= 0; b--)
        if (gb[b] >= 0) H5Gclose(gb[b]);
    if (go >= 0) H5Gclose(go);
    if (gp >= 0) H5Gclose(gp);
    return h5out_failed(o) ? -1 : 0;
}

int checkpoint_write(const char *path, const ParamSet *ps, const OptimMoments *mo, const CheckpointState *st, char *err, size_t errlen) {
    if (!ps->finalized) return errf(err, errlen, "checkpoint %s: the parameter set is not finalized", path);
    if (mo && mo->total != ps->total) return errf(err, errlen, "checkpoint %s: the moments are not those of this parameter set", path);
    H5Out o;
    if (h5out_create(&o, "checkpoint", path, 1, err, errlen) != 0) return -1;
    const Optimizer *opt = mo ? mo->opt : OPTIMIZERS[0];
    real *zeros = mo ? NULL : xcalloc_aligned((size_t)(ps->total ? ps->total : 1) * sizeof(real)), *bufs[OPTIM_MAX_STATE];
    for (int b = 0; b < opt->n_state; b++) bufs[b] = mo ? mo->buf[b] : zeros;
    write_file(&o, ps, opt->n_state, opt->state, bufs, st);
    free(zeros);
    return h5out_close(&o, err, errlen);
}

int checkpoint_save(const char *rundir, const ParamSet *ps, const OptimMoments *mo, const CheckpointState *st, int keep_numbered,
                    char *err, size_t errlen) {
    char path[4096], num[4096];
    snprintf(path, sizeof path, "%s/checkpoint.h5", rundir);
    if (checkpoint_write(path, ps, mo, st, err, errlen) < 0) return -1;
    if (!keep_numbered) return 0;
    snprintf(num, sizeof num, "%s/checkpoint-%07lld.h5", rundir, (long long)st->step);
    unlink(num);
    if (link(path, num) == 0) {
        fsync_dir_of(num);
        return 0;
    }
    /* file systems without hard links: a second (atomic) write */
    return checkpoint_write(num, ps, mo, st, err, errlen);
}

/* ---- read ---- */

void checkpoint_state_free(CheckpointState *st) {
    free(st->loader_state);
    free(st->config);
    free(st->tokenizer);
    memset(st, 0, sizeof *st);
}

int64_t checkpoint_group_step(const CheckpointState *st, const char *group) {
    for (int i = 0; i < st->n_groups; i++)
        if (!strcmp(st->group_name[i], group)) return st->group_step[i];
    return -1;
}

void checkpoint_set_group_step(CheckpointState *st, const char *group, int64_t step) {
    int i = 0;
    while (i < st->n_groups && strcmp(st->group_name[i], group)) i++;
    if (i == st->n_groups) {
        if (st->n_groups == CHECKPOINT_MAX_GROUPS) fatal("checkpoint: more than %d optimizer groups", CHECKPOINT_MAX_GROUPS);
        st->n_groups++;
        snprintf(st->group_name[i], CHECKPOINT_GROUP_NAME, "%s", group);
    }
    st->group_step[i] = step;
}

static int read_int_attr(H5Ctx *c, hid_t f, const char *name, hid_t mtype, void *out) {
    const int rc = h5_read_int_attr(f, name, mtype, out);
    if (rc == -1) return h5ctx_fail(c, "root attribute '%s' is missing (not a complete deberta.c checkpoint)", name);
    return rc ? h5ctx_fail(c, "root attribute '%s' is not one readable integer", name) : 0;
}

/* 1-D integer array of any length; *out malloc'd (NULL when empty). */
static int read_int_array(H5Ctx *c, hid_t f, const char *name, hid_t mtype, size_t elsize, void **out, long *n) {
    *out = NULL;
    *n = 0;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return h5ctx_fail(c, "dataset '%s' is missing", name);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return h5ctx_fail(c, "cannot open dataset '%s' (truncated or corrupt file?)", name);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    int rc = 0;
    hsize_t dims[1] = {0};
    if (H5Tget_class(t) != H5T_INTEGER || H5Sget_simple_extent_ndims(s) != 1) {
        char ds[32];
        h5_dtype_str(ds, sizeof ds, t);
        rc = h5ctx_fail(c, "dataset '%s' is %s with %d dimension(s), expected a 1-D integer array", name, ds,
                        H5Sget_simple_extent_ndims(s));
    } else {
        H5Sget_simple_extent_dims(s, dims, NULL);
        *n = (long)dims[0];
        if (dims[0]) {
            *out = xmalloc((size_t)dims[0] * elsize);
            if (H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
                rc = h5ctx_fail(c, "cannot read dataset '%s' (truncated or corrupt file?)", name);
        }
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
    return rc;
}

typedef struct GroupIter {
    H5Ctx *c;
    CheckpointState *st;
    int rc;
} GroupIter;

static herr_t group_step_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    GroupIter *it = data;
    if (it->st->n_groups == CHECKPOINT_MAX_GROUPS) {
        it->rc = h5ctx_fail(it->c, "more than %d optimizer groups in /optim/step", CHECKPOINT_MAX_GROUPS);
        return 1;
    }
    int64_t v = 0;
    hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
    hid_t ty = d >= 0 ? H5Dget_type(d) : -1;
    const int is_int = ty >= 0 && H5Tget_class(ty) == H5T_INTEGER;
    if (ty >= 0) H5Tclose(ty);
    if (d < 0 || !is_int || !h5_scalar_sane(d, 0) || H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0) {
        it->rc = h5ctx_fail(it->c, "cannot read /optim/step/%s", name);
        if (d >= 0) H5Dclose(d);
        return 1;
    }
    H5Dclose(d);
    checkpoint_set_group_step(it->st, name, v);
    return 0;
}

static hid_t open_checkpoint(H5Ctx *c, const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return h5ctx_fail(c, "cannot open: %s", strerror(errno));
    if (!S_ISREG(sb.st_mode)) return h5ctx_fail(c, "not a regular file");
    /* the seal first: libhdf5 never sees a damaged file (it can crash decoding corrupt metadata) */
    char serr[1024];
    if (h5_seal_require("checkpoint", path, "use an earlier checkpoint", serr, sizeof serr) != 0) {
        if (c->err && c->errlen && !c->err[0]) snprintf(c->err, c->errlen, "%s", serr);
        return -1;
    }
#if H5_VERSION_GE(1, 12, 0)
    if (H5Fis_accessible(path, H5P_DEFAULT) <= 0) {
#else
    if (H5Fis_hdf5(path) <= 0) {
#endif
        return h5ctx_fail(c, "not a readable HDF5 file (truncated or corrupt?)");
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) h5ctx_fail(c, "cannot be opened as HDF5 (truncated or corrupt?)");
    return f;
}

static int read_state(H5Ctx *c, hid_t f, CheckpointState *st) {
    memset(st, 0, sizeof *st);
    if (H5Aexists(f, "format") <= 0) return h5ctx_fail(c, "no 'format' attribute: not a deberta.c checkpoint");
    char *fmt = h5_read_str_attr(f, "format");
    if (!fmt || strcmp(fmt, CHECKPOINT_FORMAT)) {
        h5ctx_fail(c, "format is '%s', expected '%s'", fmt ? fmt : "?", CHECKPOINT_FORMAT);
        free(fmt);
        return -1;
    }
    free(fmt);
    int32_t version = 0;
    if (read_int_attr(c, f, "version", H5T_NATIVE_INT32, &version) < 0) return -1;
    if (version < CHECKPOINT_VERSION_MIN || version > CHECKPOINT_VERSION)
        return h5ctx_fail(c, "format version %d, this build reads versions %d to %d (use the deberta.c that wrote it)", (int)version,
                          CHECKPOINT_VERSION_MIN, CHECKPOINT_VERSION);
    st->version = version;
    int64_t step = 0;
    uint64_t seed = 0;
    if (read_int_attr(c, f, "step", H5T_NATIVE_INT64, &step) < 0 || read_int_attr(c, f, "seed", H5T_NATIVE_UINT64, &seed) < 0) return -1;
    st->step = step;
    st->seed = seed;
    if (H5Lexists(f, "optim", H5P_DEFAULT) <= 0 || H5Lexists(f, "optim/step", H5P_DEFAULT) <= 0)
        return h5ctx_fail(c, "group '/optim/step' is missing");
    hid_t gs = H5Gopen2(f, "optim/step", H5P_DEFAULT);
    if (gs < 0) return h5ctx_fail(c, "cannot open '/optim/step' (truncated or corrupt file?)");
    GroupIter it = {c, st, 0};
    hsize_t idx = 0;
    herr_t r = H5Literate(gs, H5_INDEX_NAME, H5_ITER_INC, &idx, group_step_cb, &it);
    H5Gclose(gs);
    if (it.rc) return -1;
    if (r < 0) return h5ctx_fail(c, "cannot list '/optim/step' (truncated or corrupt file?)");
    void *buf;
    long n;
    if (read_int_array(c, f, "loader_state", H5T_NATIVE_INT64, sizeof(int64_t), &buf, &n) < 0) return -1;
    st->loader_state = buf;
    st->n_loader_state = n;
    if (H5Lexists(f, "config", H5P_DEFAULT) <= 0) return h5ctx_fail(c, "dataset 'config' is missing");
    const hid_t d = H5Dopen2(f, "config", H5P_DEFAULT);
    st->config = d >= 0 ? h5_read_string(d, 0, H5T_CSET_ASCII) : NULL;
    if (d >= 0) H5Dclose(d);
    if (!st->config) return h5ctx_fail(c, "dataset 'config' is not a readable string");
    if (read_int_array(c, f, "tokenizer", H5T_NATIVE_UCHAR, 1, &buf, &n) < 0) return -1;
    st->tokenizer = buf;
    st->n_tokenizer = (size_t)n;
    if (H5Aexists(f, "tokenizer_hash") > 0) { /* the identity of /tokenizer (absent when it is empty) */
        char *want = h5_read_str_attr(f, "tokenizer_hash"), got[17] = "";
        if (st->n_tokenizer) tokenizer_hash_bytes(st->tokenizer, st->n_tokenizer, got);
        const int same = want && !strcmp(want, got);
        if (!same) h5ctx_fail(c, "the tokenizer bytes hash to '%s', attribute 'tokenizer_hash' says '%s' (the file is corrupt)", got, want ? want : "?");
        free(want);
        if (!same) return -1;
    }
    return 0;
}

struct Checkpoint {
    hid_t f;
    int version;
    char path[];
};

Checkpoint *checkpoint_open(const char *path, CheckpointState *st, char *err, size_t errlen) {
    H5Ctx c;
    h5ctx_begin(&c, "checkpoint", path, err, errlen);
    memset(st, 0, sizeof *st);
    hid_t f = open_checkpoint(&c, path);
    if (f < 0) return h5ctx_end(&c, -1), NULL;
    if (read_state(&c, f, st)) {
        H5Fclose(f);
        checkpoint_state_free(st);
        return h5ctx_end(&c, -1), NULL;
    }
    h5ctx_end(&c, 0);
    Checkpoint *ck = xmalloc(sizeof *ck + strlen(path) + 1);
    ck->f = f;
    ck->version = st->version;
    strcpy(ck->path, path);
    return ck;
}

const char *checkpoint_path(const Checkpoint *ck) { return ck->path; }

void checkpoint_close(Checkpoint *ck) {
    if (!ck) return;
    H5Fclose(ck->f);
    free(ck);
}

int checkpoint_read_state(const char *path, CheckpointState *st, char *err, size_t errlen) {
    Checkpoint *ck = checkpoint_open(path, st, err, errlen);
    checkpoint_close(ck);
    return ck ? 0 : -1;
}

/* One tensor: present, float dtype, same shape, with its checksum (version >= 2), readable (HDF5
 * verifies the checksum of every chunk it reads), finite. */
static int load_tensor(H5Ctx *c, hid_t grp, const char *gname, const Tensor *t, real *dst, const char *what, int version) {
    if (H5Lexists(grp, t->name, H5P_DEFAULT) <= 0)
        return h5ctx_fail(c, "%s '%s' is missing from /%s (was it written with another config?)", what, t->name, gname);
    hid_t d = H5Dopen2(grp, t->name, H5P_DEFAULT);
    if (d < 0) return h5ctx_fail(c, "cannot open %s '%s' (truncated or corrupt file?)", what, t->name);
    int rc = 0;
    hid_t ty = H5Dget_type(d);
    const int is_float = H5Tget_class(ty) == H5T_FLOAT; /* else h5_read_tensor names the dtype */
    H5Tclose(ty);
    if (version >= 2 && t->n > 0 && is_float) {
        hid_t p = H5Dget_create_plist(d);
        unsigned flags = 0, cd[8];
        size_t ncd = 8;
        char fname[64];
        if (p < 0 || H5Pget_filter_by_id2(p, H5Z_FILTER_FLETCHER32, &flags, &ncd, cd, sizeof fname, fname, NULL) < 0)
            rc = h5ctx_fail(c, "%s '%s' has no checksum, which version %d requires (the file was altered; resume from an earlier checkpoint)",
                            what, t->name, version);
        if (p >= 0) H5Pclose(p);
    }
    if (!rc)
        rc = h5_read_tensor(c, d, t, dst, what, "was it written with another config?", "the checkpoint is corrupt; resume from an earlier one");
    H5Dclose(d);
    return rc;
}

typedef struct ExtraIter {
    const ParamSet *ps;
    char name[512];
} ExtraIter;

static herr_t extra_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    ExtraIter *it = data;
    if (params_find(it->ps, name)) return 0;
    snprintf(it->name, sizeof it->name, "%s", name);
    return 1;
}

static int load_group(H5Ctx *c, hid_t f, const char *gname, ParamSet *ps, real *base, const char *what, int version) {
    if (H5Lexists(f, gname, H5P_DEFAULT) <= 0) {
        /* "optim/m" needs "optim" to exist before H5Lexists may look at it */
        return h5ctx_fail(c, "group '/%s' is missing (truncated or not a complete checkpoint?)", gname);
    }
    hid_t g = H5Gopen2(f, gname, H5P_DEFAULT);
    if (g < 0) return h5ctx_fail(c, "cannot open group '/%s' (truncated or corrupt file?)", gname);
    int rc = 0;
    for (int i = 0; !rc && i < ps->n; i++) rc = load_tensor(c, g, gname, ps->params[i], base + ps->offset[i], what, version);
    if (!rc) {
        ExtraIter it = {ps, ""};
        hsize_t idx = 0;
        if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, extra_cb, &it) < 0) rc = h5ctx_fail(c, "cannot list '/%s'", gname);
        else if (it.name[0])
            rc = h5ctx_fail(c, "has %s '%s' in /%s that the model does not have (was it written with another config?)", what, it.name,
                            gname);
    }
    H5Gclose(g);
    return rc;
}

/* The optimizer's state buffers, by its names. */
static int load_state(H5Ctx *c, hid_t f, ParamSet *ps, OptimMoments *mo, int version) {
    int rc = 0;
    for (int b = 0; !rc && b < mo->n; b++) {
        char gname[64], what[64];
        snprintf(gname, sizeof gname, "optim/%s", mo->opt->state[b]);
        snprintf(what, sizeof what, "moment %s of", mo->opt->state[b]);
        rc = load_group(c, f, gname, ps, mo->buf[b], what, version);
    }
    return rc;
}

typedef struct StateIter {
    H5Ctx *c;
    hid_t f;
    ParamSet *ps;
    real *scratch;
    int version, rc;
} StateIter;

static herr_t state_cb(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    StateIter *it = data;
    if (!strcmp(name, "step")) return 0;
    char gname[300], what[300];
    snprintf(gname, sizeof gname, "optim/%s", name);
    snprintf(what, sizeof what, "moment %s of", name);
    it->rc = load_group(it->c, it->f, gname, it->ps, it->scratch, what, it->version);
    return it->rc ? 1 : 0;
}

/* No state wanted (a model not trained further): every state buffer in /optim validated and dropped. */
static int check_state(H5Ctx *c, hid_t f, ParamSet *ps, int version) {
    StateIter it = {c, f, ps, xcalloc_pages((size_t)(ps->total ? ps->total : 1) * sizeof(real)), version, 0};
    hid_t g = H5Gopen2(f, "optim", H5P_DEFAULT);
    hsize_t idx = 0;
    if (g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, state_cb, &it) < 0)
        if (!it.rc) it.rc = h5ctx_fail(c, "cannot list '/optim' (truncated or corrupt file?)");
    if (g >= 0) H5Gclose(g);
    xfree_pages(it.scratch, (size_t)(ps->total ? ps->total : 1) * sizeof(real));
    return it.rc;
}

int checkpoint_read_tensors(Checkpoint *ck, ParamSet *ps, OptimMoments *mo, char *err, size_t errlen) {
    H5Ctx c;
    h5ctx_begin(&c, "checkpoint", ck->path, err, errlen);
    if (!ps->finalized) return h5ctx_end(&c, h5ctx_fail(&c, "the parameter set is not finalized"));
    const hid_t f = ck->f;
    int rc = load_group(&c, f, "params", ps, ps->data, "parameter", ck->version);
    if (!rc && mo && mo->total != ps->total) rc = h5ctx_fail(&c, "the moments are not those of this parameter set");
    if (!rc && H5Lexists(f, "optim", H5P_DEFAULT) <= 0) rc = h5ctx_fail(&c, "group '/optim' is missing");
    if (!rc) rc = mo ? load_state(&c, f, ps, mo, ck->version) : check_state(&c, f, ps, ck->version);
    return h5ctx_end(&c, rc);
}

int checkpoint_load(const char *path, ParamSet *ps, OptimMoments *mo, CheckpointState *st, char *err, size_t errlen) {
    Checkpoint *ck = checkpoint_open(path, st, err, errlen);
    if (!ck) return -1;
    const int rc = checkpoint_read_tensors(ck, ps, mo, err, errlen);
    checkpoint_close(ck);
    if (rc) checkpoint_state_free(st);
    return rc;
}

/* ---- config comparison ---- */

typedef struct KV {
    char *key, *val;
} KV;

typedef struct KVList {
    KV *kv;
    int n, cap;
    KV dup; /* the first line that sets a key set before (an edited config text is ambiguous); key NULL: none */
} KVList;

static const KV *kv_find(const KVList *l, const char *key) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->kv[i].key, key)) return &l->kv[i];
    return NULL;
}

static int kv_add(const char *key, const char *val, void *vl) {
    KVList *l = vl;
    if (l->n == l->cap) l->kv = xrealloc(l->kv, (size_t)(l->cap = l->cap ? 2 * l->cap : 16) * sizeof(KV));
    const KV kv = {xstrdup(key), xstrdup(val ? val : "")};
    if (!l->dup.key && kv_find(l, key)) l->dup = kv;
    l->kv[l->n++] = kv;
    return 0;
}

/* The `key = value` lines of text, split as model/config.c splits a config (config_text_each). */
static KVList kv_parse(const char *text) {
    KVList l = {0};
    if (config_text_each(text, kv_add, &l) < 0) fatal("out of memory comparing configs");
    return l;
}

static void kv_free(KVList *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->kv[i].key);
        free(l->kv[i].val);
    }
    free(l->kv);
}

static int ignored(const char *const *ignore, const char *key) {
    for (; ignore && *ignore; ignore++)
        if (!strcmp(*ignore, key)) return 1;
    return 0;
}

int checkpoint_config_diff(const char *saved, const char *now, const char *const *ignore, char *msg, size_t len) {
    KVList a = kv_parse(saved), b = kv_parse(now);
    int diff = 0;
    if (a.dup.key) diff = 1, snprintf(msg, len, "'%s' is set twice in the checkpoint", a.dup.key);
    else if (b.dup.key) diff = 1, snprintf(msg, len, "'%s' is set twice now (the second time to %s)", b.dup.key, b.dup.val);
    for (int i = 0; !diff && i < a.n; i++) {
        const KV *p = &a.kv[i];
        if (ignored(ignore, p->key)) continue;
        const KV *o = kv_find(&b, p->key);
        if (!o) {
            snprintf(msg, len, "'%s' is %s in the checkpoint but not set now", p->key, p->val);
            diff = 1;
        } else if (strcmp(p->val, o->val)) {
            snprintf(msg, len, "'%s' is %s in the checkpoint but %s now", p->key, p->val, o->val);
            diff = 1;
        }
    }
    for (int i = 0; !diff && i < b.n; i++) {
        if (ignored(ignore, b.kv[i].key) || kv_find(&a, b.kv[i].key)) continue;
        snprintf(msg, len, "'%s' is %s now but not set in the checkpoint", b.kv[i].key, b.kv[i].val);
        diff = 1;
    }
    if (!diff && msg && len) msg[0] = 0;
    kv_free(&a);
    kv_free(&b);
    return diff;
}
