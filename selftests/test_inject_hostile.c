/*
 * `djp trace -x` against programs that set the injector's traps
 * (trace_progs/hostile_target.c): a thread that waits in a signal handler
 * that interrupted malloc, a thread with 3 KiB of stack left, seccomp
 * filters that kill on a call the loader or the agent makes, a process
 * another tracer holds, limits on memory and descriptors, a mount
 * namespace without the library.  Each time the tool says in one line
 * what stopped it, within seconds, and the program runs on as if nothing
 * had happened: its own dlopen still works afterwards (the loader's lock
 * was not left held), and it exits 0.  Where the injection is safe (a
 * filter that allows every call of kernel/agent/agent_syscalls.c and kills
 * on any other), it goes through and every event is counted.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "lib/agent_addr.h"
#include "test_trace_util.h"

static const char *hostile(void)
{
	static char p[4096];
	if (!p[0])
		snprintf(p, sizeof(p), "%s", djp_test_path("trace_progs/hostile_target"));
	return p;
}

/* hostile_target with these arguments (NULL-terminated), once ready. */
static struct tproc *start(const char *a0, const char *a1, const char *a2, const char *a3)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)hostile(), (char *)a0, (char *)a1, (char *)a2, (char *)a3,
						    NULL },
				   false, -1);
	if (!tt_wait_out(t, "ready", 10000))
		djp_test_fail(__FILE__, __LINE__, "target not ready: %s / %s", t->obuf, t->ebuf);
	return t;
}

/* djp trace -x PID ht_burst: for 0.3 s, or (`run`) until ^C with the
 * events to /dev/null. */
static struct tproc *trace_x(pid_t pid, bool run)
{
	char spid[16];
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	if (run)
		return tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-o", "/dev/null", "-x", spid, "ht_burst",
						 NULL },
				false, -1);
	return tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "0.3", "-x", spid, "ht_burst", NULL },
			false, -1);
}

/* Expect djp trace -x to be refused, in one line holding `what`, within
 * 20 s (a tool that hangs fails here). */
static void expect_refused(struct tproc *t, const char *what)
{
	struct tproc *p = trace_x(t->pid, false);
	int st = tt_finish(p, 20000);
	if (st == -1)
		djp_test_fail(__FILE__, __LINE__, "djp did not end within 20 s: %s", p->ebuf);
	if (!WIFEXITED(st) || !WEXITSTATUS(st) || tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, what))
		djp_test_fail(__FILE__, __LINE__, "expected one line with \"%s\": status %#x: %s", what, st, p->ebuf);
	printf("# %s", p->ebuf);
	free(p);
}

/* The same for a process the test did not start. */
static void expect_pid_refused(pid_t pid, const char *what)
{
	struct tproc *p = trace_x(pid, false);
	int st = tt_finish(p, 20000);
	if (st == -1 || !WIFEXITED(st) || !WEXITSTATUS(st) || tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, what))
		djp_test_fail(__FILE__, __LINE__, "expected one line with \"%s\": status %#x: %s", what, st, p->ebuf);
	printf("# %s", p->ebuf);
	free(p);
}

/* Reading a process's seccomp filter takes CAP_SYS_ADMIN. */
static void need_cap_sys_admin(void)
{
	if (geteuid() != 0)
		SKIP("needs root to read a seccomp filter (PTRACE_SECCOMP_GET_FILTER)");
}

/* The program answers, loads a library of its own (the loader's lock is
 * free), and exits 0. */
static void runs_on(struct tproc *t)
{
	char line[4200];
	tt_send(t, "ping\n");
	if (!tt_wait_out(t, "pong", 10000))
		djp_test_fail(__FILE__, __LINE__, "target does not answer: %s / %s", t->obuf, t->ebuf);
	snprintf(line, sizeof(line), "dlopen %s\n", tt_plugin());
	tt_send(t, line);
	if (!tt_wait_out(t, "dlopen ok", 10000))
		djp_test_fail(__FILE__, __LINE__, "its own dlopen does not return: %s / %s", t->obuf, t->ebuf);
	tt_end(t);
}

/* The main thread's handler interrupted the mmap malloc makes with its
 * arena's lock held, and waits in read: dlopen on that thread would wait
 * for the lock forever (the tool used to hang with it). */
TEST_TIMEOUT(inject_refuses_a_thread_waiting_in_a_signal_handler, 90)
{
	struct tproc *t;

	need_cap_sys_admin(); /* the SIGSYS comes from a seccomp filter */
	t = start("--handler-in-malloc", NULL, NULL, NULL);
	CHECK(tt_wait_out(t, "in handler", 10000));
	expect_refused(t, "waits inside a signal handler");
	tt_send(t, "go\n");
	CHECK(tt_wait_out(t, "malloc done", 10000));
	runs_on(t);
}

/* The same, with a second thread that could make the call: the lock the
 * handler's thread holds is one the loader needs on any thread. */
TEST_TIMEOUT(inject_refuses_while_any_thread_waits_in_a_signal_handler, 90)
{
	struct tproc *t;

	need_cap_sys_admin();
	t = start("--spare", "--handler-in-malloc", NULL, NULL);
	CHECK(tt_wait_out(t, "in handler", 10000));
	expect_refused(t, "waits inside a signal handler");
	tt_send(t, "go\n");
	CHECK(tt_wait_out(t, "malloc done", 10000));
	runs_on(t);
}

/* The only thread that waits has 3 KiB of its 64 KiB stack left: the loader
 * would overflow it, fault, and leave its lock held. */
TEST_TIMEOUT(inject_refuses_a_thread_short_of_stack, 60)
{
	struct tproc *t = start("--short-stack", "3072", NULL, NULL);
	CHECK(tt_wait_out(t, "short ", 10000));
	expect_refused(t, "bytes of stack left");
	runs_on(t);
}

/* With another thread that has its stack, that one makes the call. */
TEST_TIMEOUT(inject_passes_over_a_thread_short_of_stack, 60)
{
	struct tproc *t = start("--short-stack", "3072", "--spare", NULL);
	struct tproc *p;
	unsigned long long ev, lost;
	int st;

	CHECK(tt_wait_out(t, "short ", 10000));
	p = trace_x(t->pid, true);
	CHECK(tt_wait_armed(t->pid, hostile(), 10000));
	tt_send(t, "burst 500\n");
	CHECK(tt_wait_out(t, "burst 500", 10000));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!tt_summary_row(p->ebuf, "ht_burst", &ev, &lost) || ev != 500 || lost)
		djp_test_fail(__FILE__, __LINE__, "ht_burst: expected 500: %s", p->ebuf);
	free(p);
	runs_on(t);
}

/* A filter that kills on one call the loader or the agent makes: refused,
 * naming the call; the program lives. */
TEST_TIMEOUT(inject_refuses_a_seccomp_filter_that_kills, 120)
{
	static const char *const calls[] = { "openat", "membarrier", "socket", "clone3", "memfd_create" };

	need_cap_sys_admin();
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		char what[64];
		struct tproc *t = start("--spare", "--seccomp-kill", calls[i], NULL);
		snprintf(what, sizeof(what), "seccomp filter kills the process on %s,", calls[i]);
		expect_refused(t, what);
		tt_send(t, "ping\n");
		if (!tt_wait_out(t, "pong", 10000))
			djp_test_fail(__FILE__, __LINE__, "%s: target gone: %s / %s", calls[i], t->obuf, t->ebuf);
		tt_end(t);
	}
}

/* A filter that allows exactly the calls of kernel/agent/agent_syscalls.c
 * (and the program's own) and kills on any other: the injection, arming
 * (jumps, then int3), the trace and the disarming make no other call (a
 * thread stopped in nanosleep resumes it with restart_syscall, which the
 * list once lacked), signals arriving or not. */
TEST_TIMEOUT(inject_under_an_allow_list_of_the_agents_calls, 60)
{
	struct tproc *t;

	need_cap_sys_admin();
	t = start("--sleeper", "--storm", "--seccomp-allow-list", NULL);
	for (int int3 = 0; int3 < 2; int3++) {
		struct tproc *p;
		unsigned long long ev, lost;
		char spid[16];
		int st;
		snprintf(spid, sizeof(spid), "%d", (int)t->pid);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", int3 ? "--int3" : "--json", "-o", "/dev/null",
					      "-x", spid, "ht_burst", NULL },
			     false, -1);
		if (!tt_wait_armed(t->pid, hostile(), 10000))
			djp_test_fail(__FILE__, __LINE__, "not armed (target %s): %s", kill(t->pid, 0) ? "gone" : "alive",
				      p->ebuf);
		tt_send(t, "burst 300\n");
		if (!tt_wait_out(t, int3 ? "burst 300\nburst 300" : "burst 300", 10000))
			djp_test_fail(__FILE__, __LINE__, "target gone: %s", t->obuf);
		kill(p->pid, SIGINT);
		st = tt_finish(p, 10000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (!tt_summary_row(p->ebuf, "ht_burst", &ev, &lost) || ev != 300 || lost)
			djp_test_fail(__FILE__, __LINE__, "ht_burst: expected 300: %s", p->ebuf);
		CHECK(tt_wait_restored(t->pid, hostile(), 2000));
		free(p);
	}
	/* a function's entry: an instruction probe, armed under a freeze of
	 * every thread */
	{
		uintptr_t entry = tt_func_addr(t->pid, hostile(), "burst");
		int was = tt_byte_at(t->pid, entry), st;
		char spid[16];
		struct tproc *d;
		long got = -1;
		snprintf(spid, sizeof(spid), "%d", (int)t->pid);
		d = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", spid, "-e",
					      "global n; probe process.function(\"burst\") { n++ }\n"
					      "probe end { printf(\"n=%d\\n\", n) }",
					      NULL },
			     false, -1);
		tt_wait_byte(t->pid, entry, 0xe9, 10000);
		for (int i = 0; i < 7; i++)
			tt_send(t, "burst 1\n");
		CHECK(tt_wait_out(t, "burst 300\nburst 300\nburst 1\nburst 1\nburst 1\nburst 1\nburst 1\nburst 1\nburst 1\n",
				  10000));
		kill(d->pid, SIGINT);
		st = tt_finish(d, 20000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (sscanf(d->obuf, "n=%ld", &got) != 1 || got != 7)
			djp_test_fail(__FILE__, __LINE__, "calls: expected 7: %s / %s", d->obuf, d->ebuf);
		tt_wait_byte(t->pid, entry, was, 2000);
		free(d);
	}
	tt_send(t, "ping\n");
	CHECK(tt_wait_out(t, "pong", 10000));
	tt_end(t);
}

/* Another tracer holds it: named, with its command. */
TEST_TIMEOUT(inject_names_the_tracer_that_holds_it, 60)
{
	struct tproc *t = start("--spare", NULL, NULL, NULL);
	int st;
	char what[64];

	CHECK(ptrace(PTRACE_SEIZE, t->pid, 0, 0) == 0);
	snprintf(what, sizeof(what), "already traced by process %d (djp-selftests)", (int)getpid());
	expect_refused(t, what);
	CHECK(ptrace(PTRACE_INTERRUPT, t->pid, 0, 0) == 0);
	CHECK(waitpid(t->pid, &st, __WALL) == t->pid && WIFSTOPPED(st));
	CHECK(ptrace(PTRACE_DETACH, t->pid, 0, 0) == 0);
	runs_on(t);
}

/* Address space limits from just above what it maps to well above: each
 * refusal names what failed (the loader's dlerror(), the agent's start,
 * the rings), never "the agent did not answer"; the program lives. */
TEST_TIMEOUT(inject_under_rlimit_as_says_why, 120)
{
	for (int mib = 2; mib <= 40; mib += 2) {
		struct tproc *t = start("--spare", NULL, NULL, NULL), *p;
		char path[64], line[256];
		unsigned long long vm = 0;
		struct rlimit rl;
		FILE *f;
		int st;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)t->pid);
		CHECK((f = fopen(path, "r")) != NULL);
		while (fgets(line, sizeof(line), f))
			sscanf(line, "VmSize: %llu kB", &vm);
		fclose(f);
		rl.rlim_cur = rl.rlim_max = (vm << 10) + ((rlim_t)mib << 20);
		CHECK(prlimit(t->pid, RLIMIT_AS, &rl, NULL) == 0);
		p = trace_x(t->pid, false);
		st = tt_finish(p, 20000);
		CHECK(st != -1 && WIFEXITED(st));
		if (WEXITSTATUS(st) && (tt_lines(p->ebuf) != 1 || strstr(p->ebuf, "did not answer")))
			djp_test_fail(__FILE__, __LINE__, "+%d MiB: %s", mib, p->ebuf);
		if (WEXITSTATUS(st))
			printf("# +%d MiB: %s", mib, p->ebuf);
		free(p);
		tt_send(t, "ping\n");
		CHECK(tt_wait_out(t, "pong", 10000));
		tt_end(t);
	}
}

/* How many descriptors process `pid` has open. */
static long open_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	long used = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	while ((e = readdir(d)))
		used += e->d_name[0] != '.';
	closedir(d);
	return used;
}

/* Descriptors: none to a few free under RLIMIT_NOFILE: the count is named
 * (the loader's openat and the agent's accept used to fail with nobody
 * saying so: "the agent did not answer", or a credentials error), and the
 * refusal leaves the program every descriptor it had. */
TEST_TIMEOUT(inject_with_descriptors_full_says_why, 60)
{
	for (int spare = 0; spare <= 3; spare++) {
		struct tproc *t = start("--spare", NULL, NULL, NULL);
		struct rlimit rl, was;
		long used = open_fds(t->pid);

		CHECK(used > 0);
		CHECK(prlimit(t->pid, RLIMIT_NOFILE, NULL, &was) == 0);
		rl.rlim_cur = (rlim_t)(used + spare);
		rl.rlim_max = was.rlim_max;
		CHECK(prlimit(t->pid, RLIMIT_NOFILE, &rl, NULL) == 0);
		expect_refused(t, "descriptors free (RLIMIT_NOFILE)");
		CHECK_EQ(open_fds(t->pid), used);
		/* Its own dlopen needs a descriptor of its own: with the limit
		 * it had, the program goes on as before the attempt. */
		CHECK(prlimit(t->pid, RLIMIT_NOFILE, &was, NULL) == 0);
		runs_on(t);
	}
}

/* A library path that is no shared object: the loader's own words. */
TEST_TIMEOUT(inject_passes_on_the_loaders_error, 60)
{
	struct tproc *t = start("--spare", NULL, NULL, NULL), *p;
	char spid[16];
	int st;

	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	setenv("DJP_PRELOAD", "/etc/passwd", 1);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "0.3", "-x", spid, "ht_burst", NULL },
		     false, -1);
	unsetenv("DJP_PRELOAD");
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st));
	if (tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, "could not load /etc/passwd: /etc/passwd: invalid ELF header"))
		djp_test_fail(__FILE__, __LINE__, "%s", p->ebuf);
	free(p);
	runs_on(t);
}

/* A process in a mount namespace where the library is not there. */
TEST_TIMEOUT(inject_into_another_mount_namespace_says_so, 60)
{
	char dir[4096], *slash;
	struct tproc *t;

	if (geteuid() != 0)
		SKIP("needs root for a mount namespace");
	snprintf(dir, sizeof(dir), "%s", tt_lib());
	CHECK((slash = strrchr(dir, '/')) != NULL);
	*slash = 0;
	t = start("--hide", dir, "--spare", NULL); /* the thread in it too */
	expect_refused(t, "another mount namespace");
	tt_send(t, "ping\n");
	CHECK(tt_wait_out(t, "pong", 10000));
	tt_end(t);
}

/* Without CAP_SYS_ADMIN the filter cannot be read: refused, saying that
 * --force injects anyway; with --force the injection goes through (this
 * filter fails membarrier with EPERM, which the engine copes with). */
TEST_TIMEOUT(inject_under_an_unreadable_seccomp_filter_needs_force, 60)
{
	struct tproc *t, *p;
	unsigned long long ev, lost;
	char spid[16];
	int st;

	if (geteuid() != 0)
		SKIP("needs root to run processes as another user");
	t = tt_spawn((char *const[]){ (char *)hostile(), "--spare", "--seccomp-errno", "membarrier", NULL }, false, 65534);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "0.3", "-x", spid, "ht_burst", NULL },
		     false, 65534);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || !WEXITSTATUS(st) || tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, "cannot be read here") ||
	    !strstr(p->ebuf, "--force"))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
	printf("# %s", p->ebuf);
	free(p);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--force", "-o", "/dev/null", "-x", spid, "ht_burst",
				      NULL },
		     false, 65534);
	if (!tt_wait_armed(t->pid, hostile(), 10000))
		djp_test_fail(__FILE__, __LINE__, "not armed: %s", p->ebuf);
	tt_send(t, "burst 200\n");
	CHECK(tt_wait_out(t, "burst 200", 10000));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!tt_summary_row(p->ebuf, "ht_burst", &ev, &lost) || ev != 200 || lost)
		djp_test_fail(__FILE__, __LINE__, "ht_burst: expected 200: %s", p->ebuf);
	free(p);
	tt_send(t, "ping\n");
	CHECK(tt_wait_out(t, "pong", 10000));
	tt_end(t);
}

/* A thread of the program waits in a library's constructor, the loader's
 * lock held, so the injected dlopen on another thread waits too: at the
 * timeout the tool interrupts that running thread (it used to resume it,
 * past its interrupt stop, and wait for it forever, or leave it in the
 * loader with nobody to catch its return), gives it back, and says so.
 * Once the constructor returns, the program loads its libraries and runs
 * on, every thread its own. */
TEST_TIMEOUT(inject_timeout_gives_the_thread_back, 60)
{
	char lib[4096], path[96], line[256], spid[16];
	struct tproc *t, *p;
	struct dirent *e;
	DIR *d;
	int st;

	snprintf(lib, sizeof(lib), "%s", djp_test_path("trace_progs/libhostile_plugin.so"));
	t = start("--spare", "--loader-waits", lib, NULL);
	CHECK(tt_wait_out(t, "in constructor", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	setenv("DJP_INJECT_TIMEOUT", "1", 1);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "0.3", "-x", spid, "ht_burst", NULL },
		     false, -1);
	unsetenv("DJP_INJECT_TIMEOUT");
	st = tt_finish(p, 20000);
	if (st == -1)
		djp_test_fail(__FILE__, __LINE__, "djp did not end within 20 s: %s", p->ebuf);
	if (!WIFEXITED(st) || !WEXITSTATUS(st) || tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, "did not return within 1 s") ||
	    !strstr(p->ebuf, "(its thread is given back"))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
	printf("# %s", p->ebuf);
	free(p);
	/* no thread is left traced */
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	CHECK((d = opendir(path)) != NULL);
	while ((e = readdir(d))) {
		char sp[512];
		FILE *f;
		long tracer = -1;
		if (e->d_name[0] == '.')
			continue;
		snprintf(sp, sizeof(sp), "%s/%s/status", path, e->d_name);
		CHECK((f = fopen(sp, "r")) != NULL);
		while (fgets(line, sizeof(line), f))
			sscanf(line, "TracerPid: %ld", &tracer);
		fclose(f);
		if (tracer)
			djp_test_fail(__FILE__, __LINE__, "thread %s still traced by %ld", e->d_name, tracer);
	}
	closedir(d);
	tt_send(t, "release\n");
	CHECK(tt_wait_out(t, "loaded", 10000));
	runs_on(t);
}

/* Inject, count `n` bursts exactly, stop: the program's markers all
 * restored. */
static void inject_and_count(struct tproc *t, long n)
{
	struct tproc *p = trace_x(t->pid, true);
	unsigned long long ev, lost;
	char cmd[64], want[64];
	int st;

	if (!tt_wait_armed(t->pid, hostile(), 20000)) {
		/* what djp said, or that it had to be killed (-1: it hung) */
		bool alive = !kill(t->pid, 0);
		kill(p->pid, SIGINT);
		st = tt_finish(p, 5000);
		djp_test_fail(__FILE__, __LINE__, "not armed in 20 s: djp status %#x: %s / target %s: %s", st, p->ebuf,
			      alive ? "alive" : "gone", t->ebuf);
	}
	snprintf(cmd, sizeof(cmd), "burst %ld\n", n);
	snprintf(want, sizeof(want), "burst %ld\n", n);
	tt_send(t, cmd);
	if (!tt_wait_out(t, want, 20000))
		djp_test_fail(__FILE__, __LINE__, "target gone: %s / %s", t->obuf, t->ebuf);
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!tt_summary_row(p->ebuf, "ht_burst", &ev, &lost) || ev != (unsigned long long)n || lost)
		djp_test_fail(__FILE__, __LINE__, "ht_burst: expected %ld: %s", n, p->ebuf);
	CHECK(tt_wait_restored(t->pid, hostile(), 5000));
	free(p);
}

/* The stress part (make stress runs it for DJP_STRESS_SECONDS; make check
 * for 3 s): injections, one after another, into programs whose threads
 * sit in a signal handler inside malloc (refused, then injected once the
 * handler returned), whose threads are short of stack or under a seccomp
 * allow-list of the agent's calls, all with SIGUSR1 arriving every 200 us,
 * and under filters that kill on one call or on writable code (refused).
 * Every program runs on and every event is counted. */
TEST_TIMEOUT(inject_hostile_stress, 7200)
{
	static const char *const calls[] = { "openat", "membarrier", "socket", "clone3", "memfd_create" };
	const char *env = getenv("DJP_STRESS_SECONDS");
	double seconds = env ? atof(env) : 3, end;
	struct timespec ts;
	unsigned seed = (unsigned)getpid(), done[4] = { 0 };

	need_cap_sys_admin();

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
	printf("# seed %u\n", seed);
	do {
		int kind = rand_r(&seed) % 4;
		long n = 1 + rand_r(&seed) % 5000;
		struct tproc *t;
		switch (kind) {
		case 0:
			t = start("--spare", "--storm", "--handler-in-malloc", NULL);
			CHECK(tt_wait_out(t, "in handler", 10000));
			expect_refused(t, "waits inside a signal handler");
			tt_send(t, "go\n");
			CHECK(tt_wait_out(t, "malloc done", 10000));
			inject_and_count(t, n);
			break;
		case 1:
			t = start("--short-stack", "3072", "--spare", "--storm");
			CHECK(tt_wait_out(t, "short ", 10000));
			inject_and_count(t, n);
			break;
		case 2:
			t = start("--spare", "--storm", "--seccomp-allow-list", NULL);
			inject_and_count(t, n);
			break;
		default: {
			int c = rand_r(&seed) % 6;
			t = c < 5 ? start("--spare", "--storm", "--seccomp-kill", calls[c])
				  : start("--spare", "--storm", "--seccomp-kill-wx", NULL);
			expect_refused(t, "seccomp filter kills the process on");
			break;
		}
		}
		done[kind]++;
		tt_send(t, "ping\n");
		if (!tt_wait_out(t, "pong", 10000))
			djp_test_fail(__FILE__, __LINE__, "kind %d: target gone: %s / %s", kind, t->obuf, t->ebuf);
		tt_end(t);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
	printf("# injections: %u into a handler's program, %u short stack, %u allow-list, %u refused for a killing filter\n",
	       done[0], done[1], done[2], done[3]);
}

/* The lowest descriptor number process pid has free. */
static long lowest_free_fd(pid_t pid)
{
	for (long fd = 0;; fd++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/fd/%ld", (int)pid, fd);
		if (access(path, F_OK))
			return fd;
	}
}

/* CPU ticks (utime + stime) of pid's thread named comm. */
static long thread_ticks(pid_t pid, const char *comm)
{
	char path[96], buf[512], name[32];
	struct dirent *e;
	long ticks = -1;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	CHECK((d = opendir(path)) != NULL);
	while (ticks < 0 && (e = readdir(d))) {
		FILE *f;
		unsigned long ut, st;
		char *c;
		snprintf(buf, sizeof(buf), "%s/%.32s/stat", path, e->d_name);
		if (e->d_name[0] == '.' || !(f = fopen(buf, "r")))
			continue;
		if (fgets(buf, sizeof(buf), f) && sscanf(buf, "%*d (%31[^)])", name) == 1 && !strcmp(name, comm) &&
		    (c = strrchr(buf, ')')) &&
		    sscanf(c + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
			ticks = (long)(ut + st);
		fclose(f);
	}
	closedir(d);
	return ticks;
}

/* A program with the agent (preloaded) whose descriptors run out: a
 * connection the agent cannot accept used to keep its socket readable,
 * and the agent thread spun in poll for as long as it stayed queued (1.2
 * CPU seconds in the 5 s the tool waited, and on after).  Now it pauses
 * its accepts, and the tool says why before it connects. */
TEST_TIMEOUT(agent_out_of_descriptors_neither_spins_nor_leaves_the_tool_waiting, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, true, -1);
	struct sockaddr_un a;
	socklen_t alen;
	struct rlimit rl, old;
	long before, after;
	int fd;

	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(tt_wait_agent(t->pid, 10000));
	CHECK(prlimit(t->pid, RLIMIT_NOFILE, NULL, &old) == 0);
	rl.rlim_cur = (rlim_t)lowest_free_fd(t->pid);
	rl.rlim_max = old.rlim_max;
	CHECK(prlimit(t->pid, RLIMIT_NOFILE, &rl, NULL) == 0);
	expect_refused(t, "its agent cannot take a session: 0 of its");
	/* the tool's look aside: a connection the agent cannot accept */
	CHECK(djp_agent_addr_find(t->pid, &a, &alen) == 0);
	CHECK((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHECK(connect(fd, (struct sockaddr *)&a, alen) == 0);
	before = thread_ticks(t->pid, "djp-agent");
	CHECK(before >= 0);
	usleep(1000000); /* a measurement: the agent's CPU time over a second */
	after = thread_ticks(t->pid, "djp-agent");
	close(fd);
	printf("# the agent thread used %ld ticks in the second after the connection\n", after - before);
	if (after - before > 10)
		djp_test_fail(__FILE__, __LINE__, "the agent spun: %ld ticks in a second", after - before);
	CHECK(prlimit(t->pid, RLIMIT_NOFILE, &old, NULL) == 0);
	tt_send(t, "burst 10\n");
	CHECK(tt_wait_out(t, "burst 10 ", 10000));
	tt_end(t);
}

/* A filter on the main thread alone, which kills on rt_sigreturn, while
 * another thread, without one, makes the call: the main thread would die
 * at its first int3 hit, on the return from the engine's SIGTRAP handler.
 * Each thread's filters are looked at. */
TEST_TIMEOUT(inject_looks_at_every_threads_seccomp_filter, 60)
{
	struct tproc *t, *p;
	char spid[16];
	int st;

	need_cap_sys_admin();
	t = start("--spare", "--seccomp-kill-main", "rt_sigreturn", NULL);

	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--int3", "-o", "/dev/null", "-x", spid, "ht_burst",
				      NULL },
		     false, -1);
	st = tt_finish(p, 20000);
	if (st == -1 || !WIFEXITED(st) || !WEXITSTATUS(st) || tt_lines(p->ebuf) != 1 ||
	    !strstr(p->ebuf, "seccomp filter kills the process on rt_sigreturn,"))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
	printf("# %s", p->ebuf);
	free(p);
	tt_send(t, "burst 10\n");
	if (!tt_wait_out(t, "burst 10", 10000))
		djp_test_fail(__FILE__, __LINE__, "target gone: %s", t->obuf);
	tt_end(t);
}

/* A thread waiting in vfork sleeps uninterruptibly until its child goes:
 * it would not stop for the injector (which used to wait for it, and
 * then could not let it go), so it is passed over and another thread
 * makes the call at once.  When the child goes, the thread returns from
 * vfork, nobody's tracee.  The child itself runs in the parent's memory:
 * it is refused, before the parent has the library (a dlopen there would
 * be the parent's) and after (the library's agent started there would
 * write over the parent's). */
TEST_TIMEOUT(inject_passes_over_a_thread_in_vfork, 60)
{
	struct tproc *t = start("--spare", "--vfork", NULL, NULL);
	const char *l;
	pid_t child;

	CHECK(tt_wait_out(t, "vfork child ", 10000));
	CHECK((l = strstr(t->obuf, "vfork child ")) != NULL);
	child = (pid_t)atoi(l + 12);
	CHECK(child > 0);
	expect_pid_refused(child, "runs in its parent's memory (a child of vfork");
	inject_and_count(t, 100);
	expect_pid_refused(child, "runs in its parent's memory (a child of vfork");
	inject_and_count(t, 50);
	CHECK(kill(child, SIGKILL) == 0);
	CHECK(tt_wait_out(t, "vfork done", 10000));
	runs_on(t);
}

/* Its only threads that may call the loader live in handlers whose
 * signals broke off their reads, and wait in read there, as PostgreSQL's
 * workers forked inside the postmaster's handler do (selftests/
 * test_inject_judge.c has the judgement): injected through one of them,
 * every event counted, the program running on. */
TEST_TIMEOUT(inject_through_a_thread_living_in_a_handler_that_broke_off_a_wait, 60)
{
	struct tproc *t = start("--waits-in-handler", NULL, NULL, NULL);

	CHECK(tt_wait_out(t, "in handler 12 ", 10000));
	CHECK(tt_wait_out(t, "in handler 23 ", 10000));
	inject_and_count(t, 100);
	runs_on(t);
}

/* A stopped process (SIGSTOP, ^Z): an agent in it, loaded or found, is
 * stopped too and could not answer (djp said "the agent did not answer"
 * after 5 s, having loaded one).  Refused at once, the process left
 * stopped and without an agent; continued, it is traced. */
TEST_TIMEOUT(inject_refuses_a_stopped_process, 60)
{
	struct tproc *t = start("--spare", NULL, NULL, NULL);
	char path[64], line[256];
	char state = 0;
	FILE *f;

	CHECK(kill(t->pid, SIGSTOP) == 0);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)t->pid);
	while (state != 'T') { /* the stop takes effect */
		CHECK((f = fopen(path, "r")) != NULL);
		while (fgets(line, sizeof(line), f))
			sscanf(line, "State: %c", &state);
		fclose(f);
	}
	expect_refused(t, "it is stopped (SIGSTOP");
	CHECK(!tt_wait_agent(t->pid, 100)); /* none was loaded */
	CHECK(kill(t->pid, SIGCONT) == 0);
	inject_and_count(t, 50);
	runs_on(t);
}

/* A filter that kills on pages both writable and executable (systemd's
 * MemoryDenyWriteExecute=, with KILL): the engine's look at whether it
 * may make text writable (mprotect RWX) would kill the program.  The
 * filter is run on the calls with the protections the code passes. */
TEST_TIMEOUT(inject_refuses_a_filter_that_kills_writable_code, 60)
{
	struct tproc *t;

	need_cap_sys_admin();
	t = start("--spare", "--seccomp-kill-wx", NULL, NULL);
	expect_refused(t, "seccomp filter kills the process on mprotect,");
	runs_on(t);
}
