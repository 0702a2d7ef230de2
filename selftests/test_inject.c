/*
 * `djp trace -x` on programs started without libdjprobe: the tool loads the
 * agent into them through ptrace (tools/djp/attach/inject.c).  Each target must
 * go on as if nothing happened: a thread blocked in read gets its read
 * back, events are counted exactly, the text is the file's again after the
 * trace, and the exit status is its own.  What cannot be injected (a
 * static program, a zombie, a kernel thread, init) is refused with one
 * line, and the target runs on.
 */
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *busy(bool is_static)
{
	static char p[2][4096];
	snprintf(p[is_static], sizeof(p[is_static]), "%s",
		 djp_test_path(is_static ? "trace_progs/busy_target-static" : "trace_progs/busy_target"));
	return p[is_static];
}

static struct tproc *trace_x(pid_t pid, const char *pattern)
{
	char spid[16];
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	return tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, (char *)pattern, NULL }, false, -1);
}

/* Stop the tool with ^C: it must end well and have counted `n` events of
 * marker `name` and lost none. */
static void stop_and_count(struct tproc *p, const char *name, unsigned long long n)
{
	unsigned long long ev, lost;
	int st;
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!tt_summary_row(p->ebuf, name, &ev, &lost) || ev != n || lost)
		djp_test_fail(__FILE__, __LINE__, "%s: expected %llu: %s", name, n, p->ebuf);
}

/* The busy target after a trace: its text the file's, still answering,
 * and it ends well (frees both). */
static void busy_target_intact(struct tproc *t, struct tproc *p);


TEST_TIMEOUT(inject_into_a_program_without_the_agent, 60)
{
	/* no LD_PRELOAD: the target never heard of djprobe */
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "2000", NULL }, false, -1);
	struct tproc *p;
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	p = trace_x(t->pid, "tt_*");
	CHECK(tt_wait_out(p, " tt_tick i=", 10000));
	/* its main thread was stopped in read(0): the read goes on */
	tt_send(t, "burst 1000\n");
	CHECK(tt_wait_out(t, "burst 1000 ", 10000));
	stop_and_count(p, "tt_burst", 1000);
	CHECK(tt_wait_restored(t->pid, tt_target(false), 2000));
	tt_send(t, "burst 10\n");
	CHECK(tt_wait_out(t, "burst 10 ", 10000));
	tt_send(t, "exit 7\n");
	st = tt_finish(t, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	CHECK_EQ(tt_count(t->obuf, "ready"), 1);
	free(p);
	free(t);
}

/* Eight threads that never make a system call (more than the cores), and
 * the main one in read: the injector stops only a thread where calling
 * the loader is safe, and the spinners keep spinning. */
TEST_TIMEOUT(inject_with_busy_threads, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)busy(false), "--threads", "8", NULL }, false, -1);
	struct tproc *p;
	char spid[16];
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	/* a script, not the event printer: eight spinners outrun any printer */
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", spid, "-e",
				      "global n; probe process.mark(\"bt_spin\") { n++ }\n"
				      "probe timer.ms(500) { exit() }\n"
				      "probe end { printf(\"seen=%d\\n\", n > 1000) }",
				      NULL },
		     false, -1);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !strstr(p->obuf, "seen=1"))
		djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s / %s", st, p->obuf, p->ebuf);
	busy_target_intact(t, p);
}

static void busy_target_intact(struct tproc *t, struct tproc *p)
{
	CHECK(tt_wait_restored(t->pid, busy(false), 2000));
	tt_send(t, "count\n");
	CHECK(tt_wait_out(t, "count ", 10000));
	tt_end(t);
	free(p);
}

/* Expect `djp trace -x PID` to fail with `what` in its one line. */
static void refused(pid_t pid, const char *what)
{
	struct tproc *p = trace_x(pid, "*");
	int st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	if (!strstr(p->ebuf, what) || tt_lines(p->ebuf) != 1)
		djp_test_fail(__FILE__, __LINE__, "pid %d: stderr: %s", (int)pid, p->ebuf);
	free(p);
}

TEST_TIMEOUT(inject_refuses_what_it_cannot_load_into, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)busy(true), "--threads", "1", NULL }, false, -1);
	pid_t z;
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	refused(t->pid, "no libc.so in it");
	tt_send(t, "count\n"); /* it runs on */
	CHECK(tt_wait_out(t, "count ", 10000));
	tt_end(t);

	z = fork();
	if (z == 0)
		_exit(0);
	CHECK(z > 0);
	for (int i = 0; i < 500; i++) { /* until it is a zombie */
		char path[64], buf[256], *c;
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)z);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')) && c[2] == 'Z') {
			fclose(f);
			break;
		}
		if (f)
			fclose(f);
		usleep(2000);
	}
	refused(z, "has exited");
	CHECK_EQ(waitpid(z, &st, 0), z);
	refused(2, "kernel thread");
	refused(1, "init");
}

/* The signal mask and ignored set of /proc/PID/status, joined; *caught
 * gets the set with handlers. */
static void sig_lines(pid_t pid, char *out, size_t sz, unsigned long long *caught)
{
	char path[64], line[256];
	FILE *f;
	size_t n = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	out[0] = 0;
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		if ((!strncmp(line, "SigBlk", 6) || !strncmp(line, "SigIgn", 6)) && n + strlen(line) < sz)
			n += (size_t)snprintf(out + n, sz - n, "%s", line);
		if (!strncmp(line, "SigCgt:", 7))
			*caught = strtoull(line + 7, NULL, 16);
	}
	fclose(f);
}

/* Every signal blocked in every thread: the agent is loaded, and the
 * probes armed and disarmed with the threads stopped (kernel/freeze.c);
 * the mask and the ignored set are the program's own before and after (no
 * fault was forced on it), and its handlers are all still there (the
 * library adds its own, as when it is preloaded). */
TEST_TIMEOUT(inject_leaves_a_process_that_blocks_every_signal_as_it_was, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)busy(false), "--threads", "2", "--block-signals", NULL },
				   false, -1);
	struct tproc *p;
	char before[1024], after[1024], spid[16];
	unsigned long long caught0 = 0, caught1 = 0, ev, lost;
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	sig_lines(t->pid, before, sizeof(before), &caught0);
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "-o", "/dev/null", "bt_spin", NULL },
		     false, -1);
	CHECK(tt_wait_armed(t->pid, busy(false), 10000));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!tt_summary_row(p->ebuf, "bt_spin", &ev, &lost) || strstr(p->ebuf, "blocks SIGTRAP"))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	sig_lines(t->pid, after, sizeof(after), &caught1);
	CHECK_STR(after, before);
	CHECK_EQ(caught1 & caught0, caught0);
	busy_target_intact(t, p);
}

/* Programs nobody here wrote, started without the agent: python3's
 * gc__start (an SDT probe behind a semaphore, which arming must raise),
 * and libstdc++'s throw in a C++ program that has no marker of its own.
 * Counted exactly against what the program did. */
static void python_gc_under_x(void)
{
	char py[4096];
	struct tproc *t, *p;
	char spid[16];

	if (!realpath("/usr/bin/python3", py))
		djp_test_fail(__FILE__, __LINE__, "no /usr/bin/python3: make check installs python3");
	t = tt_spawn((char *const[]){ py, "-u", "-c",
				      "import gc, sys, os\n"
				      "gc.disable()\n"
				      "print('ready', os.getpid())\n"
				      "for line in sys.stdin:\n"
				      "    n = int(line.split()[1])\n"
				      "    for i in range(n): gc.collect()\n"
				      "    print('collected', n)\n",
				      NULL },
		     false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "python:gc__start", NULL }, false, -1);
	CHECK(tt_wait_armed(t->pid, py, 10000));
	tt_send(t, "gc 100\n");
	CHECK(tt_wait_out(t, "collected 100", 10000));
	stop_and_count(p, "python:gc__start", 100);
	CHECK(tt_wait_restored(t->pid, py, 2000));
	tt_end(t);
	free(p);
}

TEST_TIMEOUT(inject_python3_gc_start, 60)
{
	python_gc_under_x();
}

TEST_TIMEOUT(inject_cxx_program_libstdcxx_throw, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_cxx(true), NULL }, false, -1);
	struct tproc *p;
	unsigned long long ev, lost;
	char spid[16], cxxlib[4096];

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "libstdcxx:throw", "libstdcxx:catch", NULL },
		     false, -1);
	CHECK(realpath("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", cxxlib) != NULL);
	CHECK(tt_wait_armed_n(t->pid, cxxlib, 2, 10000)); /* throw and catch */
	tt_send(t, "throw 300\n");
	CHECK(tt_wait_out(t, "thrown 300", 10000));
	stop_and_count(p, "libstdcxx:throw", 300);
	if (!tt_summary_row(p->ebuf, "libstdcxx:catch", &ev, &lost) || ev != 300 || lost)
		djp_test_fail(__FILE__, __LINE__, "libstdcxx:catch: expected 300: %s", p->ebuf);
	tt_end(t);
	free(p);
}

/* A library the injected process loads later: the dlopen interposer is not
 * called in it (its calls were bound before the agent came), and the agent
 * arms the library's markers from its look at the loader's count. */
TEST_TIMEOUT(inject_then_a_library_loaded_later_is_armed, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, false, -1);
	struct tproc *p;
	char line[4200];

	CHECK(tt_wait_out(t, "ready", 10000));
	p = trace_x(t->pid, "t*"); /* tt_* now, tp_plugin once loaded */
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	snprintf(line, sizeof(line), "dlopen %s 0\n", tt_plugin());
	tt_send(t, line);
	CHECK(tt_wait_out(t, "dlopen ok", 10000));
	CHECK(tt_wait_armed(t->pid, tt_plugin(), 10000));
	tt_send(t, "fire 5\n");
	CHECK(tt_wait_out(t, "fired 5", 10000));
	stop_and_count(p, "tp_plugin", 5);
	tt_end(t);
	free(p);
}

/* An injected agent interposes too (kernel/got_patch.c): the program's
 * own sigprocmask, bound to libc before the agent came, now keeps SIGTRAP
 * unblocked, so the children it forks with every other signal blocked (as
 * PostgreSQL's postmaster does) can still be armed. */
TEST_TIMEOUT(inject_interposes_the_programs_signal_mask, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, false, -1);
	struct tproc *p;
	unsigned long long blk = 0, total;
	char spid[16], path[64], line[256];
	int st, others;
	FILE *f;

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "tt_burst", NULL }, false, -1);
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	tt_send(t, "block\n");
	CHECK(tt_wait_out(t, "blocked", 10000));
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)t->pid, (int)t->pid);
	CHECK((f = fopen(path, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "SigBlk: %llx", &blk);
	fclose(f);
	CHECK(blk & (1ull << (SIGINT - 1)));	/* blocked as asked */
	CHECK(!(blk & (1ull << (SIGTRAP - 1)))); /* but never SIGTRAP */
	tt_send(t, "fork 3 10\n");
	CHECK(tt_wait_out(t, "forked 3", 30000));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (tt_summary_sum(p->ebuf, "tt_burst", &total, &others) != 3 || total != 30)
		djp_test_fail(__FILE__, __LINE__, "%s", p->ebuf);
	free(p);
	tt_end(t);
}

/* A process that forks the moment it sees a site armed (it spins on the
 * site's first byte) has its child traced: the tool asks the agent to
 * follow forks before it arms anything.  FOLLOW sent after the arming
 * lost this child in two runs of three: it forked before the agent knew
 * where to dial, and ran untraced, unsaid. */
TEST_TIMEOUT(inject_follows_a_fork_made_as_soon_as_a_site_is_armed, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, false, -1);
	struct tproc *p;
	unsigned long long total;
	char spid[16];
	int st, others;

	CHECK(tt_wait_out(t, "ready", 10000));
	tt_send(t, "forkarm 5\n");
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "tt_forkarm", NULL }, false, -1);
	CHECK(tt_wait_out(t, "forkarm 1", 30000));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (tt_summary_sum(p->ebuf, "tt_forkarm", &total, &others) != 1 || total != 5)
		djp_test_fail(__FILE__, __LINE__, "%s", p->ebuf);
	free(p);
	tt_end(t);
}

/* No signal reaches the target because of the injection, the arming or
 * the trace: the kernel's own record of every signal generated for it
 * (the signal:signal_generate tracepoint, through bpftrace), as a strace of
 * it would show (strace cannot watch it: a process has one tracer, and the
 * injector is it for a moment). */
TEST_TIMEOUT(inject_sends_the_target_no_signal, 90)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, false, -1);
	struct tproc *b, *p;
	char prog[256];

	CHECK(tt_wait_out(t, "ready", 10000));
	if (access("/usr/bin/bpftrace", X_OK))
		djp_test_fail(__FILE__, __LINE__,
			      "no /usr/bin/bpftrace to watch the signals: make check installs bpftrace");
	/* the tracepoints live in tracefs, which a minimal system may not
	 * have mounted */
	if (access("/sys/kernel/tracing/events/signal", F_OK) && geteuid() == 0)
		(void)!system("mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null");
	snprintf(prog, sizeof(prog),
		 "tracepoint:signal:signal_generate /args->pid == %d/ { printf(\"signal %%d\\n\", args->sig); }\n"
		 "BEGIN { printf(\"attached\\n\"); } END { printf(\"watched\\n\"); }",
		 (int)t->pid);
	b = tt_spawn((char *const[]){ "/usr/bin/bpftrace", "-e", prog, NULL }, false, -1);
	if (!tt_wait_out(b, "attached\n", 30000)) { /* BEGIN runs once the probes are in */
		tt_kill(b);
		djp_test_fail(__FILE__, __LINE__, "bpftrace did not attach to signal:signal_generate in 30 s: %.500s",
			      b->ebuf);
	}
	p = trace_x(t->pid, "tt_burst");
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	tt_send(t, "burst 100\n");
	CHECK(tt_wait_out(t, "burst 100 ", 10000));
	stop_and_count(p, "tt_burst", 100);
	CHECK(tt_wait_restored(t->pid, tt_target(false), 2000));
	kill(b->pid, SIGINT);
	tt_finish(b, 20000);
	CHECK(strstr(b->obuf, "watched") != NULL); /* it did watch */
	if (strstr(b->obuf, "signal "))
		djp_test_fail(__FILE__, __LINE__, "signals sent to the target: %s", b->obuf);
	tt_end(t);
	free(b);
	free(p);
}

/* True once process pid runs the tool itself (it has exec'd), within 10 s. */
static bool running_tool(pid_t pid)
{
	char link[64], exe[4096];
	for (int i = 0; i < 10000; i++) {
		ssize_t n;
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
		n = readlink(link, exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = 0;
			if (!strcmp(strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe, "djp"))
				return true;
		}
		usleep(1000);
	}
	return false;
}

/* tt_finish, noting first what the kernel says of the tool if it is still
 * there after half the time: its state and its signal masks. */
static int tt_finish_noting(struct tproc *p, int timeout_ms, char *note, size_t size)
{
	char path[64], line[256];
	siginfo_t si;
	FILE *f;

	for (int ms = 0; ms < timeout_ms / 2; ms += 10) {
		si.si_pid = 0; /* ended: reaped by tt_finish, which reads its pipes too */
		if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == p->pid)
			return tt_finish(p, timeout_ms);
		usleep(10000);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	note[0] = 0;
	if ((f = fopen(path, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "State", 5) || !strncmp(line, "Sig", 3) || !strncmp(line, "ShdPnd", 6)) {
				line[strcspn(line, "\n")] = ' ';
				snprintf(note + strlen(note), size - strlen(note), "%s", line);
			}
		fclose(f);
	}
	return tt_finish(p, timeout_ms / 2);
}

/* A signal that kills the tool (SIGALRM: the tool has no handler for it,
 * and unlike SIGQUIT a shell's background job does not inherit it ignored)
 * at any moment of an injection, here every 3 ms of the first 60: the
 * target lives on and answers.  Before the tool held such signals off
 * while the thread was in dlopen, the thread was left to return from it
 * into a bare `syscall` with no tracer to catch it. */
TEST_TIMEOUT(inject_interrupted_at_any_moment_leaves_the_target_alive, 180)
{
	char status_when_stuck[256] = "";

	for (int delay_us = 0; delay_us <= 60000; delay_us += 3000) {
		struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, false, -1);
		struct tproc *p;
		int st;
		CHECK(tt_wait_out(t, "ready", 10000));
		p = trace_x(t->pid, "tt_burst");
		/* from the moment the tool runs: a signal to the test's own
		 * child before its exec tests nothing of the tool's */
		CHECK(running_tool(p->pid));
		usleep((useconds_t)delay_us);
		kill(p->pid, SIGALRM);
		st = tt_finish_noting(p, 20000, status_when_stuck, sizeof(status_when_stuck));
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGALRM)
			djp_test_fail(__FILE__, __LINE__, "the tool, sent SIGALRM at %d us, ended with status %#x (%s): %s",
				      delay_us, st, status_when_stuck, p->ebuf);
		tt_send(t, "burst 5\n");
		if (!tt_wait_out(t, "burst 5 ", 10000))
			djp_test_fail(__FILE__, __LINE__, "target dead or stuck after SIGALRM at %d us: %s", delay_us,
				      p->ebuf);
		tt_end(t);
		free(p);
	}
}

/* A process that exits while the tool is injecting into it, at every
 * moment of the first 50 ms: the tool never hangs or crashes; it either
 * traced it to its end, or says in one line why it could not. */
TEST_TIMEOUT(inject_into_a_process_that_exits_meanwhile, 180)
{
	for (int delay_us = 0; delay_us <= 50000; delay_us += 5000) {
		struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--no-stdin", "--ticks", "40",
							    "--tick-us", "1000", NULL },
					   false, -1);
		struct tproc *p;
		int st;
		CHECK(tt_wait_out(t, "ready", 10000));
		usleep((useconds_t)delay_us);
		p = trace_x(t->pid, "tt_tick");
		st = tt_finish(p, 20000);
		if (!WIFEXITED(st) || (WEXITSTATUS(st) && tt_lines(p->ebuf) != 1))
			djp_test_fail(__FILE__, __LINE__, "%d us: status %#x: %s", delay_us, st, p->ebuf);
		st = tt_finish(t, 10000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		free(p);
		free(t);
	}
}
