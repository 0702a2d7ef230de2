/*
 * A traced program whose main thread calls pthread_exit exits as it would
 * untraced: when its last thread ends, with exit(0) (its atexit handler's
 * line, which only exit's flush writes), under `djp trace -c` (the agent
 * preloaded) and `-x` (the agent injected while the workers wait), with 0,
 * 1 and 8 workers; and the trace ends as it does for any process that
 * exits, with every event of the workers that outlived main
 * (trace_progs/lastexit_target.c; the agent's thread leaves glibc's count
 * of threads: kernel/agent/last_thread.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

/* How long a target may take to end once it was let go: it has nothing to
 * wait for, so this bounds a loaded machine's delay, not a protocol's. */
#define END_MS 15000

static const char *target(void)
{
	static char p[4096];
	if (!p[0])
		snprintf(p, sizeof(p), "%s", djp_test_path("trace_progs/lastexit_target"));
	return p;
}

/* The target's own lines of buf, in order, "ready PID" as "ready". */
static void program_lines(const char *buf, char *out, size_t size)
{
	size_t n = 0;

	out[0] = 0;
	for (const char *s = buf; *s;) {
		const char *e = strchr(s, '\n');
		int len = e ? (int)(e - s) : (int)strlen(s);
		if (!strncmp(s, "ready ", 6))
			n += (size_t)snprintf(out + n, size - n, "ready\n");
		else if (!strncmp(s, "plugin loaded", 13) || !strncmp(s, "atexit: ", 8))
			n += (size_t)snprintf(out + n, size - n, "%.*s\n", len, s);
		CHECK(n < size);
		s = e ? e + 1 : s + len;
	}
}

/* A run that must have ended by itself (not killed at the bound) with
 * status 0. */
static void check_ended(int st, const char *who, long workers, const struct tproc *p)
{
	if (st == -1)
		djp_test_fail(__FILE__, __LINE__,
			      "%s with %ld workers: not ended %d s after main's pthread_exit (killed); stdout:\n%s\nstderr:\n%s",
			      who, workers, END_MS / 1000, p->obuf, p->ebuf);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "%s with %ld workers: status %#x; stdout:\n%s\nstderr:\n%s", who,
			      workers, st, p->obuf, p->ebuf);
}

/* The untraced run: its own lines, which must be what the essay says. */
static void untraced(long workers, char *out, size_t size)
{
	char n[16], want[128];
	struct tproc *t;

	snprintf(n, sizeof(n), "%ld", workers);
	t = tt_spawn((char *const[]){ (char *)target(), n, NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	check_ended(tt_finish(t, END_MS), "untraced", workers, t);
	program_lines(t->obuf, out, size);
	snprintf(want, sizeof(want), "ready\natexit: %ld workers done\n", workers);
	CHECK_STR(out, want);
	free(t);
}

/* The trace's summary: le_main once, le_work once per worker. */
static void check_events(const struct tproc *p, long workers)
{
	unsigned long long ev, lost;

	if (!tt_summary_row(p->ebuf, "le_main", &ev, &lost) || ev != 1 || lost)
		djp_test_fail(__FILE__, __LINE__, "le_main not once: %s", p->ebuf);
	if (!workers)
		return;
	if (!tt_summary_row(p->ebuf, "le_work", &ev, &lost) || ev != (unsigned long long)workers || lost)
		djp_test_fail(__FILE__, __LINE__, "le_work not %ld times: %s", workers, p->ebuf);
	CHECK_EQ(tt_count(p->obuf, " le_work i="), workers);
}

static void launch(long workers)
{
	char cmd[4200], want[512], got[512];
	struct tproc *p;

	untraced(workers, want, sizeof(want));
	snprintf(cmd, sizeof(cmd), "%s %ld", target(), workers);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "le_*", NULL }, false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	check_ended(tt_finish(p, END_MS), "djp trace -c", workers, p); /* its status is the command's */
	CHECK(strstr(p->ebuf, "the command exited"));
	program_lines(p->obuf, got, sizeof(got));
	CHECK_STR(got, want);
	check_events(p, workers);
	free(p);
}

static void attach(long workers)
{
	char n[16], pid[16], want[512], got[512];
	struct tproc *t, *p;

	untraced(workers, want, sizeof(want));
	snprintf(n, sizeof(n), "%ld", workers);
	t = tt_spawn((char *const[]){ (char *)target(), n, NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "le_*", NULL }, false, -1);
	CHECK(tt_wait_armed(t->pid, target(), 10000));
	check_ended(tt_finish(t, END_MS), "the target under djp trace -x", workers, t);
	program_lines(t->obuf, got, sizeof(got));
	CHECK_STR(got, want);
	check_ended(tt_finish(p, END_MS), "djp trace -x", workers, p);
	CHECK(strstr(p->ebuf, "the process exited"));
	check_events(p, workers);
	free(p);
	free(t);
}

TEST(trace_last_thread_launch_exits)
{
	launch(0);
	launch(1);
	launch(8);
}

TEST(trace_last_thread_attach_exits)
{
	attach(0);
	attach(1);
	attach(8);
}

/* The workers hit their markers after an object was loaded while main was
 * gone: the engine's look at the loader's list (which arms the plugin)
 * still knows the program, whose path a zombie leader no longer gives. */
TEST(trace_last_thread_events_after_a_load)
{
	char cmd[8400];
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "%s 8 %s", target(), tt_plugin());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "[lt][ep]_*", NULL }, false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "go\n");
	CHECK(tt_wait_out(p, " tp_plugin n=0", 10000)); /* armed by that look */
	check_ended(tt_finish(p, END_MS), "djp trace -c", 8, p);
	CHECK(strstr(p->obuf, "plugin loaded\n"));
	CHECK(strstr(p->obuf, "atexit: 8 workers done\n"));
	if (strstr(p->ebuf, "arming error"))
		djp_test_fail(__FILE__, __LINE__, "%s", p->ebuf);
	check_events(p, 8);
	free(p);
}

/* Until pid's main thread is a zombie (its state after the last ')'). */
static bool wait_zombie(pid_t pid, int timeout_ms)
{
	for (int i = 0; i < timeout_ms; i++) {
		char path[64], buf[512], *c;
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (!(f = fopen(path, "re")))
			return false;
		c = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (c && c[1] == ' ' && c[2] == 'Z')
			return true;
		usleep(1000);
	}
	return false;
}

/* -x once main has called pthread_exit: refused in one line that says so,
 * not "it has exited", and the program goes on and exits as before. */
TEST(trace_last_thread_attach_after_main_says_why)
{
	char pid[16], want[512], got[512];
	struct tproc *t, *p;
	int st;

	t = tt_spawn((char *const[]){ (char *)target(), "1", (char *)tt_plugin(), NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	tt_send(t, "go\n");
	CHECK(tt_wait_out(t, "plugin loaded", 10000)); /* main joined */
	CHECK(wait_zombie(t->pid, 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "le_*", NULL }, false, -1);
	st = tt_finish(p, END_MS);
	CHECK(st != -1 && WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 1);
	CHECK_EQ(tt_lines(p->ebuf), 1);
	if (!strstr(p->ebuf, "its main thread has ended (pthread_exit) and 1 other thread runs on: attaching to such a "
			     "process is not supported yet"))
		djp_test_fail(__FILE__, __LINE__, "%s", p->ebuf);
	check_ended(tt_finish(t, END_MS), "the target after a refused -x", 1, t);
	program_lines(t->obuf, got, sizeof(got));
	snprintf(want, sizeof(want), "ready\nplugin loaded\natexit: 1 workers done\n");
	CHECK_STR(got, want);
	free(p);
	free(t);
}
