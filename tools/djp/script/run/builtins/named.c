/*
 * Built-in functions of state kept by name or id (tapset_named.c has it):
 * stap's stopwatches (stopwatch.stp), queue statistics (queue_stats.stp)
 * and speculative output (speculative.stp).  The state is made at the
 * first call; a full table is stap's MAXMAPENTRIES error.
 */
#include <stdlib.h>
#include <string.h>

#include "tapset_named.h"
#include "tools/djp/script/run/interp.h"

static struct tapset_named *named(struct run *r)
{
	if (!r->named)
		r->named = tapset_named_new();
	return r->named;
}

/* a stopwatch's op; its reading divided by unit ns */
static int64_t stopwatch(struct run *r, struct node *n, enum stopwatch_op op, int64_t unit)
{
	int64_t v = 0;
	if (!tapset_stopwatch(named(r), op, eval_s(r, n->args[0]), (int64_t)now_ns(r), &v))
		rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
	return op == SW_READ ? v / unit : 0;
}

/* One built-in per operation and unit (stopwatch.stp's names). */
#define STOPWATCH_BUILTIN(name, op, unit)                    \
	int64_t bi_##name(struct run *r, struct node *n)     \
	{                                                    \
		return stopwatch(r, n, op, unit);            \
	}
STOPWATCH_BUILTIN(start_stopwatch, SW_START, 1)
STOPWATCH_BUILTIN(stop_stopwatch, SW_STOP, 1)
STOPWATCH_BUILTIN(delete_stopwatch, SW_DELETE, 1)
STOPWATCH_BUILTIN(read_stopwatch_s, SW_READ, 1000000000)
STOPWATCH_BUILTIN(read_stopwatch_ms, SW_READ, 1000000)
STOPWATCH_BUILTIN(read_stopwatch_us, SW_READ, 1000)
STOPWATCH_BUILTIN(read_stopwatch_ns, SW_READ, 1)

/* a request's move through the queue named by argument 1, now */
static int64_t queue(struct run *r, struct node *n, enum queue_op op)
{
	if (!tapset_queue(named(r), op, eval_s(r, n->args[0]), (int64_t)(now_ns(r) / 1000)))
		rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
	return 0;
}

/* One built-in per move (queue_stats.stp's names). */
#define QUEUE_BUILTIN(name, op)                              \
	int64_t bi_##name(struct run *r, struct node *n)     \
	{                                                    \
		return queue(r, n, op);                      \
	}
QUEUE_BUILTIN(qs_wait, QS_WAIT)
QUEUE_BUILTIN(qs_run, QS_RUN)
QUEUE_BUILTIN(qs_done, QS_DONE)
QUEUE_BUILTIN(qsq_start, QS_START)

/* One of the queue's averages, times scale; a queue that has seen
 * nothing is stap's division by 0. */
static int64_t queue_avg(struct run *r, struct node *n, enum queue_avg avg, const char *q, int64_t scale,
			 int64_t now_us)
{
	int64_t v = 0;
	int rc = tapset_queue_avg(named(r), avg, q, scale, now_us, &v);
	if (rc < 0)
		rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
	if (rc == 0)
		rt_error(r, n, "division by 0");
	return v;
}

/* queue_stats.stp's line, from the same averages */
int64_t bi_qsq_print(struct run *r, struct node *n)
{
	static const struct {
		enum queue_avg avg;
		int64_t scale;
	} col[] = { { QA_THROUGHPUT, 1000000000 }, { QA_WAIT_QUEUE_LENGTH, 1000 }, { QA_WAIT_TIME, 1 },
		    { QA_SERVICE_TIME, 1 }, { QA_BLOCKED, 100 }, { QA_UTILIZATION, 100 } };
	const char *q = eval_s(r, n->args[0]);
	int64_t x[6], now = (int64_t)(now_ns(r) / 1000); /* one time for the six */
	for (int i = 0; i < 6; i++)
		x[i] = queue_avg(r, n, col[i].avg, q, col[i].scale, now);
	emitf(r, "%s: %lld.%03lld ops/s, %lld.%03lld qlen, %lld await, %lld svctm, %lld%% wait, %lld%% util\n", q,
	      (long long)(x[0] / 1000), (long long)(x[0] % 1000), (long long)(x[1] / 1000), (long long)(x[1] % 1000),
	      (long long)x[2], (long long)x[3], (long long)x[4], (long long)x[5]);
	return 0;
}

/* qsq_utilization(q, scale) and the like */
static int64_t queue_avg_of(struct run *r, struct node *n, enum queue_avg avg)
{
	const char *q = eval_s(r, n->args[0]);
	int64_t scale = eval_n(r, n->args[1]);
	return queue_avg(r, n, avg, q, scale, (int64_t)(now_ns(r) / 1000));
}

/* One built-in per average */
#define QUEUE_AVG_BUILTIN(name, avg)                         \
	int64_t bi_##name(struct run *r, struct node *n)     \
	{                                                    \
		return queue_avg_of(r, n, avg);              \
	}
QUEUE_AVG_BUILTIN(qsq_utilization, QA_UTILIZATION)
QUEUE_AVG_BUILTIN(qsq_blocked, QA_BLOCKED)
QUEUE_AVG_BUILTIN(qsq_wait_queue_length, QA_WAIT_QUEUE_LENGTH)
QUEUE_AVG_BUILTIN(qsq_service_time, QA_SERVICE_TIME)
QUEUE_AVG_BUILTIN(qsq_wait_time, QA_WAIT_TIME)
QUEUE_AVG_BUILTIN(qsq_throughput, QA_THROUGHPUT)

int64_t bi_speculation(struct run *r, struct node *n)
{
	int64_t v = tapset_speculation(named(r));
	if (v < 0)
		rt_error(r, n, "too many speculations (MAXMAPENTRIES)");
	return v;
}

int64_t bi_speculate(struct run *r, struct node *n)
{
	int64_t id = eval_n(r, n->args[0]);
	tapset_speculate(named(r), id, eval_s(r, n->args[1]));
	return 0;
}

/* commit(id) prints the speculation's text, discard(id) drops it */
static int64_t spec_end(struct run *r, struct node *n, bool commit)
{
	char *text = tapset_spec_end(named(r), eval_n(r, n->args[0]), commit);
	if (text)
		emit(r, text, strlen(text));
	free(text);
	return 0;
}

int64_t bi_commit(struct run *r, struct node *n)
{
	return spec_end(r, n, true);
}

int64_t bi_discard(struct run *r, struct node *n)
{
	return spec_end(r, n, false);
}
