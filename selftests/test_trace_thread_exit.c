/*
 * Markers hit while threads exit (trace_progs/thread_exit_target.c):
 * in a thread_local's destructor, in a key destructor that glibc runs
 * after the ring's, and in one it runs in each of its rounds, the last
 * after the ring's last.  Every event of every thread arrives exactly
 * once, with its thread's tid, and none is lost: a thread keeps one ring
 * slot until it is gone, so 1000 threads that record on their way out do
 * not use up the 256 slots.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

#define ROUNDS 20
#define THREADS 50 /* at once, more than the machine's cores */
#define N (ROUNDS * THREADS)
#define PER_THREAD (3 + PTHREAD_DESTRUCTOR_ITERATIONS)

struct seen {
	int tid;
	unsigned char body, tls, key, round[PTHREAD_DESTRUCTOR_ITERATIONS + 1];
};

TEST_TIMEOUT(trace_markers_hit_while_threads_exit_arrive_once, 180)
{
	static struct seen v[N];
	char cmd[4096];
	struct tproc *p;
	unsigned long long events, lost;
	long lines = 0;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %d %d", djp_test_path("trace_progs/thread_exit_target"), ROUNDS, THREADS);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "tx_*", NULL }, false, -1);
	st = tt_finish(p, 170000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %#x: %.2000s", st, p->ebuf);
	for (char *l = p->obuf, *nl; *l; l = nl + 1) {
		char name[32];
		long i, r = 0;
		int pid, tid, k;
		struct seen *s;
		unsigned char *c;

		if (!(nl = strchr(l, '\n')))
			break;
		*nl = 0;
		if (!strncmp(l, "done ", 5))
			continue;
		k = sscanf(l, "%*s %d %d %31s i=%ld r=%ld", &pid, &tid, name, &i, &r);
		if (k < 4 || i < 0 || i >= N)
			djp_test_fail(__FILE__, __LINE__, "an unexpected line: %s", l);
		s = &v[i];
		if (s->tid && s->tid != tid)
			djp_test_fail(__FILE__, __LINE__, "thread %ld's events under tids %d and %d", i, s->tid, tid);
		s->tid = tid;
		if (!strcmp(name, "tx_body"))
			c = &s->body;
		else if (!strcmp(name, "tx_tls"))
			c = &s->tls;
		else if (!strcmp(name, "tx_key"))
			c = &s->key;
		else if (!strcmp(name, "tx_round") && k == 5 && r >= 1 && r <= PTHREAD_DESTRUCTOR_ITERATIONS)
			c = &s->round[r];
		else
			djp_test_fail(__FILE__, __LINE__, "an unexpected line: %s", l);
		if ((*c)++)
			djp_test_fail(__FILE__, __LINE__, "twice: %s", l);
		lines++;
	}
	for (int i = 0; i < N; i++) {
		bool all = v[i].body && v[i].tls && v[i].key;
		for (int r = 1; r <= PTHREAD_DESTRUCTOR_ITERATIONS; r++)
			all = all && v[i].round[r];
		if (!all)
			djp_test_fail(__FILE__, __LINE__, "thread %d: an event missing (%ld events of %d read): %.2000s", i,
				      lines, N * PER_THREAD, p->ebuf);
	}
	CHECK_EQ(lines, N * PER_THREAD);
	CHECK(tt_summary_row(p->ebuf, "tx_round", &events, &lost));
	CHECK_EQ(events, (unsigned long long)N * PTHREAD_DESTRUCTOR_ITERATIONS);
	CHECK_EQ(lost, 0);
	CHECK(!strstr(p->ebuf, "no ring slot"));
	free(p);
}

/* The same counted by a script, per tid, in the target's tables (the
 * aggregation keeps them per ring slot): 7 for each of the 1000 threads. */
TEST_TIMEOUT(script_counts_markers_hit_while_threads_exit_per_thread, 180)
{
	char cmd[4096], *out, *save = NULL;
	long tids = 0, total = -1;

	snprintf(cmd, sizeof(cmd), "%s %d %d", djp_test_path("trace_progs/thread_exit_target"), ROUNDS, THREADS);
	out = tt_script_output(cmd,
			       "global n, m\n"
			       "probe process.mark(\"tx_*\") { n[tid()]++; m++ }\n"
			       "probe end { foreach (t in n) printf(\"%d %d\\n\", t, n[t]); printf(\"total %d\\n\", m) }\n",
			       NULL);
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long tid, c;
		if (sscanf(l, "total %ld", &total) == 1 || !strncmp(l, "done ", 5))
			continue;
		if (sscanf(l, "%ld %ld", &tid, &c) != 2 || c != PER_THREAD)
			djp_test_fail(__FILE__, __LINE__, "not %d events for a thread: %s", PER_THREAD, l);
		tids++;
	}
	CHECK_EQ(tids, N);
	CHECK_EQ(total, N * PER_THREAD);
	free(out);
}
