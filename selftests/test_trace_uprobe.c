/*
 * Sites no jump can reach, armed with the kernel's uprobe and the tool's
 * BPF recorder (tools/djp/session/session_uprobes.c) instead of an int3
 * probe in the target: trapsite_target's probe sits right after a call
 * and three bytes before its function's end.  Each value of each argument
 * kind must be the one the program passed (and the same as the int3
 * probe's), the kernel must raise the probe's semaphore while it is armed
 * and drop it after, the text must be the file's again, and threads that
 * block SIGTRAP, which an int3 probe cannot serve without stopping the
 * process, are traced as any other.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define FORMAT "trapsite:after_call=a=%ld b=%ld c=%d g=%#lx r=%ld s=%s"

static const char *target(void)
{
	static char path[4096];
	if (!path[0])
		snprintf(path, sizeof(path), "%s", djp_test_path("trace_progs/trapsite_target"));
	return path;
}

/* This run may arm uprobes: the listing says so, or why not. */
static void need_uprobes(void)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "list", "--json", (char *)target(), NULL },
				   false, -1);
	int st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!strstr(p->obuf, "\"arming\":\"uprobe\"")) {
		if (geteuid())
			SKIP("the kernel's uprobes need root (or CAP_BPF and CAP_PERFMON)");
		djp_test_fail(__FILE__, __LINE__, "root, and no uprobe: %s", p->obuf);
	}
	free(p);
}

/* End the input of a djp run whose command reads it, and wait: it must
 * exit 0 (its output stays in p). */
static void finish(struct tproc *p)
{
	int st;
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
}

/* Each of the n events the loop of `run n` makes, once, with its values. */
static void check_values(const char *out, long n)
{
	static const char *const texts[] = { "alpha", "beta", "gamma" };
	for (long i = 0; i < n; i++) {
		char want[256];
		long a = i - n / 2;
		snprintf(want, sizeof(want), " trapsite:after_call a=%ld b=%ld c=-7 g=0x1234567 r=%ld s=%s\n", a,
			 7 * i + 1, 3 * a, texts[i % 3]);
		if (tt_count(out, want) != 1)
			djp_test_fail(__FILE__, __LINE__, "event %ld (%s) %d times in:\n%.2000s", i, want,
				      tt_count(out, want), out);
	}
	CHECK_EQ(tt_count(out, " trapsite:after_call "), n);
}

static struct tproc *trace_run(const char *extra, long n)
{
	char cmd[64], want[64];
	char *argv[8];
	int k = 0;
	struct tproc *p;

	argv[k++] = (char *)tt_djp();
	argv[k++] = "trace";
	if (extra)
		argv[k++] = (char *)extra;
	argv[k++] = "-c";
	argv[k++] = (char *)target();
	argv[k++] = FORMAT;
	argv[k] = NULL;
	p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(p, "ready ", 10000));
	snprintf(cmd, sizeof(cmd), "run %ld\n", n);
	snprintf(want, sizeof(want), "ran %ld fired %ld\n", n, n);
	tt_send(p, cmd);
	if (!tt_wait_out(p, want, 20000))
		djp_test_fail(__FILE__, __LINE__, "no '%s' (the semaphore not raised?): %s / %s", want, p->obuf, p->ebuf);
	finish(p);
	return p;
}

/* Every argument kind, through the uprobe and through the int3 probe:
 * the same values, the program's own. */
TEST_TIMEOUT(trace_uprobe_site_values_equal_the_programs, 90)
{
	struct tproc *p;

	need_uprobes();
	p = trace_run(NULL, 300);
	check_values(p->obuf, 300);
	if (!strstr(p->ebuf, "1 site armed with the kernel's uprobe, where no jump can be placed: trapsite:after_call\n"))
		djp_test_fail(__FILE__, __LINE__, "no uprobe in the summary: %s", p->ebuf);
	free(p);
	p = trace_run("--no-uprobe", 300);
	check_values(p->obuf, 300);
	CHECK(!strstr(p->ebuf, "kernel's uprobe"));
	free(p);
}

/* Four threads that block every signal, SIGTRAP too: each hit counted,
 * none lost, with no thread stopped to arm anything. */
TEST_TIMEOUT(trace_uprobe_site_in_threads_that_block_sigtrap, 90)
{
	char *argv[] = { (char *)tt_djp(), "trace", "-c", (char *)target(), FORMAT, NULL };
	struct tproc *p;
	unsigned long long events = 0, lost = 0;

	need_uprobes();
	p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(p, "ready ", 10000));
	tt_send(p, "threads 4 2000\n");
	if (!tt_wait_out(p, "threaded 4 2000 fired 8000\n", 30000))
		djp_test_fail(__FILE__, __LINE__, "threads: %s / %s", p->obuf, p->ebuf);
	finish(p);
	CHECK_EQ(tt_count(p->obuf, " trapsite:after_call "), 8000);
	CHECK(tt_summary_row(p->ebuf, "trapsite:after_call", &events, &lost));
	CHECK_EQ(events, 8000);
	CHECK_EQ(lost, 0);
	free(p);
}

/* After the trace: the site's byte is the file's, the semaphore down (the
 * program stops calling), and the program runs on and exits 0. */
static void check_left_as_it_was(struct tproc *t, uintptr_t site)
{
	CHECK_EQ(tt_byte_at(t->pid, site), 0x90);
	tt_send(t, "run 30\n");
	CHECK(tt_wait_out(t, "ran 30 fired 0\n", 10000));
	tt_end(t);
}

/* A hit of `run 1`, as djp prints it: what wait_recording fires. */
#define PROBE_LINE " trapsite:after_call a=0 b=1 c=-7 g=0x1234567 r=0 s=alpha\n"

/* -x: hits count from when the tool has armed the site, a moment after the
 * kernel's breakpoint is in the text (it is written when the uprobe is
 * opened, before the BPF program is attached to it): single hits of
 * target t until trace d prints one. */
static void wait_recording(struct tproc *t, struct tproc *d)
{
	int sent = tt_count(t->obuf, "ran 1 fired"), before = tt_count(d->obuf, PROBE_LINE);
	for (int i = 0; i < 400; i++) {
		tt_send(t, "run 1\n");
		sent++;
		for (int k = 0; k < 1000 && tt_count(t->obuf, "ran 1 fired") < sent; k++) {
			usleep(1000);
			tt_read_now(t);
		}
		usleep(20000);
		tt_read_now(d);
		if (tt_count(d->obuf, PROBE_LINE) > before)
			return;
	}
	djp_test_fail(__FILE__, __LINE__, "nothing recorded: %s", d->ebuf);
}

/* The target, started and ready: its pid as text in spid, its site's
 * address in *site. */
static struct tproc *start_target(char spid[16], uintptr_t *site)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)target(), NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready ", 10000));
	snprintf(spid, 16, "%d", (int)t->pid);
	*site = tt_site_addr(t->pid, "after_call");
	CHECK(*site != 0);
	return t;
}

/* `djp trace -x` into t, once the site is the kernel's int3 and a hit is
 * recorded. */
static struct tproc *trace_x_recording(struct tproc *t, const char *spid, uintptr_t site)
{
	struct tproc *d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", (char *)spid, FORMAT, NULL }, false, -1);
	tt_wait_byte(t->pid, site, 0xcc, 20000);
	wait_recording(t, d);
	return d;
}

/* -x into a running program, then the trace ends: the site's byte is the
 * file's, the semaphore is down (the program stops calling), and the
 * program runs on. */
TEST_TIMEOUT(trace_uprobe_site_left_as_it_was, 90)
{
	struct tproc *t, *d;
	char spid[16];
	uintptr_t site;
	int st;

	need_uprobes();
	t = start_target(spid, &site);
	CHECK_EQ(tt_byte_at(t->pid, site), 0x90);
	/* armed: the kernel's int3 in the program's text, the semaphore up */
	d = trace_x_recording(t, spid, site);
	tt_send(t, "run 30\n");
	CHECK(tt_wait_out(t, "ran 30 fired 30\n", 10000));
	CHECK(tt_wait_out(d, " trapsite:after_call a=14 b=204 c=-7 g=0x1234567 r=42 s=gamma\n", 10000));
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(tt_count(d->obuf, " trapsite:after_call "), tt_count(d->obuf, PROBE_LINE) + 30);
	check_left_as_it_was(t, site);
	free(d);
}

/* A probe script over the same site: the arguments by name, a string by
 * user_string(), the same values. */
TEST_TIMEOUT(script_uprobe_site_values, 90)
{
	char script[8192];
	struct tproc *p;

	need_uprobes();
	snprintf(script, sizeof(script),
		 "probe process(\"%s\").mark(\"after_call\") { printf(\" trapsite:after_call a=%%d b=%%d c=%%d "
		 "g=%%#x r=%%d s=%%s\\n\", $arg1, $arg2, $arg3, $arg4, $arg5, user_string($arg6)) }",
		 target());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", (char *)target(), "-e", script, NULL }, false, -1);
	CHECK(tt_wait_out(p, "ready ", 10000));
	tt_send(p, "run 90\n");
	CHECK(tt_wait_out(p, "ran 90 fired 90\n", 20000));
	finish(p);
	check_values(p->obuf, 90);
	free(p);
}

/* The uprobe's events and the agent's, in one stream in time order: each
 * i's trapsite:before (a jump, the agent's ring) then its after_call (the
 * kernel's uprobe, the BPF ring), 500 times over. */
TEST_TIMEOUT(trace_uprobe_and_jump_events_in_time_order, 90)
{
	char *argv[] = { (char *)tt_djp(), "trace", "-c", (char *)target(), "trapsite:before=i=%ld", FORMAT, NULL };
	struct tproc *p;
	const char *at;

	need_uprobes();
	p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(p, "ready ", 10000));
	tt_send(p, "run 500\n");
	CHECK(tt_wait_out(p, "ran 500 fired 500\n", 20000));
	finish(p);
	at = p->obuf;
	for (long i = 0; i < 500; i++) {
		char before[64], after[64];
		const char *b, *a;
		snprintf(before, sizeof(before), " trapsite:before i=%ld\n", i);
		snprintf(after, sizeof(after), " trapsite:after_call a=%ld ", i - 250);
		b = strstr(at, " trapsite:");
		if (!b || strncmp(b, before, strlen(before)))
			djp_test_fail(__FILE__, __LINE__, "event %ld: want%s got %.80s", 2 * i, before, b ? b : "(end)");
		a = strstr(b + 1, " trapsite:");
		if (!a || strncmp(a, after, strlen(after)))
			djp_test_fail(__FILE__, __LINE__, "event %ld: want%s got %.80s", 2 * i + 1, after, a ? a : "(end)");
		at = a + 1;
	}
	CHECK(!strstr(at, " trapsite:"));
	free(p);
}

/* A child of fork: its session's connect leaves the site again, and the
 * tool arms a uprobe for the child's process (the parent's is filtered to
 * the parent): every call of the child's loop is an event of the child,
 * and the parent's own after it are the parent's. */
TEST_TIMEOUT(trace_uprobe_site_in_a_child_of_fork, 90)
{
	char *argv[] = { (char *)tt_djp(), "trace", "-c", (char *)target(), FORMAT, NULL };
	struct tproc *p;
	int ppid = 0;

	need_uprobes();
	p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(p, "ready ", 10000));
	CHECK(sscanf(strstr(p->obuf, "ready ") + 6, "%d", &ppid) == 1);
	tt_send(p, "fork 40\n");
	CHECK(tt_wait_out(p, "forked 40 status 0\n", 20000));
	tt_send(p, "run 10\n");
	CHECK(tt_wait_out(p, "ran 10 fired 10\n", 20000));
	finish(p);
	CHECK_EQ(tt_count(p->obuf, " trapsite:after_call "), 50);
	{
		char mine[32];
		snprintf(mine, sizeof(mine), " %d %d trapsite:after_call ", ppid, ppid);
		CHECK_EQ(tt_count(p->obuf, mine), 10);
	}
	CHECK_EQ(tt_count(p->ebuf, "1 site armed with the kernel's uprobe"), 2);
	free(p);
}

/* Each event line of `run 100`'s loop is self-consistent: b = 7i + 1
 * with i = a + 50, r = 3a, s the i % 3-th text.  The number of lines. */
static long check_loop_lines(const char *out)
{
	static const char *const texts[] = { "alpha", "beta", "gamma" };
	long n = 0;
	for (const char *at = strstr(out, " trapsite:after_call "); at; at = strstr(at + 1, " trapsite:after_call ")) {
		long a, b, g, r;
		int c;
		char s[16];
		if (sscanf(at, " trapsite:after_call a=%ld b=%ld c=%d g=%lx r=%ld s=%15s", &a, &b, &c, &g, &r, s) != 6)
			djp_test_fail(__FILE__, __LINE__, "unreadable: %.120s", at);
		if (b != 7 * (a + 50) + 1 || c != -7 || g != 0x1234567 || r != 3 * a || a < -50 || a >= 50 ||
		    strcmp(s, texts[(a + 50) % 3]))
			djp_test_fail(__FILE__, __LINE__, "wrong: %.120s", at);
		n++;
	}
	return n;
}

/* The stress (`make stress` runs it for a quarter of DURATION; make check
 * for 6 s): a tracer attaches (-x) and detaches over and over while 4
 * threads that block every signal, more than the cores, run the site as
 * fast as they can.  Every event of every cycle is right, the program
 * lives, its text is the file's at the end and its semaphore down. */
TEST_TIMEOUT(trace_uprobe_stress_attach_detach_under_load, 3600)
{
	const char *env = getenv("DJP_STRESS_SECONDS");
	int secs = env ? atoi(env) : 6, cycles = 0, st;
	char cmd[64], spid[16];
	struct tproc *t;
	uintptr_t site;
	long events = 0;

	need_uprobes();
	t = start_target(spid, &site);
	snprintf(cmd, sizeof(cmd), "hammer 4 %d\n", secs);
	tt_send(t, cmd);
	for (time_t end = time(NULL) + secs; time(NULL) < end; cycles++) {
		char out[] = "/tmp/djp-uprobe-stress-XXXXXX", *text;
		int fd = mkstemp(out);
		struct tproc *d;
		CHECK(fd >= 0);
		close(fd);
		d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-o", out, "-x", spid, FORMAT, NULL }, false, -1);
		tt_wait_byte(t->pid, site, 0xcc, 20000);
		usleep(50000);
		kill(d->pid, SIGINT);
		st = tt_finish(d, 30000);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			djp_test_fail(__FILE__, __LINE__, "cycle %d: status %#x: %s", cycles, st, d->ebuf);
		text = tt_take_file(out);
		CHECK(text != NULL);
		events += check_loop_lines(text);
		free(text);
		free(d);
	}
	CHECK(tt_wait_out(t, "hammered 4 fired ", 60000));
	check_left_as_it_was(t, site);
	printf("# %d cycles, %ld events checked\n", cycles, events);
	CHECK(cycles > 0 && events > 0);
}

/* The BPF ring full (the tool stopped while four threads hit the site):
 * every hit is an event or a loss the summary says, none silent. */
TEST_TIMEOUT(trace_uprobe_ring_full_is_counted, 120)
{
	char *argv[] = { (char *)tt_djp(), "trace", "-o", "/dev/null", "-c", (char *)target(), "trapsite:after_call",
			 NULL };
	unsigned long long events = 0, lost = 0;
	struct tproc *p;
	const char *l;

	need_uprobes();
	p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(p, "ready ", 10000));
	kill(p->pid, SIGSTOP);
	tt_send(p, "threads 4 100000\n");
	CHECK(tt_wait_out(p, "threaded 4 100000 fired 400000\n", 60000));
	kill(p->pid, SIGCONT);
	finish(p);
	CHECK(tt_summary_row(p->ebuf, "trapsite:after_call", &events, &lost));
	l = strstr(p->ebuf, " lost at sites armed with the kernel's uprobe: its ring buffer was full\n");
	while (l && l > p->ebuf && l[-1] != ' ')
		l--;
	CHECK(l && sscanf(l, "%llu", &lost) == 1);
	CHECK(lost > 0);
	CHECK_EQ(events + lost, 400000);
	free(p);
}

/* -x into a program that execs itself: the same pid, the same file, a new
 * program.  The first program's uprobe goes when the new one's agent says
 * HELLO (the kernel would put it in the new text too, where the engine
 * would find a breakpoint not its own and arm nothing), and the new
 * program's site gets a uprobe of its own: each program's hits in its own
 * block, none lost. */
TEST_TIMEOUT(trace_uprobe_site_across_an_exec, 120)
{
	struct tproc *t, *d;
	char spid[16], *second;
	uintptr_t site;
	int st;

	need_uprobes();
	t = start_target(spid, &site);
	d = trace_x_recording(t, spid, site);
	tt_send(t, "run 5\n");
	CHECK(tt_wait_out(t, "ran 5 fired 5\n", 10000));
	tt_send(t, "exec\n");
	/* the new program's site, armed by the new session's uprobe */
	for (int i = 0; i < 200 && (!(site = tt_site_addr(t->pid, "after_call")) || tt_byte_at(t->pid, site) != 0xcc); i++)
		usleep(50000);
	CHECK_EQ(tt_byte_at(t->pid, site), 0xcc);
	wait_recording(t, d);
	tt_send(t, "run 7\n");
	CHECK(tt_wait_out(t, "ran 7 fired 7\n", 10000));
	CHECK(tt_wait_out(d, " trapsite:after_call a=3 b=43 c=-7 g=0x1234567 r=9 s=alpha\n", 10000));
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(!strstr(d->ebuf, "matches no marker"));
	/* every hit after recording began, each with the program's values
	 * (the global read at the new program's own address) */
	CHECK_EQ(tt_count(d->obuf, " trapsite:after_call "), tt_count(d->obuf, PROBE_LINE) + 12);
	CHECK_EQ(tt_count(d->obuf, " g=0x1234567 "), tt_count(d->obuf, " trapsite:after_call "));
	CHECK_EQ(tt_count(d->obuf, " trapsite:after_call a=-2 b=1 c=-7 g=0x1234567 r=-6 s=alpha\n"), 1);
	CHECK_EQ(tt_count(d->obuf, " trapsite:after_call a=-3 b=1 c=-7 g=0x1234567 r=-9 s=alpha\n"), 1);
	/* each program's in its own block: the new one's has run 7's */
	CHECK((second = strstr(d->ebuf, "exec'd; traced on in the block of its new program")) != NULL);
	CHECK(strstr(second, "0 lost, 0 missed") != NULL);
	check_left_as_it_was(t, site);
	free(d);
}

/* -c, a program that execs its own file: the first program's uprobe is in
 * the new text when the new program's agent first reads it (it starts in
 * the program's constructor, before the tool hears of the exec), so the
 * new program's site is left out, said in one line.  But no hit of the
 * new program is read with the first program's load bias: the BPF
 * program drops a hit that is not at its site's own address.  Every value
 * printed is the program's. */
TEST_TIMEOUT(trace_uprobe_exec_of_its_own_file_reads_no_wrong_value, 90)
{
	char *argv[] = { (char *)tt_djp(), "trace", "-c", (char *)target(), FORMAT, NULL };
	struct tproc *p;
	int n;

	need_uprobes();
	p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(p, "ready ", 10000));
	tt_send(p, "run 3\n");
	CHECK(tt_wait_out(p, "ran 3 fired 3\n", 10000));
	tt_send(p, "exec\n");
	for (int i = 0; i < 200 && tt_count(p->obuf, "ready ") < 2; i++) {
		usleep(50000);
		tt_read_now(p);
	}
	CHECK_EQ(tt_count(p->obuf, "ready "), 2);
	tt_send(p, "run 4\n");
	CHECK(tt_wait_out(p, "ran 4 fired ", 10000));
	finish(p);
	n = tt_count(p->obuf, " trapsite:after_call ");
	CHECK_EQ(tt_count(p->obuf, " g=0x1234567 "), n);
	CHECK(n == 7 || (n == 3 && strstr(p->ebuf, "pattern 'trapsite:after_call' matches no marker")));
	free(p);
}
