/*
 * The target of the tests of scripts against fast hits (test_script_agg.c,
 * test_script_rings.c): it hits its markers as fast as it can from several
 * threads and says what a script counting them must find.
 *
 *   agg_target [--threads N] [--hits K] [--strings] [--ticks-every M]
 *
 * It prints "ready PID" and waits for a line on stdin ("go"); then each of
 * N threads (default 4) runs K turns (default 1000000), each turn firing
 *
 *   agg_hit v=V    V a value spread over [-500, 99499], of the turn and
 *                  the thread
 *   agg_fn  fn=P   P one of three functions (agg_fa, agg_fb, agg_fc), or
 *                  one byte into it: usymname() names the function either way
 *
 * and with --strings also
 *
 *   agg_str p=P       P a string: "alpha", "beta", "gamma", "delta", or
 *                     "alpha" again at another address (a copy the
 *                     thread made)
 *   agg_name name=S   S the same string, a %s argument
 *
 * and with --ticks-every M, after every M turns of a thread,
 *
 *   agg_tick mine=I   I the turns the thread has taken
 *
 * and when they are all done prints, for the script to be checked against:
 *
 *   total COUNT SUM MIN MAX VARIANCE   of every V (stap's @variance)
 *   fn NAME COUNT                      agg_fn hits of each function
 *   word TEXT COUNT                    agg_str hits of each text (--strings)
 *   done
 *
 * then exits 0 at the end of stdin.
 */
#include <djprobe/marker.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 64

__attribute__((noinline, used)) int agg_fa(int x)
{
	return x * 3 + 1;
}
__attribute__((noinline, used)) int agg_fb(int x)
{
	return x * 5 + 2;
}
__attribute__((noinline, used)) int agg_fc(int x)
{
	return x * 7 + 3;
}

static int (*const fns[3])(int) = { agg_fa, agg_fb, agg_fc };
static const char *const words[4] = { "alpha", "beta", "gamma", "delta" };
static int strings;
static long ticks_every;
static const char *const fn_names[3] = { "agg_fa", "agg_fb", "agg_fc" };

struct worker {
	pthread_t th;
	int index;
	long hits;
	long count, fn_count[3], word_count[4];
	long long sum, min, max;
	__int128 sumsq;
};

static long value_of(long i, int t)
{
	return (long)(((unsigned long)i * 2654435761u + (unsigned long)t * 7919u) % 100000u) - 500;
}

static void *turns(void *arg)
{
	struct worker *w = arg;
	char *alpha = strdup(words[0]);
	for (long i = 0; i < w->hits; i++) {
		long v = value_of(i, w->index);
		const char *fp = (const char *)fns[i % 3] + (i & 1);
		MARK(agg_hit, "v=%ld", v);
		MARK(agg_fn, "fn=%p", fp);
		if (strings) {
			const char *word = i % 5 == 4 ? alpha : words[i % 5];
			MARK(agg_str, "p=%p", word);
			MARK(agg_name, "name=%s", word);
			w->word_count[i % 5 == 4 ? 0 : i % 5]++;
		}
		if (!w->count++ || v < w->min)
			w->min = v;
		if (w->count == 1 || v > w->max)
			w->max = v;
		w->sum += v;
		w->sumsq += (__int128)v * v;
		w->fn_count[i % 3]++;
		if (ticks_every && (i + 1) % ticks_every == 0) {
			long mine = i + 1;
			MARK(agg_tick, "mine=%ld", mine);
		}
	}
	free(alpha);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	int nthreads = 4;
	long hits = 1000000, count = 0, fn_count[3] = { 0 }, word_count[4] = { 0 };
	long long sum = 0, min = 0, max = 0;
	__int128 sumsq = 0, n, s;
	char line[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hits") && i + 1 < argc)
			hits = atol(argv[++i]);
		else if (!strcmp(argv[i], "--strings"))
			strings = 1;
		else if (!strcmp(argv[i], "--ticks-every") && i + 1 < argc)
			ticks_every = atol(argv[++i]);
	}
	if (nthreads < 1 || nthreads > MAX_THREADS)
		nthreads = 4;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < nthreads; i++) {
		w[i].index = i;
		w[i].hits = hits;
		pthread_create(&w[i].th, NULL, turns, &w[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		if (!w[i].count)
			continue;
		if (!count || w[i].min < min)
			min = w[i].min;
		if (!count || w[i].max > max)
			max = w[i].max;
		count += w[i].count;
		sum += w[i].sum;
		sumsq += w[i].sumsq;
		for (int k = 0; k < 3; k++)
			fn_count[k] += w[i].fn_count[k];
		for (int k = 0; k < 4; k++)
			word_count[k] += w[i].word_count[k];
	}
	n = count;
	s = sum;
	printf("total %ld %lld %lld %lld %lld\n", count, sum, min, max,
	       count > 1 ? (long long)((n * sumsq - s * s) / (n * (n - 1))) : 0);
	for (int k = 0; k < 3; k++)
		printf("fn %s %ld\n", fn_names[k], fn_count[k]);
	for (int k = 0; strings && k < 4; k++)
		printf("word %s %ld\n", words[k], word_count[k]);
	printf("done\n");
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
