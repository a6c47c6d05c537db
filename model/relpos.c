/* relpos.c — see relpos.h */
#include "model/relpos.h"
#include <math.h>

int relpos_log_bucket(int r, int bucket_size, int max_position) {
    if (bucket_size <= 0 || max_position <= 0) return r;
    /* official clamp to ±(max_position − 1) (spec §1.3; HF has none, differs only for L > MRP) */
    if (r > max_position - 1) r = max_position - 1;
    if (r < -(max_position - 1)) r = -(max_position - 1);
    const int mid = bucket_size / 2;
    const int a = r < 0 ? -r : r;
    if (a <= mid) return r; /* identity zone, |r| == mid included */
    /* float32 throughout, like the official torch code: log of a float32 ratio, divided by the
     * double log ratio rounded to float32, times (mid − 1), ceil, + mid */
    const float ratio = (float)a / (float)mid;
    const float denom = (float)log((double)(max_position - 1) / (double)mid);
    const float lp = ceilf(logf(ratio) / denom * (float)(mid - 1)) + (float)mid;
    return r < 0 ? -(int)lp : (int)lp;
}

void relpos_index(int32_t *c, int Tq, int Tk, int bucket_size, int max_position, int att_span, int *rmin, int *rmax) {
    /* bucket(i − j) depends on i − j only: one row per distance in (−Tk, Tq) */
    int lo = 2 * att_span, hi = -1;
    for (int i = 0; i < Tq; i++) {
        for (int j = 0; j < Tk; j++) {
            int v = relpos_log_bucket(i - j, bucket_size, max_position) + att_span;
            if (v < 0) v = 0;
            if (v > 2 * att_span - 1) v = 2 * att_span - 1;
            c[(long)i * Tk + j] = v;
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
    }
    if (rmin) *rmin = lo;
    if (rmax) *rmax = hi;
}
