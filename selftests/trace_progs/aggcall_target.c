/*
 * The target of the tests of scripts aggregating at function, return and
 * statement points (test_script_agg_points.c): threads that call two
 * functions as fast as they can, and say what a script counting the calls
 * must find.  Plain C, nothing of djprobe.
 *
 *   aggcall_target [--threads N] [--calls K]
 *
 * It prints "ready PID" and waits for a line on stdin ("go"); then each of
 * N threads (default 4) makes K turns (default 500000), each calling
 *
 *   ac_work(v)        v of the turn and the thread, in [0, 99999]: returns
 *                     r = 3 v + 1, and runs the line tagged "work-line"
 *                     once
 *   ac_pair(w, v)     on every fourth turn, w the number of such turns
 *                     before, & 7: returns v
 *
 * and when they are all done prints
 *
 *   work COUNT SUM    calls of ac_work and the sum of their v
 *   pair COUNT SUM    the same of ac_pair
 *   ret SUM MIN MAX   of ac_work's return values
 *   big COUNT SUM     of those over 150000
 *   quarter Q COUNT SUM   for each Q: calls of ac_work with v & 3 = Q,
 *                     the sum of their v
 *   by_w W COUNT SUM  for each W: calls of ac_pair with w = W, the sum of
 *                     what they returned
 *   hist LOW COUNT    ac_work's return values in stap's @hist_log bucket
 *                     from LOW (the nonzero ones)
 *   done
 *
 * then exits 0 at the end of stdin.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 64

volatile long ac_sink;

__attribute__((noinline)) long ac_work(long v)
{
	long r = 3 * v + 1;
	ac_sink += r; /* tag: work-line */
	return r;
}

__attribute__((noinline)) long ac_pair(long w, long v)
{
	ac_sink -= w ^ v;
	return v;
}

struct worker {
	pthread_t th;
	int index;
	long calls;
	long work, pair;
	long long work_sum, pair_sum, ret_sum, ret_min, ret_max, by_w_sum[8], big_sum;
	long by_w[8], big, quarter[4];
	long long quarter_sum[4];
	long hist[64];
};

static void *turns(void *arg)
{
	struct worker *w = arg;
	for (long i = 0; i < w->calls; i++) {
		long v = (long)(((unsigned long)i * 2654435761u + (unsigned long)w->index * 7919u) % 100000u);
		long r = ac_work(v);
		if (!w->work++ || r < w->ret_min)
			w->ret_min = r;
		if (w->work == 1 || r > w->ret_max)
			w->ret_max = r;
		w->work_sum += v;
		w->quarter[v & 3]++;
		w->quarter_sum[v & 3] += v;
		w->ret_sum += r;
		if (r > 150000) {
			w->big++;
			w->big_sum += r;
		}
		w->hist[63 - __builtin_clzl((unsigned long)r)]++;
		if (i % 4 == 0) {
			long pw = (i / 4) & 7;
			w->by_w_sum[pw] += ac_pair(pw, v);
			w->by_w[pw]++;
			w->pair++;
			w->pair_sum += v;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	int nthreads = 4;
	long calls = 500000, work = 0, pair = 0, hist[64] = { 0 };
	long long work_sum = 0, pair_sum = 0, ret_sum = 0, ret_min = 0, ret_max = 0, by_w_sum[8] = { 0 }, big_sum = 0;
	long by_w[8] = { 0 }, big = 0, quarter[4] = { 0 };
	long long quarter_sum[4] = { 0 };
	char line[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
			calls = atol(argv[++i]);
	}
	if (nthreads < 1 || nthreads > MAX_THREADS)
		nthreads = 4;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < nthreads; i++) {
		w[i].index = i;
		w[i].calls = calls;
		pthread_create(&w[i].th, NULL, turns, &w[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		if (!w[i].work)
			continue;
		if (!work || w[i].ret_min < ret_min)
			ret_min = w[i].ret_min;
		if (!work || w[i].ret_max > ret_max)
			ret_max = w[i].ret_max;
		work += w[i].work;
		pair += w[i].pair;
		work_sum += w[i].work_sum;
		pair_sum += w[i].pair_sum;
		ret_sum += w[i].ret_sum;
		big += w[i].big;
		for (int q = 0; q < 4; q++) {
			quarter[q] += w[i].quarter[q];
			quarter_sum[q] += w[i].quarter_sum[q];
		}
		big_sum += w[i].big_sum;
		for (int k = 0; k < 8; k++) {
			by_w[k] += w[i].by_w[k];
			by_w_sum[k] += w[i].by_w_sum[k];
		}
		for (int b = 0; b < 64; b++)
			hist[b] += w[i].hist[b];
	}
	printf("work %ld %lld\n", work, work_sum);
	printf("pair %ld %lld\n", pair, pair_sum);
	printf("ret %lld %lld %lld\n", ret_sum, ret_min, ret_max);
	printf("big %ld %lld\n", big, big_sum);
	for (int q = 0; q < 4; q++)
		printf("quarter %d %ld %lld\n", q, quarter[q], quarter_sum[q]);
	for (int k = 0; k < 8; k++)
		printf("by_w %d %ld %lld\n", k, by_w[k], by_w_sum[k]);
	for (int b = 0; b < 64; b++)
		if (hist[b])
			printf("hist %ld %ld\n", 1l << b, hist[b]);
	printf("done\n");
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
