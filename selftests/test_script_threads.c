/*
 * process.thread.begin and process.thread.end in scripts, against a target
 * whose threads return, call pthread_exit, are cancelled, fork, and
 * outlive main (trace_progs/thread_life_target.c): exactly one begin for
 * each thread it starts, exactly one end for each that ends, each
 * thread's begin before its own event and its end after it, pid(), tid()
 * and execname() those of the thread, nothing for the main thread nor for
 * the child of fork, and process("PATH").thread.begin only for PATH.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

/* More threads than cores, in batches; a third of them cancelled. */
#define THREADS 60

static const char script[] =
	"probe process.thread.begin { printf(\"begin %d %d %s %s\\n\", pid(), tid(), execname(), pp()) }\n"
	"probe process.thread.end { printf(\"end %d %d %s %s\\n\", pid(), tid(), execname(), pp()) }\n"
	"probe process(\"thread_life_target\").thread.begin { printf(\"mine %d\\n\", tid()) }\n"
	"probe process(\"no_such_program\").thread.begin { printf(\"other %d\\n\", tid()) }\n"
	"probe process.mark(\"tl_work\") { printf(\"work %d %d %d\\n\", pid(), tid(), $i) }\n";

/* djp -o OUT -c 'thread_life_target THREADS' -e text: the script's
 * output; the target's pid in *main. */
static char *run(const char *text, int *main_pid)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "%s %d", djp_test_path("trace_progs/thread_life_target"), THREADS);
	return tt_script_output(cmd, text, main_pid);
}

struct thr {
	int tid;
	int state; /* 0 before its begin, 1 between, 2 after its end */
	int work;  /* its tl_work's i, -2 before */
};

static struct thr *thr_of(struct thr *v, int *n, int tid)
{
	for (int i = 0; i < *n; i++)
		if (v[i].tid == tid)
			return &v[i];
	CHECK(*n < THREADS + 8);
	v[*n] = (struct thr){ .tid = tid, .work = -2 };
	return &v[(*n)++];
}

TEST_TIMEOUT(script_thread_begin_and_end, 120)
{
	static struct thr v[THREADS + 8];
	int main_pid = 0, n = 0, begins = 0, ends = 0, works = 0, mine = 0, child_works = 0;
	char *out = run(script, &main_pid), *save = NULL;
	bool seen[THREADS + 2] = { false };

	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char what[16], comm[64], pp[64];
		int pid, tid, i;
		struct thr *t;

		if (sscanf(l, "%15s %d %d %63s %63s", what, &pid, &tid, comm, pp) == 5 &&
		    (!strcmp(what, "begin") || !strcmp(what, "end"))) {
			bool begin = what[0] == 'b';
			CHECK_EQ(pid, main_pid); /* the child of fork has none */
			CHECK(tid != pid);	 /* nor the main thread */
			CHECK_STR(comm, "thread_life_tar"); /* comm: 15 bytes */
			CHECK_STR(pp, begin ? "process.thread.begin" : "process.thread.end");
			t = thr_of(v, &n, tid);
			if (t->state != (begin ? 0 : 1))
				djp_test_fail(__FILE__, __LINE__, "%s of %d in state %d:\n%s", what, tid, t->state, out);
			t->state = begin ? 1 : 2;
			begins += begin;
			ends += !begin;
		} else if (sscanf(l, "work %d %d %d", &pid, &tid, &i) == 3) {
			if (i == -1) { /* the child of fork, its own process */
				CHECK(pid != main_pid);
				CHECK_EQ(tid, pid);
				child_works++;
				continue;
			}
			CHECK_EQ(pid, main_pid);
			CHECK(i >= 0 && i < THREADS + 2 && !seen[i]);
			seen[i] = true;
			t = thr_of(v, &n, tid);
			if (t->state != 1)
				djp_test_fail(__FILE__, __LINE__, "the event of %d outside its begin and end:\n%s", tid, out);
			t->work = i;
			works++;
		} else if (sscanf(l, "mine %d", &tid) == 1) {
			mine++;
		} else {
			djp_test_fail(__FILE__, __LINE__, "an unexpected line: %s", l);
		}
	}
	/* every thread main started, the forker and the straggler */
	CHECK_EQ(works, THREADS + 2);
	CHECK_EQ(child_works, 1);
	CHECK_EQ(n, THREADS + 2);
	CHECK_EQ(begins, THREADS + 2);
	CHECK_EQ(mine, THREADS + 2);
	/* all but the straggler, which runs when main returns */
	CHECK_EQ(ends, THREADS + 1);
	for (int k = 0; k < n; k++) {
		CHECK(v[k].work >= 0);
		CHECK_EQ(v[k].state, v[k].work == THREADS + 1 ? 1 : 2);
	}
	free(out);
}

/* Counted in globals, only the ends: the begins are recorded all the
 * same (the agent's markers are armed by name). */
TEST_TIMEOUT(script_thread_end_counted, 120)
{
	char *out = run("global e\n"
			"probe process.thread.end { e++ }\n"
			"probe end { printf(\"%d\\n\", e) }\n",
			NULL);
	char want[32];
	snprintf(want, sizeof(want), "%d\n", THREADS + 1);
	CHECK_STR(out, want);
	free(out);
}

/* A glob never reaches the library's own markers: the program's markers
 * only, as before there were any. */
TEST_TIMEOUT(script_thread_markers_not_globbed, 120)
{
	char *out = run("global w\n"
			"probe process.mark(\"*\") { w++ }\n"
			"probe end { printf(\"%d\\n\", w) }\n",
			NULL);
	char want[32];
	snprintf(want, sizeof(want), "%d\n", THREADS + 2 + 1); /* tl_work's, the child's too */
	CHECK_STR(out, want);
	free(out);
}

/* An agent injected into a running program (djp -x): the program's calls
 * to pthread_create reach the interposer through its GOT, and the threads
 * it starts from then on have their begin and end. */
TEST_TIMEOUT(script_thread_begin_and_end_injected, 120)
{
	char target[4096], pid[16];
	char *tv[] = { target, "-", NULL };
	struct tproc *t, *p;
	int st, k = 5;

	snprintf(target, sizeof(target), "%s", djp_test_path("trace_progs/thread_life_target")); /* a static buffer */
	t = tt_spawn(tv, false, -1);

	CHECK(tt_wait_out(t, "ready\n", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", pid, "-e",
				      "probe process.thread.begin { printf(\"begin %d\\n\", tid()) }\n"
				      "probe process.thread.end { printf(\"end %d\\n\", tid()) }\n"
				      "probe process.mark(\"tl_work\") { printf(\"work %d\\n\", tid()) }\n",
				      NULL },
		     false, -1);
	/* the program's marker armed: the library's are, before it */
	if (!tt_wait_armed(t->pid, target, 30000))
		djp_test_fail(__FILE__, __LINE__, "djp -x never armed tl_work: status %#x: %s", tt_finish(p, 5000),
			      p->ebuf);
	tt_send(t, "5\n");
	CHECK(tt_wait_out(t, "done 5\n", 30000));
	tt_end(t); /* it exits 0, and djp with it */
	st = tt_finish(p, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s / %s", st, p->obuf, p->ebuf);
	if (tt_count(p->obuf, "begin ") != k || tt_count(p->obuf, "end ") != k || tt_count(p->obuf, "work ") != k)
		djp_test_fail(__FILE__, __LINE__, "not %d of each:\n%s", k, p->obuf);
	/* each thread's begin, event and end, in that order */
	for (const char *b = strstr(p->obuf, "begin "); b; b = strstr(b + 1, "begin ")) {
		char want[64];
		const char *w, *e;
		int tid = atoi(b + 6);
		snprintf(want, sizeof(want), "work %d\n", tid);
		w = strstr(p->obuf, want);
		snprintf(want, sizeof(want), "end %d\n", tid);
		e = strstr(p->obuf, want);
		if (!w || !e || w < b || e < w)
			djp_test_fail(__FILE__, __LINE__, "thread %d out of order:\n%s", tid, p->obuf);
	}
	free(p);
}

/* -l lists the points as written, as process.begin; and a glob lists the
 * program's markers, never the library's own. */
TEST_TIMEOUT(script_list_thread_begin, 60)
{
	static const struct {
		const char *point, *out;
	} cases[] = {
		{ "process(\"thread_life_target\").thread.begin", "process(\"thread_life_target\").thread.begin\n" },
		{ "process.thread.end", "process.thread.end\n" },
		{ "process.mark(\"*\")", "mark(\"tl_work\")\n" },
	};
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "%s 0", djp_test_path("trace_progs/thread_life_target"));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-l", (char *)cases[i].point, NULL },
					   false, -1);
		int st = tt_finish(p, 30000);
		const char *at = strstr(p->obuf, cases[i].out);
		if (!WIFEXITED(st) || WEXITSTATUS(st) || !at || strstr(p->obuf, "__djp") ||
		    (i < 2 && strcmp(p->obuf, cases[i].out)))
			djp_test_fail(__FILE__, __LINE__, "djp -l '%s': status %#x:\n%s", cases[i].point, st, p->obuf);
		free(p);
	}
}
