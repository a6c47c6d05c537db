/* h5util.h — small HDF5 helpers shared by data/shard.c, data/task.c, train/checkpoint.c and train/cli/h5io.c:
 * one-line errors with HDF5's own error stack silenced, dtype text, scalar attributes, strings, the
 * validating read of one tensor in the build's real type, and the seal (a whole-file CRC-32 in the
 * HDF5 user block, checked before libhdf5 sees the file). */
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
/* The formatting of h5ctx_fail for a caller's own buffer: nothing when err already holds a message. */
int h5_vfail(char *err, size_t errlen, const char *what, const char *path, const char *fmt, va_list ap);

/* "float32", "uint8", "int64", "string", or "HDF5 class N". */
void h5_dtype_str(char *buf, size_t len, hid_t type);
/* A dataset-creation property list without object timestamps: identical contents, identical files. */
hid_t h5_dcpl(void);
/* 1 when the open attribute or dataset (is_attr) holds one element (scalar or a 1-element array)
 * of a sane datatype: an integer or float of 1..8 bytes whose precision and bit offset fit in its
 * size, an enum over such an integer (numpy bools), or a string (fixed length of 1 byte .. 1 GiB,
 * or variable length).  Checked before every H5Aread/H5Dread of a scalar: a corrupt datatype must
 * be an error, not a crash inside HDF5. */
int h5_scalar_sane(hid_t obj, int is_attr);
/* Integer attribute `name` of obj read into *out as mtype: 0, -1 missing, -2 not one sane integer or
 * unreadable. */
int h5_read_int_attr(hid_t obj, const char *name, hid_t mtype, void *out);
/* A scalar attribute of obj; < 0 on failure. */
herr_t h5_write_scalar_attr(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *val);
/* A scalar int64 attribute, and a NUL-terminated string attribute (strlen + 1 bytes).  0 or -1. */
int h5_attr_i64(hid_t obj, const char *name, int64_t v);
int h5_attr_str(hid_t obj, const char *name, const char *v);
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
