/* h5util.h — the HDF5 layer: every HDF5 file deberta.c writes (shards, task files, checkpoints,
 * parity weights and dump outputs) is written through H5Out below, and their attributes are read
 * here.  Also: one-line errors with HDF5's own error stack silenced, dtype text, the validating read
 * of one tensor in the build's real type, and the seal (a whole-file CRC-32 in the HDF5 user block,
 * checked before libhdf5 sees the file). */
#ifndef DEBERTA_H5UTIL_H
#define DEBERTA_H5UTIL_H
#include <hdf5.h>
#include <stdarg.h>
#include <stddef.h>
#include "autograd/tensor.h"

#if REAL_IS_DOUBLE
#define H5T_REAL_NATIVE H5T_NATIVE_DOUBLE
#define H5T_REAL_FILE H5T_IEEE_F64LE
#else
#define H5T_REAL_NATIVE H5T_NATIVE_FLOAT
#define H5T_REAL_FILE H5T_IEEE_F32LE
#endif

/* HDF5 prints its own error stack by default; between h5_quiet and h5_loud it prints nothing. */
typedef struct H5Quiet {
    H5E_auto2_t func;
    void *data;
} H5Quiet;
void h5_quiet(H5Quiet *q);
void h5_loud(const H5Quiet *q);

/* One operation on one file.  h5ctx_begin silences HDF5 and clears err; h5ctx_fail writes
 * "<what> <path>: <message>" into err (the first failure wins; err may be NULL) and returns -1;
 * h5ctx_end restores HDF5's error printing and returns rc. */
typedef struct H5Ctx {
    const char *what, *path;
    char *err;
    size_t errlen;
    H5Quiet quiet;
} H5Ctx;
void h5ctx_begin(H5Ctx *c, const char *what, const char *path, char *err, size_t errlen);
int h5ctx_end(H5Ctx *c, int rc);
int h5ctx_fail(H5Ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "float32", "uint8", "int64", "string", or "HDF5 class N". */
void h5_dtype_str(char *buf, size_t len, hid_t type);
/* 1 when the open attribute or dataset (is_attr) holds one element (scalar or a 1-element array)
 * of a sane datatype: an integer or float of 1..8 bytes whose precision and bit offset fit in its
 * size, an enum over such an integer (numpy bools), or a string (fixed length of 1 byte .. 1 GiB,
 * or variable length).  Checked before every H5Aread/H5Dread of a scalar: a corrupt datatype must
 * be an error, not a crash inside HDF5. */
int h5_scalar_sane(hid_t obj, int is_attr);
/* Integer attribute `name` of obj read into *out as mtype: 0, -1 missing, -2 not one sane integer or
 * unreadable. */
int h5_read_int_attr(hid_t obj, const char *name, hid_t mtype, void *out);
/* The primitives under H5Out (tests/test_seal.c builds files with them): a dataset-creation
 * property list without object timestamps; a scalar int64 attribute and a NUL-terminated string
 * attribute (strlen + 1 bytes, NULLTERM) of obj.  0 or -1. */
hid_t h5_dcpl(void);
int h5_attr_i64(hid_t obj, const char *name, int64_t v);
int h5_attr_str(hid_t obj, const char *name, const char *v);
/* String attribute `name` of obj (fixed or variable length, see h5_read_string), malloc'd; NULL when
 * absent or not one readable string. */
char *h5_read_str_attr(hid_t obj, const char *name);
/* Float attribute `name` of obj (one 8-byte float) into *v: 0, or -1 missing or not one float64. */
int h5_read_f64_attr(hid_t obj, const char *name, double *v);
/* Dataset `name` of f, of class cls (H5T_INTEGER or H5T_FLOAT) and the given rank, read whole as mtype
 * (esize bytes a value) into a new buffer; dims[] receives its shape.  NULL with msg ("dataset 'x' is
 * missing", "... is not an integer dataset", "... has 3 dimensions, expected 2", "... cannot be read
 * (truncated or corrupt)") for the caller to prefix with the file and follow with its hint. */
void *h5_read_dataset(hid_t f, const char *name, H5T_class_t cls, int rank, hid_t mtype, size_t esize, hsize_t *dims, char *msg,
                      size_t msglen);
/* The fixed- or variable-length string held by the open attribute (is_attr) or scalar dataset obj,
 * read whole whatever its padding (NULLTERM, NULLPAD without a terminating NUL as h5py writes
 * numpy bytes, SPACEPAD: trailing pad characters removed) in the file's character set (cset is
 * used when the file's cannot be read); malloc'd, NULL when obj is not one sane string or cannot be
 * read. */
char *h5_read_string(hid_t obj, int is_attr, H5T_cset_t cset);
/* Reads the open dataset d into dst (t->n values): a float32 or float64 dtype, t's shape, readable,
 * no NaN/Inf.  Messages name the tensor as "<what> '<t->name>'"; shape_hint (in parentheses) follows
 * a shape mismatch, nan_hint (in parentheses, may be NULL) a NaN/Inf. */
int h5_read_tensor(H5Ctx *c, hid_t d, const Tensor *t, real *dst, const char *what, const char *shape_hint, const char *nan_hint);

/* ---- writing: every HDF5 file deberta.c writes ----
 * The file is written as "<path>.tmp" and, by h5out_close, flushed, closed, sealed (when asked) and
 * renamed over path (durable_rename); after any failure the temp file is removed and path is left as
 * it was.  HDF5's error printing is off from h5out_create to h5out_close.  The writers below are
 * no-ops after the first failure, whose message ("<what> <path>: ...") h5out_close returns; a caller
 * adds its own with h5out_fail.  No object carries a timestamp: the same contents make the same
 * bytes. */
#define H5OUT_MAX_RANK 8
/* How a dataset is stored: contiguous when chunk[0] == 0, else in chunks of chunk[] with the
 * shuffle filter, deflate at that level (0 = none) and the Fletcher-32 checksum as asked. */
typedef struct H5Store {
    hsize_t chunk[H5OUT_MAX_RANK];
    int shuffle, deflate, fletcher32;
} H5Store;
typedef struct H5Out {
    hid_t f;
    int sealed;
    const char *hint; /* may be NULL: appended ("; <hint>") to the failure's message, e.g. how to re-make the file */
    char path[4096], tmp[4100];
    H5Ctx c;
    char msg[1024];
} H5Out;
/* sealed: with the seal's user block (the files deberta.c trains on); else a plain HDF5 file
 * (parity weights, dump outputs).  0, or -1 with the message in err. */
int h5out_create(H5Out *o, const char *what, const char *path, int sealed, char *err, size_t errlen);
int h5out_fail(H5Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int h5out_failed(const H5Out *o) { return o->msg[0] != 0; }
/* Dataset `name` under loc (H5OUT_ROOT: the file's root; a '/' in name creates the groups on the
 * way) of ftype in the file, read from data as mtype; rank 0 = scalar; store NULL = contiguous.
 * Nothing is written for zero elements.  0, or -1 after recording "cannot write dataset ..." */
#define H5OUT_ROOT ((hid_t)-1)
int h5out_dataset(H5Out *o, hid_t loc, const char *name, hid_t ftype, hid_t mtype, int rank, const hsize_t *dims, const void *data,
                  const H5Store *store);
/* The same of the build's real type (float32, float64 in the double build), shape as ints. */
int h5out_real(H5Out *o, const char *name, int ndim, const int *shape, const real *data);
/* A group under loc (H5OUT_ROOT or a group); the caller closes it.  -1 after recording a failure. */
hid_t h5out_group(H5Out *o, hid_t loc, const char *name);
/* Scalar attributes of the root: any type; int64; float64; a NUL-terminated string (strlen + 1
 * bytes, NULLTERM: the training files); a string as numpy bytes_ (strlen bytes, at least 1,
 * NULLPAD: the parity files, as the reference writes).  0 or -1. */
int h5out_attr(H5Out *o, const char *name, hid_t ftype, hid_t mtype, const void *val);
int h5out_attr_i64(H5Out *o, const char *name, int64_t v);
int h5out_attr_f64(H5Out *o, const char *name, double v);
int h5out_attr_str(H5Out *o, const char *name, const char *v);
int h5out_attr_bytes(H5Out *o, const char *name, const char *v);
/* Finishes the file as above.  0, or -1 with the first failure's message in err (and the temp file
 * removed). */
int h5out_close(H5Out *o, char *err, size_t errlen);

/* ---- the seal (docs/FORMATS.md, "Sealed HDF5 files") ----
 * A sealed file starts with a 512-byte HDF5 user block: magic "DBH5SEAL", uint32 version 1,
 * uint32 block size 512, uint64 file size, uint32 CRC-32 of the whole file read with those four
 * bytes as zero, zeros.  libhdf5 (and h5py, h5dump, h5diff) skip the block; deberta.c checks it
 * before handing the file to libhdf5, so a damaged file never reaches HDF5's metadata decoding. */
#define H5_SEAL_BLOCK 512
#define H5_SEAL_VERSION 1
/* A file-creation property list for a file to be sealed: the 512-byte user block, and no
 * timestamps on the root group. */
hid_t h5_sealed_fcpl(void);
/* Writes the seal of the closed file at path, which has the 512-byte user block (created with
 * h5_sealed_fcpl, or sealed before and since changed on purpose); called before the atomic
 * rename.  0, or -1 with a message ("<path>: ...") in err. */
int h5_seal(const char *path, char *err, size_t errlen);
/* `deberta seal`: seals the file at path as it is now: in place when it has a seal block (after a
 * change made on purpose), or, for an HDF5 file without a user block (an older deberta.c, h5py,
 * h5repack), by writing a copy with the block in front and renaming it over path.  0 or -1. */
int h5_seal_file(const char *path, char *err, size_t errlen);
/* Checks the seal of the file at path without libhdf5: H5_SEAL_OK (0) when it is sealed and
 * intact; H5_SEAL_NONE (1) when it has no seal (an older deberta.c or another program wrote it, or
 * its first bytes are damaged); H5_SEAL_BAD (-1) when it cannot be read or its seal does not match
 * (corrupt, truncated, extended, or changed by another program).  msg gets the reason without the
 * path (for NONE too). */
#define H5_SEAL_OK 0
#define H5_SEAL_NONE 1
#define H5_SEAL_BAD (-1)
int h5_seal_check(const char *path, char *msg, size_t len);
/* Readers of the files deberta.c trains on (shards, checkpoints, task files): the seal must be
 * there and match.  0, or -1 with "<what> <path>: <reason>; <hint>, or ...: deberta seal <path>"
 * in err; hint says how to re-make the file ("re-run deberta prep"). */
int h5_seal_require(const char *what, const char *path, const char *hint, char *err, size_t errlen);
/* Readers of exchange files (parity weights, batches: written by the reference or h5py): a seal is
 * checked when the file has one, a file without one is accepted.  0, or -1 with the reason (no
 * path) in msg. */
int h5_seal_verify_if_present(const char *path, char *msg, size_t len);
#endif
