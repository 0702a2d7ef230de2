/*
 * djp trace -a: every process of a program, running before the trace or
 * started during it (through another program's exec too), each armed and
 * its hits counted exactly; a copy of the program at another path left
 * alone; as an unprivileged user, that user's processes only; and the
 * figures: a hundred processes running, then fifty started in a second.
 *
 * The processes are all_target's: each waits until its marker's site is a
 * jump, hits it 50 times and prints "armed PID US", so that what it
 * recorded after its arming is known exactly.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define NOBODY 65534
#define HITS 50
#define MAXP 256

static const char *target(void)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s", djp_test_path("trace_progs/all_target"));
	return path;
}

/* A copy of all_target at another path, in a directory anyone may enter. */
static void copy_target(char *dir, char *copy, size_t sz)
{
	char cmd[8400];
	strcpy(dir, "/tmp/djp-all-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	CHECK(chmod(dir, 0755) == 0);
	snprintf(copy, sz, "%s/all_target", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 755 '%s'", target(), copy, copy);
	CHECK(system(cmd) == 0);
}

static void remove_copy(const char *dir, const char *copy)
{
	unlink(copy);
	rmdir(dir);
}

static struct tproc *sh(const char *cmd, int uid)
{
	return tt_spawn((char *const[]){ "/bin/sh", "-c", (char *)cmd, NULL }, false, uid);
}

static long ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Read p's output until it has n lines starting with `word` (within
 * timeout_ms, else the test fails). */
static void wait_lines(struct tproc *p, const char *word, int n, int timeout_ms)
{
	long until = ms_now() + timeout_ms;
	char needle[32];
	snprintf(needle, sizeof(needle), "%s ", word);
	while (tt_count(p->obuf, needle) < n) {
		if (ms_now() > until)
			djp_test_fail(__FILE__, __LINE__, "%d '%s' lines of %d after %d ms: %s",
				      tt_count(p->obuf, needle), word, n, timeout_ms, p->obuf);
		tt_wait_out(p, "\n\n\n", 20); /* reads what there is */
	}
}

/* The pids (and numbers after them) of p's lines "WORD PID [US]". */
static int pids_of(const struct tproc *p, const char *word, pid_t *pids, long *us, int max)
{
	char needle[32];
	const char *c = p->obuf;
	int n = 0;
	snprintf(needle, sizeof(needle), "%s ", word);
	while (n < max && (c = strstr(c, needle))) {
		if (c == p->obuf || c[-1] == '\n') {
			char *end;
			pids[n] = (pid_t)strtol(c + strlen(needle), &end, 10);
			if (us)
				us[n] = strtol(end, NULL, 10);
			n++;
		}
		c += strlen(needle);
	}
	return n;
}

static bool among(const pid_t *v, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

/* at_hit event lines of process pid in text (TIMESTAMP PID TID NAME ...) */
static int events_of(const char *text, pid_t pid)
{
	char needle[64];
	snprintf(needle, sizeof(needle), " %d %d at_hit ", (int)pid, (int)pid);
	return tt_count(text, needle);
}

/* The at_hit count of pid's summary blocks (more than one when the pid
 * was used again by a later process of the test: the machine's pids wrap);
 * -1 when it has none. */
static long long summary_of(const char *summary, pid_t pid)
{
	char head[64];
	const char *b, *next;
	unsigned long long ev, lost;
	long long sum = -1;
	snprintf(head, sizeof(head), "djp trace: process %d (", (int)pid);
	for (b = summary; (b = strstr(b, head)); b++) {
		next = strstr(b + 1, "djp trace: process ");
		if (sum < 0)
			sum = 0;
		if (tt_summary_row(b, "at_hit", &ev, &lost) && !(next && strstr(b, "at_hit") > next))
			sum += (long long)ev;
	}
	return sum;
}

static int times_in(const pid_t *v, int n, pid_t pid)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		k += v[i] == pid;
	return k;
}

/* Every armed process has HITS events, as lines and in its block (a pid
 * two armed processes had in turn, twice that); none of `others` has
 * any, nor a block. */
static void check_counts(const char *events, const char *summary, const pid_t *armed, int narmed,
			 const pid_t *others, int nothers)
{
	for (int i = 0; i < narmed; i++) {
		int lines = events_of(events, armed[i]), k = times_in(armed, narmed, armed[i]);
		long long sum = summary_of(summary, armed[i]);
		if (lines != k * HITS || sum != k * HITS)
			djp_test_fail(__FILE__, __LINE__,
				      "process %d: %d event lines, %lld in its summary, expected %d: %s", (int)armed[i],
				      lines, sum, k * HITS, summary);
	}
	for (int i = 0; i < nothers; i++)
		if (!among(armed, narmed, others[i]) &&
		    (events_of(events, others[i]) || summary_of(summary, others[i]) >= 0))
			djp_test_fail(__FILE__, __LINE__, "process %d, not to be traced, was: %s", (int)others[i],
				      summary);
}

/* SIGINT: djp trace must exit 0 */
static void stop(struct tproc *d)
{
	int st;
	kill(d->pid, SIGINT);
	st = tt_finish(d, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %d: %s", st, d->ebuf);
}

/* pid lives, and is not a zombie */
static bool alive(pid_t pid)
{
	char path[64], buf[512], *c;
	bool a = false;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return false;
	if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')))
		a = c[2] != 'Z' && c[2] != 'X';
	fclose(f);
	return a;
}

static void kill_all(const pid_t *v, int n)
{
	for (int i = 0; i < n; i++)
		kill(v[i], SIGKILL);
}

TEST_TIMEOUT(trace_all_reaches_processes_before_and_after_and_not_a_copy, 120)
{
	char dir[64], copy[128], cmd[8600];
	pid_t up[MAXP], armed[MAXP], copies[8];
	struct tproc *before, *after, *d;
	int nup, narmed, ncopies = 0;

	copy_target(dir, copy, sizeof(copy));
	/* before the trace: three of the program, one of the copy */
	snprintf(cmd, sizeof(cmd), "T='%s'; $T --stay & $T --stay & $T --stay & '%s' --stay & wait", target(), copy);
	before = sh(cmd, -1);
	wait_lines(before, "up", 4, 20000);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-a", (char *)target(), "at_hit", NULL }, false, -1);
	wait_lines(before, "armed", 3, 30000);
	/* during it: two started, one exec'd by a shell, and a copy */
	snprintf(cmd, sizeof(cmd), "T='%s'; $T & $T & sh -c \"sleep 0; exec $T\" & '%s' --stay & wait", target(),
		 copy);
	after = sh(cmd, -1);
	wait_lines(after, "armed", 3, 30000);
	wait_lines(after, "up", 4, 20000);
	stop(d);

	narmed = pids_of(before, "armed", armed, NULL, MAXP);
	narmed += pids_of(after, "armed", armed + narmed, NULL, MAXP - narmed);
	CHECK_EQ(narmed, 6);
	nup = pids_of(before, "up", up, NULL, MAXP);
	nup += pids_of(after, "up", up + nup, NULL, MAXP - nup);
	for (int i = 0; i < nup; i++)
		if (!among(armed, narmed, up[i]) && ncopies < 8)
			copies[ncopies++] = up[i];
	CHECK_EQ(ncopies, 2);
	check_counts(d->obuf, d->ebuf, armed, narmed, copies, ncopies);
	if (strstr(d->ebuf, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "djp trace said: %s", d->ebuf);
	/* the copies were never armed: they still wait */
	for (int i = 0; i < ncopies; i++)
		CHECK(alive(copies[i]));
	kill_all(copies, ncopies);
	tt_end(before);
	tt_end(after);
	free(d);
	remove_copy(dir, copy);
}

/* As nobody: nobody's processes are traced, root's (the same program) are
 * not, nor said; the trace says once that it cannot hear the kernel's
 * process events. */
TEST_TIMEOUT(trace_all_unprivileged_reaches_its_own_processes_only, 120)
{
	char dir[64], copy[128], cmd[8600];
	pid_t armed[MAXP], up[MAXP];
	struct tproc *mine, *roots, *d;
	int narmed, nup;

	if (geteuid() != 0)
		djp_test_fail(__FILE__, __LINE__, "needs root, to run processes as root and as nobody");
	/* a copy nobody may run whatever the build tree's permissions */
	copy_target(dir, copy, sizeof(copy));
	snprintf(cmd, sizeof(cmd), "'%s' --stay & '%s' --stay & wait", copy, copy);
	roots = sh(cmd, -1);
	wait_lines(roots, "up", 2, 20000);
	mine = sh(cmd, NOBODY);
	wait_lines(mine, "up", 2, 20000);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-a", copy, "at_hit", NULL }, false, NOBODY);
	wait_lines(mine, "armed", 2, 30000);
	CHECK(tt_wait_err(d, "the kernel's process events cannot be heard", 10000));
	stop(d);
	narmed = pids_of(mine, "armed", armed, NULL, MAXP);
	nup = pids_of(roots, "up", up, NULL, MAXP);
	CHECK_EQ(narmed, 2);
	CHECK_EQ(nup, 2);
	check_counts(d->obuf, d->ebuf, armed, narmed, up, nup);
	if (tt_count(d->ebuf, "djp trace: -a:") != 1 || strstr(d->ebuf, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "djp trace, expected one line of -a and no error: %s", d->ebuf);
	/* root's were never armed: they still wait */
	for (int i = 0; i < nup; i++)
		CHECK(alive(up[i]) && !strstr(roots->obuf, "armed "));
	kill_all(up, nup);
	tt_end(roots);
	tt_end(mine);
	free(d);
	remove_copy(dir, copy);
}

/* The figures: -a attaches to 100 processes running (the time from its
 * start to the last one's arming), then follows 50 started within a
 * second (each one's time from its main to its arming); every process's
 * hits after its arming are all there.  Events and summary go to files:
 * 150 blocks of summary are more than a pipe's buffer here holds. */
TEST_TIMEOUT(trace_all_follows_100_running_and_50_started_in_a_second, 300)
{
	char dir[] = "/tmp/djp-allfig-XXXXXX", evf[128], errf[128], cmd[8600];
	pid_t armed[MAXP];
	long us[MAXP], t0, t_all, max_us = 0, sorted[MAXP];
	struct tproc *run, *burst, *d;
	int n100, n50, st;
	char *events, *summary;
	size_t len;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(evf, sizeof(evf), "%s/events", dir);
	snprintf(errf, sizeof(errf), "%s/summary", dir);
	snprintf(cmd, sizeof(cmd), "i=0; while [ $i -lt 100 ]; do '%s' --stay & i=$((i+1)); done; wait", target());
	run = sh(cmd, -1);
	wait_lines(run, "up", 100, 60000);
	snprintf(cmd, sizeof(cmd), "exec '%s' trace -a '%s' at_hit -o '%s' 2>'%s'", tt_djp(), target(), evf, errf);
	t0 = ms_now();
	d = sh(cmd, -1);
	wait_lines(run, "armed", 100, 60000);
	t_all = ms_now() - t0;
	/* 50 in a second: one every 20 ms */
	snprintf(cmd, sizeof(cmd), "i=0; while [ $i -lt 50 ]; do '%s' & sleep 0.02; i=$((i+1)); done; wait",
		 target());
	t0 = ms_now();
	burst = sh(cmd, -1);
	wait_lines(burst, "armed", 50, 120000);
	fprintf(stderr, "# -a: 100 running processes armed %ld ms after the start of djp trace\n", t_all);
	n50 = pids_of(burst, "armed", armed, us, MAXP);
	for (int i = 0; i < n50; i++) {
		int j = i;
		for (; j > 0 && sorted[j - 1] > us[i]; j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = us[i];
		if (us[i] > max_us)
			max_us = us[i];
	}
	fprintf(stderr, "# -a: 50 processes started in %ld ms, armed after their main in: median %ld ms, max %ld ms\n",
		ms_now() - t0, sorted[n50 / 2] / 1000, max_us / 1000);
	kill(d->pid, SIGINT);
	st = tt_finish(d, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %d", st);
	n100 = pids_of(run, "armed", armed + n50, NULL, MAXP - n50);
	CHECK_EQ(n50, 50);
	CHECK_EQ(n100, 100);
	CHECK((f = fopen(evf, "r")) != NULL);
	events = NULL;
	len = 0;
	CHECK(getdelim(&events, &len, 0, f) > 0);
	fclose(f);
	CHECK((f = fopen(errf, "r")) != NULL);
	summary = NULL;
	len = 0;
	CHECK(getdelim(&summary, &len, 0, f) > 0);
	fclose(f);
	check_counts(events, summary, armed, n50 + n100, NULL, 0);
	if (strstr(summary, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "djp trace said: %s", summary);
	free(events);
	free(summary);
	tt_end(run);
	tt_end(burst);
	free(d);
	unlink(evf);
	unlink(errf);
	rmdir(dir);
}

/* With no PATH, every process with a marker a pattern matches: the
 * program and its copy alike. */
TEST_TIMEOUT(trace_all_without_a_path_traces_every_process_with_the_marker, 120)
{
	char dir[64], copy[128], cmd[8600];
	pid_t armed[MAXP];
	struct tproc *procs, *d;
	int narmed;

	copy_target(dir, copy, sizeof(copy));
	snprintf(cmd, sizeof(cmd), "'%s' --stay & '%s' --stay & wait", target(), copy);
	procs = sh(cmd, -1);
	wait_lines(procs, "up", 2, 20000);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-a", "at_hi*", NULL }, false, -1);
	wait_lines(procs, "armed", 2, 30000);
	stop(d);
	narmed = pids_of(procs, "armed", armed, NULL, MAXP);
	CHECK_EQ(narmed, 2);
	check_counts(d->obuf, d->ebuf, armed, narmed, NULL, 0);
	if (strstr(d->ebuf, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "djp trace said: %s", d->ebuf);
	tt_end(procs);
	free(d);
	remove_copy(dir, copy);
}

/* Bad input: one line naming the thing and the problem, and a status. */
static void refused(char *const argv[], int status, const char *want)
{
	struct tproc *d = tt_spawn(argv, false, -1);
	int st = tt_finish(d, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != status || tt_lines(d->ebuf) != 1 || !strstr(d->ebuf, want))
		djp_test_fail(__FILE__, __LINE__, "%s %s %s: status %d, expected %d and one line '%s...': %s", argv[1],
			      argv[2], argv[3], st, status, want, d->ebuf);
	free(d);
}

TEST(trace_all_says_what_is_wrong_with_its_arguments)
{
	char *djp = (char *)tt_djp(), *t = (char *)target(), want[4200];

	refused((char *const[]){ djp, "trace", "-a", "/no/such/prog", "at_hit", NULL }, 1,
		"djp trace: -a: '/no/such/prog': No such file or directory");
	refused((char *const[]){ djp, "trace", "-a", "/tmp", "at_hit", NULL }, 1, "djp trace: -a: '/tmp': not a file");
	snprintf(want, sizeof(want), "djp: -a: pattern 'no_such_marker' matches no marker in %s", t);
	refused((char *const[]){ djp, "trace", "-a", t, "no_such_marker", NULL }, 1, want);
	refused((char *const[]){ djp, "trace", "-a", "func:main", NULL }, 1,
		"djp: -a: pattern 'func:main': a function or line needs a PATH");
	refused((char *const[]){ djp, "trace", "-a", "-x", "1", "at_hit", NULL }, 2,
		"djp trace: give exactly one of -c CMD, -x PID and -a");
	refused((char *const[]){ djp, "trace", "-a", t, NULL }, 2, "djp trace: no PATTERN (only PATHs)");
}

/* A script's process("PATH") points with no -c or -x reach every process
 * of PATH as -a does: those running and one started later, each counted
 * exactly by the end probe; the copy at another path is not. */
TEST_TIMEOUT(script_process_path_points_reach_every_process_of_path, 120)
{
	char dir[64], copy[128], cmd[8600], script[4400], want[64];
	pid_t armed[MAXP], up[MAXP], copies[4];
	struct tproc *before, *after, *d;
	int narmed, nup, ncopies = 0, st;

	copy_target(dir, copy, sizeof(copy));
	snprintf(cmd, sizeof(cmd), "'%s' --stay & '%s' --stay & wait", target(), target());
	before = sh(cmd, -1);
	wait_lines(before, "up", 2, 20000);
	snprintf(script, sizeof(script),
		 "global n; probe process(\"%s\").mark(\"at_hit\") { n[pid()]++ } "
		 "probe end { foreach (p in n) printf(\"count %%d %%d\\n\", p, n[p]) }",
		 target());
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "-e", script, NULL }, false, -1);
	wait_lines(before, "armed", 2, 30000);
	snprintf(cmd, sizeof(cmd), "'%s' & '%s' --stay & wait", target(), copy);
	after = sh(cmd, -1);
	wait_lines(after, "armed", 1, 30000);
	wait_lines(after, "up", 2, 20000);
	kill(d->pid, SIGINT);
	st = tt_finish(d, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || strstr(d->ebuf, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "djp -e: status %d: %s", st, d->ebuf);
	narmed = pids_of(before, "armed", armed, NULL, MAXP);
	narmed += pids_of(after, "armed", armed + narmed, NULL, MAXP - narmed);
	CHECK_EQ(narmed, 3);
	for (int i = 0; i < narmed; i++) {
		snprintf(want, sizeof(want), "count %d %d\n", (int)armed[i], HITS);
		if (!strstr(d->obuf, want))
			djp_test_fail(__FILE__, __LINE__, "expected '%.*s': %s", (int)strlen(want) - 1, want, d->obuf);
	}
	nup = pids_of(after, "up", up, NULL, MAXP);
	for (int i = 0; i < nup; i++)
		if (!among(armed, narmed, up[i]) && ncopies < 4)
			copies[ncopies++] = up[i];
	CHECK_EQ(ncopies, 1);
	CHECK_EQ(tt_count(d->obuf, "count "), 3);
	CHECK(alive(copies[0]));
	kill_all(copies, ncopies);
	tt_end(before);
	tt_end(after);
	free(d);
	remove_copy(dir, copy);
}

/* Five hundred other processes started as fast as a shell can, the
 * program's ten among them: each of the ten armed and counted exactly,
 * the session never lost. */
TEST_TIMEOUT(trace_all_follows_its_program_through_a_storm_of_others, 180)
{
	char cmd[8600];
	pid_t armed[MAXP];
	struct tproc *storm, *d;
	long t0;
	int narmed;

	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-a", (char *)target(), "at_hit", NULL }, false, -1);
	snprintf(cmd, sizeof(cmd),
		 "r=0; while [ $r -lt 10 ]; do i=0; while [ $i -lt 50 ]; do /bin/true & i=$((i+1)); done; "
		 "'%s' & r=$((r+1)); done; wait",
		 target());
	t0 = ms_now();
	storm = sh(cmd, -1);
	wait_lines(storm, "armed", 10, 120000);
	fprintf(stderr, "# -a: 500 other processes and 10 of the program started, the 10 armed, in %ld ms\n",
		ms_now() - t0);
	stop(d);
	narmed = pids_of(storm, "armed", armed, NULL, MAXP);
	CHECK_EQ(narmed, 10);
	check_counts(d->obuf, d->ebuf, armed, narmed, NULL, 0);
	if (strstr(d->ebuf, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "djp trace said: %s", d->ebuf);
	tt_end(storm);
	free(d);
}

/* A process of the program that cannot be attached (stopped, SIGSTOP) is
 * said in one line, once, and left as it was; the others are traced. */
TEST_TIMEOUT(trace_all_says_once_a_process_it_cannot_attach, 120)
{
	char cmd[8600], want[96];
	pid_t up[MAXP], armed[MAXP];
	struct tproc *procs, *d;
	int nup, narmed;

	snprintf(cmd, sizeof(cmd), "'%s' --stay & '%s' --stay & wait", target(), target());
	procs = sh(cmd, -1);
	wait_lines(procs, "up", 2, 20000);
	CHECK_EQ(pids_of(procs, "up", up, NULL, MAXP), 2);
	CHECK(kill(up[0], SIGSTOP) == 0);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-a", (char *)target(), "at_hit", NULL }, false, -1);
	wait_lines(procs, "armed", 1, 30000);
	snprintf(want, sizeof(want), "djp: process %d: it is stopped", (int)up[0]);
	CHECK(tt_wait_err(d, want, 20000));
	stop(d);
	narmed = pids_of(procs, "armed", armed, NULL, MAXP);
	nup = 1;
	CHECK_EQ(narmed, 1);
	CHECK_EQ(armed[0], up[1]);
	check_counts(d->obuf, d->ebuf, armed, narmed, up, nup);
	if (tt_count(d->ebuf, "djp: ") != 1)
		djp_test_fail(__FILE__, __LINE__, "djp trace, expected one line '%s': %s", want, d->ebuf);
	/* left as it was: continued, it still waits for an arming */
	CHECK(kill(up[0], SIGCONT) == 0);
	CHECK(alive(up[0]));
	kill_all(up, 1);
	tt_end(procs);
	free(d);
}
