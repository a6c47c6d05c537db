/* relpos.h — relative positions (spec §1.2, §1.3, §1.6).
 *
 *   rel(i, j)   = i − j                                   (query index minus key index)
 *   bucket(r)   = make_log_bucket_position(r, PB, MRP)    (official recipe, with the clamp)
 *   c(i, j)     = clamp(bucket(i − j) + S, 0, 2S − 1)     the rel-table row used by c2p AND p2c
 *
 * The bucket arithmetic is done the official way, in float32: ratio = (float)|r| / mid,
 * logf(ratio) / (float)ln((MRP−1)/mid) · (mid−1), ceilf, + mid (spec §1.3: float64 differs from the
 * official table for some (PB, MRP) pairs).  Without buckets (PB <= 0) bucket(r) = r.
 */
#ifndef DEBERTA_MODEL_RELPOS_H
#define DEBERTA_MODEL_RELPOS_H
#include <stdint.h>

/* bucket(r) for one relative distance r (official: r is first clamped to ±(max_position − 1)).
 * bucket_size <= 0 or max_position <= 0: identity. */
int relpos_log_bucket(int r, int bucket_size, int max_position);

/* c[i·Tk + j] = clamp(bucket(i − j) + S, 0, 2S − 1) for i < Tq, j < Tk, S = att_span.
 * If rmin/rmax are given they receive the smallest/largest row used (the rows reachable at this
 * length: only these need to be projected). */
void relpos_index(int32_t *c, int Tq, int Tk, int bucket_size, int max_position, int att_span, int *rmin, int *rmax);
#endif
