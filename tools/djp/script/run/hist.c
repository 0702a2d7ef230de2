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

/* The rows a histogram prints and how wide its columns are. */
struct hist_layout {
	int low, high;	   /* the rows: buckets low to high */
	int under, over;   /* a linear one's "<" and ">" rows among them */
	int val_space, cnt_space;
	int64_t scale;	   /* a row's count in @s, divided by this */
};

/* From the first to the last bucket with data, HIST_ELISION empty rows of
 * margin either side (none: the row of 0, or of start, alone). */
static void hist_rows(const struct hist_cfg *h, const int64_t *hist, struct hist_layout *l, int64_t *valmax)
{
	int nb = h->buckets;

	l->low = -1;
	l->high = 0;
	*valmax = 0;
	for (int i = 0; i < nb; i++) {
		if (hist[i] > 0 && l->low == -1)
			l->low = i;
		if (hist[i] > 0)
			l->high = i;
		if (hist[i] > *valmax)
			*valmax = hist[i];
	}
	if (l->low == -1) /* no data: the row of value 0 (or start) alone */
		l->low = l->high = h->kind == 1 ? HIST_LOG_BUCKET0 : 1;
	for (int i = 0; i < HIST_ELISION; i++) { /* that many empty rows of margin */
		if (h->kind == 1) {
			if (l->low != HIST_LOG_BUCKET0 && l->low > 0)
				l->low--;
		} else if (l->low > 0) {
			l->low--;
		}
		if (l->high < nb - 1)
			l->high++;
	}
}

static void hist_layout(const struct hist_cfg *h, const int64_t *hist, struct hist_layout *l)
{
	int nb = h->buckets;
	int64_t valmax;

	hist_rows(h, hist, l, &valmax);
	l->under = l->over = 0;
	if (h->kind == 2) {
		if (l->low == 0 && hist[0] == 0)
			l->low++;
		if (l->high == nb - 1 && hist[l->high] == 0)
			l->high--;
		if (l->low == 0)
			l->under = 1;
		if (l->high == nb - 1)
			l->over = 1;
	}
	l->scale = valmax <= HIST_WIDTH ? 1 : (valmax + HIST_WIDTH - 1) / HIST_WIDTH;
	l->cnt_space = needed_space(valmax);
	if (h->kind == 2)
		l->val_space = imax(needed_space(h->start) + l->under,
				    needed_space(h->start + h->interval * l->high) + l->over);
	else
		l->val_space = imax(needed_space(bucket_to_val(l->high)), needed_space(bucket_to_val(l->low)));
	l->val_space = imax(l->val_space, 5);
}

/* Row i is left out: no data within HIST_ELISION rows of it. */
static bool row_elided(const int64_t *hist, const struct hist_layout *l, int i)
{
	int lo = l->low, hi = l->high;
	if (HIST_ELISION < 0)
		return false;
	if (i - HIST_ELISION > lo)
		lo = i - HIST_ELISION;
	if (i + HIST_ELISION < hi)
		hi = i + HIST_ELISION;
	for (int k = lo; k <= hi; k++)
		if (hist[k])
			return false;
	return true;
}

/* The value row i stands for; a linear one's first and last rows are
 * "<start" and ">the last interval's" */
static int64_t row_value(const struct hist_cfg *h, int i, const char **prefix)
{
	*prefix = "";
	if (h->kind != 2)
		return bucket_to_val(i);
	if (i == 0) {
		*prefix = "<";
		return h->start;
	}
	if (i == h->buckets - 1) {
		*prefix = ">";
		return h->start + (int64_t)(i - 2) * h->interval;
	}
	return h->start + (int64_t)(i - 1) * h->interval;
}

void hist_print(FILE *out, const struct hist_cfg *h, const struct script_stat *st)
{
	const int64_t *hist = st->hist;
	struct hist_layout l;
	int eliding = 0;

	hist_layout(h, hist, &l);
	fprintf(out, "%*s |", l.val_space, "value");
	for (int j = 0; j < HIST_WIDTH; j++)
		fputc('-', out);
	fputs(" count\n", out);
	for (int i = l.low; i <= l.high; i++) {
		const char *prefix;
		int64_t val, v;

		if (row_elided(hist, &l, i)) {
			eliding = 1;
			continue;
		}
		if (eliding) {
			fprintf(out, "%*s ~\n", l.val_space, "");
			eliding = 0;
		}
		val = row_value(h, i, &prefix);
		fprintf(out, "%*s%lld |", l.val_space - needed_space(val), prefix, (long long)val);
		v = hist[i] / l.scale;
		for (int64_t j = 0; j < v; j++)
			fputc('@', out);
		fprintf(out, "%*lld\n", (int)(HIST_WIDTH - v + 1 + l.cnt_space), (long long)hist[i]);
	}
	fputc('\n', out);
}
