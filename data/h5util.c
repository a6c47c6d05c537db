/* h5util.c — see h5util.h. */
#include "data/h5util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/util.h"

void h5_quiet(H5Quiet *q) {
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void h5_loud(const H5Quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->func, q->data); }

void h5ctx_begin(H5Ctx *c, const char *what, const char *path, char *err, size_t errlen) {
    c->what = what;
    c->path = path;
    c->err = err;
    c->errlen = errlen;
    if (err && errlen) err[0] = 0;
    h5_quiet(&c->quiet);
}

int h5ctx_end(H5Ctx *c, int rc) {
    h5_loud(&c->quiet);
    return rc;
}

int h5_vfail(char *err, size_t errlen, const char *what, const char *path, const char *fmt, va_list ap) {
    if (!err || !errlen || err[0]) return -1;
    int k = snprintf(err, errlen, "%s %s: ", what, path);
    if (k < 0 || (size_t)k >= errlen) return -1;
    vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    return -1;
}

int h5ctx_fail(H5Ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    h5_vfail(c->err, c->errlen, c->what, c->path, fmt, ap);
    va_end(ap);
    return -1;
}

static void dims_str(char *buf, size_t len, int ndim, const hsize_t *d) {
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && k < len; i++) k += (size_t)snprintf(buf + k, len - k, i ? ", %llu" : "%llu", (unsigned long long)d[i]);
    if (k < len) snprintf(buf + k, len - k, "]");
}

void h5_dtype_str(char *buf, size_t len, hid_t t) {
    const H5T_class_t cl = H5Tget_class(t);
    const size_t bits = 8 * H5Tget_size(t);
    switch (cl) {
    case H5T_FLOAT: snprintf(buf, len, "float%zu", bits); break;
    case H5T_INTEGER: snprintf(buf, len, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", bits); break;
    case H5T_STRING: snprintf(buf, len, "string"); break;
    default: snprintf(buf, len, "HDF5 class %d", (int)cl); break;
    }
}

hid_t h5_dcpl(void) {
    hid_t p = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(p, 0);
    return p;
}

herr_t h5_write_scalar_attr(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *val) {
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT);
    herr_t r = a < 0 ? -1 : H5Awrite(a, mtype, val);
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    return r;
}

int h5_attr_i64(hid_t obj, const char *name, int64_t v) {
    return h5_write_scalar_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v) < 0 ? -1 : 0;
}

int h5_attr_str(hid_t obj, const char *name, const char *v) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    const herr_t rc = h5_write_scalar_attr(obj, name, t, t, v);
    H5Tclose(t);
    return rc < 0 ? -1 : 0;
}

int h5_scalar_sane(hid_t o, int is_attr) {
    hid_t t = is_attr ? H5Aget_type(o) : H5Dget_type(o), s = is_attr ? H5Aget_space(o) : H5Dget_space(o);
    int ok = t >= 0 && s >= 0 && H5Sget_simple_extent_npoints(s) == 1;
    if (ok) {
        const H5T_class_t cl = H5Tget_class(t);
        const size_t sz = H5Tget_size(t);
        if (cl == H5T_INTEGER || cl == H5T_FLOAT) {
            const size_t prec = H5Tget_precision(t);
            const int off = H5Tget_offset(t);
            ok = sz >= 1 && sz <= 8 && prec >= 1 && off >= 0 && prec + (size_t)off <= 8 * sz;
        } else if (cl == H5T_STRING) {
            ok = H5Tis_variable_str(t) > 0 || (sz >= 1 && sz <= ((size_t)1 << 30));
        } else {
            ok = 0;
        }
    }
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    return ok;
}

int h5_read_int_attr(hid_t obj, const char *name, hid_t mtype, void *out) {
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -2;
    hid_t t = H5Aget_type(a);
    const int ok = t >= 0 && H5Tget_class(t) == H5T_INTEGER && h5_scalar_sane(a, 1) && H5Aread(a, mtype, out) >= 0;
    if (t >= 0) H5Tclose(t);
    H5Aclose(a);
    return ok ? 0 : -2;
}

char *h5_read_string(hid_t o, int is_attr, H5T_cset_t cset) {
    hid_t ft = is_attr ? H5Aget_type(o) : H5Dget_type(o);
    char *out = NULL;
    if (H5Tget_class(ft) == H5T_STRING && h5_scalar_sane(o, is_attr)) {
        const H5T_cset_t fcs = H5Tget_cset(ft);
        const H5T_str_t pad = H5Tget_strpad(ft);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_cset(mt, fcs >= 0 ? fcs : cset);
        if (H5Tis_variable_str(ft) > 0) {
            H5Tset_size(mt, H5T_VARIABLE);
            char *v = NULL;
            if ((is_attr ? H5Aread(o, mt, &v) : H5Dread(o, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v)) >= 0 && v) {
                out = xstrdup(v);
                H5free_memory(v);
            }
        } else {
            size_t n = H5Tget_size(ft);
            H5Tset_size(mt, n + 1);
            H5Tset_strpad(mt, H5T_STR_NULLTERM);
            out = xcalloc(n + 2, 1);
            if ((is_attr ? H5Aread(o, mt, out) : H5Dread(o, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, out)) < 0) {
                free(out);
                out = NULL;
            } else if (pad == H5T_STR_SPACEPAD) {
                for (size_t k = strlen(out); k > 0 && out[k - 1] == ' '; k--) out[k - 1] = 0;
            }
        }
        H5Tclose(mt);
    }
    H5Tclose(ft);
    return out;
}

int h5_read_tensor(H5Ctx *c, hid_t d, const Tensor *t, real *dst, const char *what, const char *shape_hint, const char *nan_hint) {
    hid_t ty = H5Dget_type(d), sp = H5Dget_space(d);
    int rc = 0;
    const H5T_class_t cl = H5Tget_class(ty);
    const size_t sz = H5Tget_size(ty);
    if (cl != H5T_FLOAT || (sz != 4 && sz != 8)) {
        char ds[32];
        h5_dtype_str(ds, sizeof ds, ty);
        rc = h5ctx_fail(c, "%s '%s' has dtype %s, expected float32 or float64", what, t->name, ds);
    }
    hsize_t dims[H5S_MAX_RANK];
    const int nd = rc ? 0 : H5Sget_simple_extent_ndims(sp);
    if (!rc && (nd < 0 || nd > H5S_MAX_RANK)) rc = h5ctx_fail(c, "cannot read the shape of %s '%s'", what, t->name);
    if (!rc) {
        H5Sget_simple_extent_dims(sp, dims, NULL);
        int same = nd == t->ndim;
        for (int k = 0; same && k < nd; k++) same = dims[k] == (hsize_t)t->shape[k];
        if (!same) {
            char have[128], want[128];
            dims_str(have, sizeof have, nd, dims);
            shape_str(t, want, sizeof want);
            rc = h5ctx_fail(c, "%s '%s' has shape %s, the model expects %s (%s)", what, t->name, have, want, shape_hint);
        }
    }
    if (!rc && H5Dread(d, H5T_REAL_NATIVE, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst) < 0)
        rc = h5ctx_fail(c, "cannot read %s '%s': checksum mismatch or truncated data (the file is corrupt)", what, t->name);
    for (long i = 0; !rc && i < t->n; i++)
        if (!isfinite(dst[i]))
            rc = h5ctx_fail(c, "%s '%s' contains %s at element %ld%s%s%s", what, t->name, isnan(dst[i]) ? "NaN" : "Inf", i,
                            nan_hint ? " (" : "", nan_hint ? nan_hint : "", nan_hint ? ")" : "");
    H5Sclose(sp);
    H5Tclose(ty);
    return rc;
}
