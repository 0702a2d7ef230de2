/*
 * Statistics (`s <<< v`): count, sum, min and max kept as the values arrive,
 * and, when the script prints a histogram of the variable, its buckets.
 *
 * Bucket numbering follows SystemTap's runtime (stat-common.c) so that
 * printed histograms match stap's line for line: a log histogram has 128
 * buckets, bucket 64 holds 0, bucket 64+k holds [2^(k-1), 2^k) and the
 * buckets below 64 mirror them for negative values; a linear histogram has
 * one underflow bucket, (stop-start)/interval regular ones and one overflow
 * bucket.  @avg is the integer quotient sum/count, as in stap; @variance
 * the sample variance (n * sum of squares - sum^2) / (n * (n - 1)), in
 * 128-bit arithmetic, truncated (0 for one value).
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

struct script_stat *stat_new(const struct hist_cfg *h)
{
	size_t nb = h && h->kind ? (size_t)h->buckets : 0;
	struct script_stat *st = calloc(1, sizeof(*st) + nb * sizeof(int64_t));
	if (!st)
		abort();
	return st;
}

/* log2 bucket of v, 0..127 (HIST_LOG_BUCKET0 for 0) */
int64_t hist_log_bucket(int64_t v)
{
	uint64_t u;
	int bits = 0;

	if (v == 0)
		return HIST_LOG_BUCKET0;
	u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	while (u) {
		bits++;
		u >>= 1;
	}
	/* v in [2^(bits-1), 2^bits): bucket 64 + bits, capped at 127 */
	if (v > 0)
		return HIST_LOG_BUCKET0 + bits > HIST_LOG_BUCKETS - 1 ? HIST_LOG_BUCKETS - 1 : HIST_LOG_BUCKET0 + bits;
	return HIST_LOG_BUCKET0 - bits < 0 ? 0 : HIST_LOG_BUCKET0 - bits;
}

void stat_add(struct script_stat *st, const struct hist_cfg *h, int64_t v)
{
	st->sumsq += (__int128)v * v;
	if (st->count++ == 0) {
		st->sum = st->min = st->max = v;
	} else {
		st->sum += v;
		if (v < st->min)
			st->min = v;
		if (v > st->max)
			st->max = v;
	}
	if (!h || !h->kind)
		return;
	if (h->kind == 1) {
		st->hist[hist_log_bucket(v)]++;
	} else {
		/* Unsigned: v - start may not fit in int64, and a quotient
		 * past the last bucket must not wrap to a negative index. */
		uint64_t q, last = (uint64_t)h->buckets - 1;
		if (v < h->start) {
			q = 0;
		} else {
			q = ((uint64_t)v - (uint64_t)h->start) / (uint64_t)h->interval + 1;
			if (q > last)
				q = last;
		}
		st->hist[q]++;
	}
}

int64_t stat_variance(const struct script_stat *st)
{
	__int128 n = st->count, s = st->sum;
	if (n < 2)
		return 0;
	return (int64_t)((n * st->sumsq - s * s) / (n * (n - 1)));
}
