/*
 * The tapset functions whose state is kept by name or by id between probe
 * hits: stap's stopwatches, queue statistics and speculative output.
 *
 * stap writes the first two as script code over global arrays
 * (stopwatch.stp, queue_stats.stp) and the third in its C runtime.  Here
 * each is a small table owned by the run, with the same arithmetic:
 *
 *   stopwatch   start time (0: stopped) and the time accumulated, in ns of
 *               the source's clock (gettimeofday_ns); reading one that does
 *               not exist creates it, as stap's arrays do.
 *   queue       stap's "wait, run, done" model: counts of requests waiting
 *               and running, and time integrals of both (time with any,
 *               length times time), updated at every call; the qsq_*
 *               averages divide those by the elapsed time or by the count
 *               done, in microseconds (qs_time() is gettimeofday_us()).
 *   speculation a buffer per id; speculate() appends, commit() hands the
 *               text back to be printed, discard() drops it.
 *
 * Names are few in practice; each table is an array searched linearly and
 * bounded by MAXMAPENTRIES like the arrays stap uses, so a script that
 * makes names without end meets the same overflow error.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/djp/script/run/run.h"
#include "tapset_named.h"

struct stopwatch {
	char *name;
	int64_t start, acc;
};

struct queue {
	char *name;
	int64_t wtime, wlentime, wcount, rtime, rlentime, rcount, stime, utime, dcount;
};

struct spec {
	int64_t id;
	struct strbuf text;
};

struct tapset_named {
	struct stopwatch *sw;
	size_t nsw, capsw;
	struct queue *q;
	size_t nq, capq;
	struct spec *sp;
	size_t nsp, capsp;
	int64_t next_spec;
};

struct tapset_named *tapset_named_new(void)
{
	struct tapset_named *t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	return t;
}

void tapset_named_free(struct tapset_named *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nsw; i++)
		free(t->sw[i].name);
	for (size_t i = 0; i < t->nq; i++)
		free(t->q[i].name);
	for (size_t i = 0; i < t->nsp; i++)
		free(t->sp[i].text.p);
	free(t->sw);
	free(t->q);
	free(t->sp);
	free(t);
}

/* Grow *v (elements of size sz) to hold one more; false past the limit. */
static bool room(void **v, size_t *cap, size_t n, size_t sz)
{
	if (n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		void *nv;
		if (n >= MAXMAPENTRIES)
			return false;
		nv = realloc(*v, c * sz);
		if (!nv)
			abort();
		*v = nv;
		*cap = c;
	}
	return true;
}

static char *dup_name(const char *s)
{
	char *d = strdup(s);
	if (!d)
		abort();
	return d;
}

/* ---- stopwatches -------------------------------------------------------- */

static struct stopwatch *stopwatch(struct tapset_named *t, const char *name)
{
	for (size_t i = 0; i < t->nsw; i++)
		if (!strcmp(t->sw[i].name, name))
			return &t->sw[i];
	if (!room((void **)&t->sw, &t->capsw, t->nsw, sizeof(*t->sw)))
		return NULL;
	t->sw[t->nsw] = (struct stopwatch){ .name = dup_name(name) };
	return &t->sw[t->nsw++];
}

bool tapset_stopwatch(struct tapset_named *t, enum stopwatch_op op, const char *name, int64_t now_ns, int64_t *out)
{
	struct stopwatch *w;

	if (op == SW_DELETE) {
		for (size_t i = 0; i < t->nsw; i++)
			if (!strcmp(t->sw[i].name, name)) {
				free(t->sw[i].name);
				t->sw[i] = t->sw[--t->nsw];
				break;
			}
		return true;
	}
	if (!(w = stopwatch(t, name)))
		return false;
	switch (op) {
	case SW_START:
		if (!w->start)
			w->start = now_ns;
		break;
	case SW_STOP:
		if (w->start)
			w->acc += now_ns - w->start;
		w->start = 0;
		break;
	default:
		*out = w->acc + (w->start ? now_ns - w->start : 0);
		break;
	}
	return true;
}

/* ---- queue statistics --------------------------------------------------- */

static struct queue *queue(struct tapset_named *t, const char *name)
{
	for (size_t i = 0; i < t->nq; i++)
		if (!strcmp(t->q[i].name, name))
			return &t->q[i];
	if (!room((void **)&t->q, &t->capq, t->nq, sizeof(*t->q)))
		return NULL;
	t->q[t->nq] = (struct queue){ .name = dup_name(name) };
	return &t->q[t->nq++];
}

/* stap's _qs_update: the integrals up to now */
static void qs_update(struct queue *q, int64_t now)
{
	int64_t then = q->utime ? q->utime : now, delta = now - then;
	q->wtime += q->wcount ? delta : 0;
	q->wlentime += q->wcount * delta;
	q->rtime += q->rcount ? delta : 0;
	q->rlentime += q->rcount * delta;
	q->utime = now;
}

bool tapset_queue(struct tapset_named *t, enum queue_op op, const char *name, int64_t now_us)
{
	struct queue *q = queue(t, name);
	if (!q)
		return false;
	if (op == QS_START) {
		char *keep = q->name;
		*q = (struct queue){ .name = keep, .stime = now_us };
		return true;
	}
	qs_update(q, now_us);
	if (op == QS_WAIT) {
		q->wcount++;
	} else if (op == QS_RUN && q->wcount > 0) {
		q->wcount--;
		q->rcount++;
	} else if (op == QS_DONE && q->rcount > 0) {
		q->rcount--;
		q->dcount++;
	}
	return true;
}

int tapset_queue_avg(struct tapset_named *t, enum queue_avg avg, const char *name, int64_t scale, int64_t now_us,
		     int64_t *out)
{
	struct queue *q = queue(t, name);
	int64_t num, den;

	if (!q)
		return -1;
	qs_update(q, now_us);
	switch (avg) {
	case QA_UTILIZATION: num = q->rtime, den = now_us - q->stime; break;
	case QA_BLOCKED: num = q->wtime, den = now_us - q->stime; break;
	case QA_WAIT_QUEUE_LENGTH: num = q->wlentime, den = now_us - q->stime; break;
	case QA_THROUGHPUT: num = q->dcount, den = now_us - q->stime; break;
	case QA_SERVICE_TIME: num = q->rlentime, den = q->dcount; break;
	default: num = q->rlentime + q->wlentime, den = q->dcount; break; /* QA_WAIT_TIME */
	}
	if (!den)
		return 0; /* stap's division by 0 */
	*out = (int64_t)((uint64_t)scale * (uint64_t)num) / den;
	return 1;
}

/* ---- speculative output ------------------------------------------------- */

int64_t tapset_speculation(struct tapset_named *t)
{
	if (!room((void **)&t->sp, &t->capsp, t->nsp, sizeof(*t->sp)))
		return -1;
	t->sp[t->nsp] = (struct spec){ .id = ++t->next_spec };
	return t->sp[t->nsp++].id;
}

static struct spec *spec(struct tapset_named *t, int64_t id)
{
	for (size_t i = 0; i < t->nsp; i++)
		if (t->sp[i].id == id)
			return &t->sp[i];
	return NULL;
}

void tapset_speculate(struct tapset_named *t, int64_t id, const char *text)
{
	struct spec *s = spec(t, id);
	if (s)
		sb_put(&s->text, text, strlen(text));
}

char *tapset_spec_end(struct tapset_named *t, int64_t id, bool keep_text)
{
	struct spec *s = spec(t, id);
	char *text;
	if (!s)
		return NULL;
	text = keep_text ? s->text.p : NULL;
	if (!keep_text)
		free(s->text.p);
	*s = t->sp[--t->nsp];
	return text;
}
