/*
 * Histogram printing, in SystemTap's exact layout:
 *
 *     value |-------------------------------------------------- count
 *         0 |                                                    0
 *         1 |@@@@                                                4
 *         2 |@@@@@@@@@@                                         10
 *
 * The range printed is the buckets that hold data, widened by up to two
 * empty buckets on each side (never into the negative half of a log
 * histogram that has no negative values; the under- and overflow rows of a
 * linear one only when they are not empty).  Runs of empty rows that are
 * more than HIST_ELISION rows (-D HIST_ELISION=N, 2 by default; negative:
 * none collapse) away from data collapse into one "~" line.  Bars are
 * at most 50 '@' wide: when the largest count exceeds 50, each '@' stands
 * for ceil(max/50) hits.  The value column is as wide as its widest label
 * (and at least "value"); the count column right-aligns after the bar.
 */
#include <string.h>

#include "run.h"

#define HIST_WIDTH 50

static int needed_space(int64_t v)
{
	int space = 0;
	uint64_t t;

	if (v == 0)
		return 1;
	if (v < 0) {
		space++;
		t = (uint64_t)0 - (uint64_t)v;
	} else {
		t = (uint64_t)v;
	}
	while (t) {
		t /= 10;
		space++;
	}
	return space;
}

static int64_t bucket_to_val(int num)
{
	if (num == HIST_LOG_BUCKET0)
		return 0;
	if (num < HIST_LOG_BUCKET0)
		return (int64_t)0x8000000000000000ull >> num;
	return (int64_t)(1ull << (num - HIST_LOG_BUCKET0 - 1));
}

static int imax(int a, int b)
{
	return a > b ? a : b;
}

void hist_print(FILE *out, const struct hist_cfg *h, const struct script_stat *st)
{
	int low = -1, high = 0, over = 0, under = 0, val_space, cnt_space, eliding = 0;
	int64_t valmax = 0, scale;
	const int64_t *hist = st->hist;
	int nb = h->buckets;

	for (int i = 0; i < nb; i++) {
		if (hist[i] > 0 && low == -1)
			low = i;
		if (hist[i] > 0)
			high = i;
		if (hist[i] > valmax)
			valmax = hist[i];
	}
	if (low == -1) { /* no data: the row of value 0 (or start) alone */
		low = high = h->kind == 1 ? HIST_LOG_BUCKET0 : 1;
	}
	for (int i = 0; i < HIST_ELISION; i++) { /* that many empty rows of margin */
		if (h->kind == 1) {
			if (low != HIST_LOG_BUCKET0 && low > 0)
				low--;
		} else if (low > 0) {
			low--;
		}
		if (high < nb - 1)
			high++;
	}
	if (h->kind == 2) {
		if (low == 0 && hist[0] == 0)
			low++;
		if (high == nb - 1 && hist[high] == 0)
			high--;
		if (low == 0)
			under = 1;
		if (high == nb - 1)
			over = 1;
	}
	scale = valmax <= HIST_WIDTH ? 1 : (valmax + HIST_WIDTH - 1) / HIST_WIDTH;
	cnt_space = needed_space(valmax);
	if (h->kind == 2)
		val_space = imax(needed_space(h->start) + under, needed_space(h->start + h->interval * high) + over);
	else
		val_space = imax(needed_space(bucket_to_val(high)), needed_space(bucket_to_val(low)));
	val_space = imax(val_space, 5);

	fprintf(out, "%*s |", val_space, "value");
	for (int j = 0; j < HIST_WIDTH; j++)
		fputc('-', out);
	fputs(" count\n", out);
	for (int i = low; i <= high; i++) {
		const char *prefix = "";
		int64_t val, v;
		int lo = low, hi = high, elide = HIST_ELISION >= 0;

		if (i - HIST_ELISION > lo)
			lo = i - HIST_ELISION;
		if (i + HIST_ELISION < hi)
			hi = i + HIST_ELISION;
		for (int k = lo; k <= hi; k++)
			if (hist[k])
				elide = 0;
		if (elide) {
			eliding = 1;
			continue;
		}
		if (eliding) {
			fprintf(out, "%*s ~\n", val_space, "");
			eliding = 0;
		}
		if (h->kind == 2) {
			if (i == 0) {
				val = h->start;
				prefix = "<";
			} else if (i == nb - 1) {
				val = h->start + (int64_t)(i - 2) * h->interval;
				prefix = ">";
			} else {
				val = h->start + (int64_t)(i - 1) * h->interval;
			}
		} else {
			val = bucket_to_val(i);
		}
		fprintf(out, "%*s%lld |", val_space - needed_space(val), prefix, (long long)val);
		v = hist[i] / scale;
		for (int64_t j = 0; j < v; j++)
			fputc('@', out);
		fprintf(out, "%*lld\n", (int)(HIST_WIDTH - v + 1 + cnt_space), (long long)hist[i]);
	}
	fputc('\n', out);
}
