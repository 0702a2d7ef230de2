/* `djp trace` end to end: a launched command (-c) and a running process
 * (-x), output formats, the end of a trace in each of its ways, dlopen, a
 * full ring. */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "test_trace_util.h"

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void launch_exit_status(bool o0)
{
	char cmd[4096];
	struct tproc *p;
	unsigned long long ev, lost;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --ticks 5 --tick-us 1000 --no-stdin --exit 3", tt_target(o0));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "tt_*", NULL }, false, -1);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 3);
	/* tt_main fires first thing in main: armed before main. */
	CHECK(strstr(p->obuf, " tt_main argc=8\n"));
	CHECK_EQ(tt_count(p->obuf, " tt_tick i="), 5);
	CHECK(strstr(p->obuf, " tt_tick i=1 name=beta p=0x"));
	CHECK(tt_summary_row(p->ebuf, "tt_tick", &ev, &lost));
	CHECK_EQ(ev, 5);
	CHECK_EQ(lost, 0);
	CHECK(strstr(p->ebuf, "6 events, 0 lost"));
	free(p);
}

TEST(trace_launch_armed_before_main)
{
	launch_exit_status(false);
}

TEST(trace_launch_armed_before_main_O0)
{
	launch_exit_status(true);
}

TEST(trace_launch_through_shell)
{
	char cmd[4096];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "true && %s --ticks 2 --tick-us 1000 --no-stdin --exit 4", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "tt_*", NULL }, false, -1);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 4);
	CHECK_EQ(tt_count(p->obuf, " tt_tick i="), 2);
	free(p);
}

TEST(trace_json_and_output_file)
{
	char cmd[4096], out[] = "/tmp/djp-trace-test-XXXXXX", buf[1 << 16];
	struct tproc *p;
	FILE *f;
	size_t n;
	int fd = mkstemp(out);

	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s --ticks 3 --tick-us 1000 --no-stdin", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--json", "-o", out, "-c", cmd, "tt_tick", NULL },
		     false, -1);
	CHECK_EQ(tt_finish(p, 20000), 0);
	CHECK(!strstr(p->obuf, "tt_tick"));
	CHECK((f = fopen(out, "r")));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	unlink(out);
	CHECK_EQ(tt_count(buf, "\"name\":\"tt_tick\""), 3);
	CHECK(strstr(buf, "\"args\":{\"i\":2,\"name\":\"gamma\",\"p\":\"0x"));
	CHECK(strstr(buf, "{\"ts_ns\":"));
	free(p);
}

TEST(trace_duration_ends_command)
{
	char cmd[4096];
	struct tproc *p;
	long long t0, ms;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --no-stdin", tt_target(false));
	t0 = now_ms();
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "0.5", "-c", cmd, "tt_tick", NULL },
		     false, -1);
	st = tt_finish(p, 30000);
	ms = now_ms() - t0;
	printf("# djp trace --duration 0.5 ran %lld ms\n", ms);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 128 + SIGTERM);
	CHECK(strstr(p->ebuf, "stopped after 0.5 s"));
	CHECK(tt_count(p->obuf, " tt_tick i=") > 10);
	/* The time itself, not the message printed from the option: never
	 * less than asked, and well short of 5 s however loaded the machine
	 * (a start of djp and its command takes some 50 ms). */
	CHECK(ms >= 500);
	CHECK(ms < 5000);
	free(p);
}

/* The target crashes mid-trace: the tool drains, summarises, exits. */
TEST(trace_target_crash)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", (char *)tt_target(false),
						    "tt_burst", NULL },
				   false, -1);
	unsigned long long ev, lost;
	int st;

	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "burst 1000\n");
	CHECK(tt_wait_out(p, "burst 1000 ", 10000));
	tt_send(p, "crash\n");
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 128 + SIGSEGV);
	CHECK(tt_summary_row(p->ebuf, "tt_burst", &ev, &lost));
	CHECK_EQ(ev, 1000);
	CHECK_EQ(tt_count(p->obuf, " tt_burst a="), 1000);
	free(p);
}

TEST(trace_attach_dlopen_and_sigint)
{
	char line[4200], pid[16];
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "20000", NULL }, true, -1);
	struct tproc *p;
	unsigned long long ev, lost;
	int n, st;

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "t?_*", NULL }, false, -1);
	CHECK(tt_wait_out(p, " tt_tick i=", 10000));
	CHECK(tt_sites_changed(t->pid, tt_target(false), &n) > 0);
	/* The target calls dlopen@GLIBC_2.34 directly: the agent notices the
	 * new object within 100 ms and has it armed. */
	snprintf(line, sizeof(line), "dlopen %s 0\n", tt_plugin());
	tt_send(t, line);
	CHECK(tt_wait_out(t, "dlopen ok", 10000));
	CHECK(tt_wait_armed(t->pid, tt_plugin(), 10000));
	tt_send(t, "fire 3\n");
	CHECK(tt_wait_out(t, "fired 3", 10000));
	CHECK(tt_wait_out(p, " tp_plugin n=2\n", 10000));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK(strstr(p->ebuf, "stopped by"));
	CHECK(tt_summary_row(p->ebuf, "tp_plugin", &ev, &lost));
	CHECK_EQ(ev, 3);
	/* BYE disarmed everything before the tool exited. */
	CHECK_EQ(tt_sites_changed(t->pid, tt_target(false), &n), 0);
	CHECK(n > 0);
	tt_kill(t);
	free(p);
	free(t);
}

/* A full ring: the producer drops and counts, never waits. */
TEST(trace_full_ring_counts_lost)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "20000", NULL }, true, -1);
	struct tproc *p;
	unsigned long long ev, lost, ns = 0;
	char pid[16], *s;
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--buffer-size", "65536", "-x", pid, "tt_*", NULL },
		     false, -1);
	CHECK(tt_wait_out(p, " tt_tick i=", 10000));
	kill(p->pid, SIGSTOP); /* the tool drains nothing now */
	tt_send(t, "burst 200000\n");
	CHECK(tt_wait_out(t, "burst 200000 ", 10000));
	s = strstr(t->obuf, "burst 200000 ");
	CHECK(sscanf(s, "burst 200000 %llu", &ns) == 1);
	CHECK(ns < 2000000000ull); /* it did not wait for the tool */
	kill(p->pid, SIGCONT);
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(tt_summary_row(p->ebuf, "tt_burst", &ev, &lost));
	CHECK(lost > 0);
	CHECK_EQ(ev + lost, 200000);
	CHECK(!strstr(p->ebuf, " 0 lost"));
	tt_kill(t);
	free(p);
	free(t);
}

/* The values after `key` in out, in order, are exactly lo..hi. */
static void expect_run(const char *out, const char *key, long lo, long hi)
{
	long want = lo;
	for (const char *s = out; (s = strstr(s, key)); s += strlen(key)) {
		long v = strtol(s + strlen(key), NULL, 10);
		if (v != want)
			djp_test_fail(__FILE__, __LINE__, "%s%ld where %s%ld was due", key, v, key, want);
		want++;
	}
	CHECK_EQ(want, hi + 1);
}

/* Wait until process pid has gone to sleep n more times (its voluntary
 * context switches): a loop that sleeps between its rounds has then run
 * n - 1 whole rounds at least. */
static void tt_wait_sleeps(pid_t pid, long n)
{
	long long end = now_ms() + 10000;
	long start = -1, now = -1;
	for (;;) {
		char path[64], line[256];
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		CHECK((f = fopen(path, "r")) != NULL);
		while (fgets(line, sizeof(line), f))
			sscanf(line, "voluntary_ctxt_switches: %ld", &now);
		fclose(f);
		CHECK(now >= 0);
		if (start < 0)
			start = now;
		if (now - start >= n)
			return;
		if (now_ms() >= end)
			djp_test_fail(__FILE__, __LINE__, "process %d slept %ld times in 10 s, not %ld", (int)pid,
				      now - start, n);
		usleep(1000);
	}
}

/* Flight recorder: nothing printed until SIGUSR1 or the end. */
TEST(trace_snapshot_mode)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "1000", NULL }, true, -1);
	struct tproc *p;
	char pid[16];
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--snapshot", "--buffer-size", "16384", "-x", pid,
				      "tt_*", NULL },
		     false, -1);
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	tt_send(t, "burst 100000\n");
	CHECK(tt_wait_out(t, "burst 100000 ", 10000));
	/* The tool has gone round its loop (slept, woken, slept) since the
	 * last event was recorded: it would have printed by now. */
	tt_wait_sleeps(p->pid, 3);
	tt_read_now(p);
	CHECK(!strstr(p->obuf, "tt_"));
	kill(p->pid, SIGUSR1);
	CHECK(tt_wait_out(p, " tt_burst a=99999 ", 5000));
	/* The snapshot is the newest events whole: the default 16 sub-buffers
	 * of 1 KiB hold 32 tt_burst events each (a 16-byte header and two
	 * words), and 100000 of them fill the last one to its end, so it is
	 * a=99488..99999 in order, no more, no fewer. */
	CHECK_EQ(tt_count(p->obuf, " tt_burst a="), 512);
	expect_run(p->obuf, " tt_burst a=", 99488, 99999);
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->ebuf, " lost"));
	tt_kill(t);
	free(p);
	free(t);
}

/* -x: the process exits mid-trace; the tool drains, summarises, exits 0. */
TEST(trace_attached_process_exits)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "1000", NULL }, true, -1);
	struct tproc *p;
	unsigned long long ev, lost;
	char pid[16];
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "tt_*", NULL }, false, -1);
	CHECK(tt_wait_out(p, " tt_tick i=", 10000));
	tt_send(t, "burst 500\n");
	CHECK(tt_wait_out(t, "burst 500 ", 10000));
	tt_send(t, "exit 5\n");
	st = tt_finish(t, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(tt_summary_row(p->ebuf, "tt_burst", &ev, &lost));
	CHECK_EQ(ev, 500);
	free(p);
	free(t);
}

/* Arguments of every size and sign, at -O2 (registers) and -O0 (stack). */
static void kinds(bool o0)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", (char *)tt_target(o0),
						    "tt_kinds", NULL },
				   false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "kinds 5\n");
	CHECK(tt_wait_out(p, " tt_kinds c=-5 s=-1500 u=4000000000 l=-6172839450615 x=0xbeef\n", 10000));
	tt_finish(p, 10000);
	free(p);
}

TEST(trace_argument_kinds)
{
	kinds(false);
}

TEST(trace_argument_kinds_O0)
{
	kinds(true);
}

/* Text output is one line per event: a %s holding a newline and terminal
 * escape sequences comes out C-escaped, never raw; JSON has its own
 * escapes. */
TEST(trace_text_escapes_strings)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "20000", NULL }, true, -1);
	struct tproc *p;
	char pid[16];
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(tt_wait_agent(t->pid, 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "tt_evil", NULL }, false, -1);
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	tt_send(t, "evil 3\n");
	CHECK(tt_wait_out(t, "evil done", 10000));
	CHECK(tt_wait_out(p, "\\\\z\n", 10000));
	kill(p->pid, SIGINT); /* the tool drains everything before it exits */
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(tt_count(p->obuf, " tt_evil "), 3);
	CHECK_EQ(tt_count(p->obuf, "\n"), 3);
	CHECK_EQ(tt_count(p->obuf, "tt_forged"), 3);
	CHECK(strchr(p->obuf, '\x1b') == NULL && strchr(p->obuf, '\x07') == NULL);
	CHECK_EQ(tt_count(p->obuf, "s=a\\n1.0 1 tt_forged x=1\\x1b]0;pwned\\x07\\x1b[2J\\\\z\n"), 3);
	tt_kill(t);
	free(p);
	free(t);
}
