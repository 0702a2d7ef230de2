/*
 * Processes whose threads block SIGTRAP (every signal, as a sigwait server's
 * do), traced under -x: the agent injected, the text written with every
 * other thread stopped by the tool (kernel/freeze.c), so that no thread
 * meets an int3.  Counted exactly against the target's own count; a site
 * that can only be an int3 breakpoint refused in one line that names it;
 * arming and disarming again and again while threads run the probed code;
 * a child of fork that inherits the blocked SIGTRAP.  Each ends with the
 * target's text the file's and the target answering.
 */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *target(void)
{
	static char *p;
	if (!p)
		CHECK((p = strdup(djp_test_path("trace_progs/sigblock_target"))) != NULL);
	return p;
}

static struct tproc *start_how(int threads, const char *opt)
{
	char n[16];
	struct tproc *t;
	snprintf(n, sizeof(n), "%d", threads);
	t = tt_spawn((char *const[]){ (char *)target(), "--threads", n, (char *)opt, NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	return t;
}

static struct tproc *start(int threads)
{
	return start_how(threads, NULL);
}

/* djp trace -x PID [opt] PATTERN */
static struct tproc *trace_x(pid_t pid, const char *opt, const char *pattern)
{
	char spid[16];
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	if (opt)
		return tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, (char *)opt, (char *)pattern,
						 NULL },
				false, -1);
	return tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, (char *)pattern, NULL }, false, -1);
}

/* Stop the trace: it must exit 0 with `name` counted exactly n times in
 * the process blocks of its summary (children of fork included). */
static void stop_and_count(struct tproc *p, const char *name, unsigned long long n)
{
	unsigned long long total = 0;
	int st, zero = 0;
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %d: %s", st, p->ebuf);
	if (tt_summary_sum(p->ebuf, name, &total, &zero) < 1 || total != n)
		djp_test_fail(__FILE__, __LINE__, "%s: %llu events, expected %llu: %s", name, total, n, p->ebuf);
}

/* The text is the file's again, the target still answers and ends well. */
static void intact(struct tproc *t)
{
	int st;
	CHECK(tt_wait_restored(t->pid, target(), 5000));
	tt_send(t, "run 3\n");
	CHECK(tt_wait_out(t, "ran 3", 10000));
	close(t->in);
	t->in = -1;
	st = tt_finish(t, 10000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "target: status %d", st);
	free(t);
}

/* The one thread blocks every signal and waits in read(); a marker and an
 * instruction probe (a jump over a function's first instructions), each
 * counted exactly as often as the target says it ran. */
static void one_thread(const char *pattern, const char *name)
{
	struct tproc *t = start(0), *p = trace_x(t->pid, NULL, pattern);
	uintptr_t at = strncmp(pattern, "func:", 5) ? tt_site_addr(t->pid, name)
						    : tt_func_addr(t->pid, target(), pattern + 5);
	tt_wait_byte(t->pid, at, 0xe9, 10000); /* a jump */
	if (p->elen)
		djp_test_fail(__FILE__, __LINE__, "djp trace: %s", p->ebuf);
	tt_send(t, "run 1000\n");
	CHECK(tt_wait_out(t, "ran 1000", 10000));
	stop_and_count(p, name, 1000);
	free(p);
	intact(t);
}

TEST_TIMEOUT(trace_x_marker_in_a_process_that_blocks_every_signal, 60)
{
	one_thread("sb_tick", "sb_tick");
}

TEST_TIMEOUT(trace_x_function_in_a_process_that_blocks_every_signal, 60)
{
	one_thread("func:sb_work", "func:sb_work");
}

/* A site that can only be an int3 breakpoint: refused in one line that
 * names it, nothing armed, the target as it was. */
static void int3_refused(const char *opt, const char *pattern, const char *names)
{
	struct tproc *t = start(0), *p = trace_x(t->pid, opt, pattern);
	int st = tt_finish(p, 20000), changed, nsites;
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 0 || tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, names) ||
	    !strstr(p->ebuf, "int3") || !strstr(p->ebuf, "blocks SIGTRAP"))
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %d: %s", st, p->ebuf);
	changed = tt_sites_changed(t->pid, target(), &nsites);
	CHECK_EQ(changed, 0);
	free(p);
	intact(t);
}

TEST_TIMEOUT(trace_x_refuses_an_int3_only_site_where_sigtrap_is_blocked, 60)
{
	int3_refused(NULL, "func:sb_tiny", "sb_tiny");
}

TEST_TIMEOUT(trace_x_int3_refused_where_sigtrap_is_blocked, 60)
{
	int3_refused("--int3", "sb_tick", "sb_tick");
}

/* Two threads call sb_hot without end (never a system call, or with
 * `opt` --stdio, fopen, fclose, malloc and free each turn: a thread may be
 * stopped holding their locks, which the agent must not need then) while
 * the trace arms and disarms, five times over; each time the ticks they
 * make while armed are counted exactly. */
static void hot_rounds(const char *opt)
{
	struct tproc *t = start_how(2, opt);
	for (int round = 0; round < 5; round++) {
		char spid[16];
		struct tproc *p;
		snprintf(spid, sizeof(spid), "%d", (int)t->pid);
		/* (millions of lines: into nothing) */
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "-o", "/dev/null", "sb_*", NULL },
			     false, -1);
		unsigned long long hot = 0, lost = 0;
		CHECK(tt_wait_armed_n(t->pid, target(), 2, 10000) || tt_wait_err(p, "djp", 1));
		if (p->elen)
			djp_test_fail(__FILE__, __LINE__, "round %d: djp trace: %s", round, p->ebuf);
		tt_send(t, "tick 500\n");
		if (!tt_wait_out(t, "ticked 500", 10000))
			djp_test_fail(__FILE__, __LINE__, "round %d: target: %s / djp: %s", round, t->obuf, p->ebuf);
		t->olen = 0; /* the next round waits for its own line */
		t->obuf[0] = 0;
		stop_and_count(p, "sb_tick", 500);
		/* sb_hot floods the rings into /dev/null: what a full ring drops
		 * is counted on its own row (LOST), and sb_tick's count above is
		 * the exact one */
		CHECK(tt_summary_row(p->ebuf, "sb_hot", &hot, &lost) && hot > 0);
		free(p);
		CHECK(tt_wait_restored(t->pid, target(), 5000));
	}
	intact(t);
}

TEST_TIMEOUT(trace_x_arms_and_disarms_hot_threads_that_block_sigtrap, 120)
{
	hot_rounds(NULL);
}

TEST_TIMEOUT(trace_x_arms_threads_stopped_in_malloc_and_stdio, 120)
{
	hot_rounds("--stdio");
}

/* A child of fork inherits the blocked SIGTRAP: it is armed the same way
 * before fork returns in it, and its ticks counted exactly.  Its parent
 * blocks every signal too, or (open) only the handler it forks in does,
 * as PostgreSQL's postmaster starts its workers. */
static void child_blocks(bool open)
{
	struct tproc *t = start_how(0, open ? "--open" : NULL), *p = trace_x(t->pid, NULL, "sb_tick");
	CHECK(tt_wait_armed(t->pid, target(), 10000) || tt_wait_err(p, "djp", 1));
	if (p->elen)
		djp_test_fail(__FILE__, __LINE__, "djp trace: %s", p->ebuf);
	/* the parent's events printed: the tool is past its configuration,
	 * FOLLOW included, and drains */
	tt_send(t, "run 200\n");
	CHECK(tt_wait_out(t, "ran 200", 10000));
	for (int i = 0; i < 1000 && tt_count(p->obuf, " sb_tick ") < 200; i++)
		tt_wait_out(p, "\n\n", 20); /* reads what there is */
	tt_send(t, "fork 300\n");
	CHECK(tt_wait_out(t, "forked 300", 20000));
	for (int i = 0; i < 1000 && tt_count(p->obuf, " sb_tick ") < 500; i++)
		tt_wait_out(p, "\n\n", 20);
	stop_and_count(p, "sb_tick", 500);
	if (p->elen && strstr(p->ebuf, "blocks SIGTRAP"))
		djp_test_fail(__FILE__, __LINE__, "djp trace: %s", p->ebuf);
	free(p);
	intact(t);
}

TEST_TIMEOUT(trace_x_follows_a_child_that_inherits_a_blocked_sigtrap, 60)
{
	child_blocks(false);
}

TEST_TIMEOUT(trace_x_follows_a_child_forked_in_a_handler_that_blocks_sigtrap, 60)
{
	child_blocks(true);
}

/*
 * PostgreSQL 15 with autovacuum_naptime=1: its postmaster blocks every
 * signal but SIGTRAP (the engine's among them) outside its wait, and forks
 * an autovacuum worker every second or so from a handler whose mask is the
 * same.  `djp trace` of every postgresql:* probe for six seconds, the
 * server started without djprobe (-x) or by the tool (-c): it ends (0
 * under -x) with its summary, the postmaster's block and some workers' among it, and no
 * process refused.  Needs root and the postgresql-15 package, which make
 * check installs.
 */
#define PGBIN TT_PGBIN

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void postgres_autovacuum(bool launch)
{
	char dir[64] = "/tmp/djp-pgav-XXXXXX", cmd[8192], server[4096], pidfile[128], spid[32] = "";
	struct tproc *srv = NULL, *p;
	int port = 20000 + (int)(getpid() % 20000), st, procs;
	FILE *f = NULL;

	tt_pg_initdb(dir);
	snprintf(server, sizeof(server),
		 "runuser -u postgres -- " PGBIN "/postgres -D %s -k %s -p %d -c listen_addresses= "
		 "-c autovacuum_naptime=1",
		 dir, dir, port);
	snprintf(pidfile, sizeof(pidfile), "%s/postmaster.pid", dir);
	if (launch) {
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "6", "-o", "/dev/null", "-c",
					      server, "postgresql:*", NULL },
			     false, -1);
	} else {
		srv = tt_spawn((char *const[]){ "/bin/sh", "-c", server, NULL }, false, -1);
		CHECK(tt_wait_err(srv, "ready to accept connections", 30000));
		CHECK((f = fopen(pidfile, "r")) != NULL);
		CHECK(fgets(spid, sizeof(spid), f) != NULL);
		fclose(f);
		spid[strcspn(spid, "\n")] = 0;
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "6", "-o", "/dev/null", "-x", spid,
					      "postgresql:*", NULL },
			     false, -1);
	}
	st = tt_finish(p, 120000);
	procs = tt_count(p->ebuf, "djp trace: process ");
	/* (-c: the tool's status is the server's, which it stopped) */
	if (!WIFEXITED(st) || (!launch && WEXITSTATUS(st) != 0) || !strstr(p->ebuf, "stopped after 6 s") || procs < 2 ||
	    strstr(p->ebuf, "SIGTRAP") || strstr(p->ebuf, "cannot arm"))
		djp_test_fail(__FILE__, __LINE__, "%s: status %d, %d processes: %.3000s", launch ? "-c" : "-x", st, procs,
			      p->ebuf);
	printf("# %s: %d processes traced\n", launch ? "-c" : "-x", procs);
	if (!launch) { /* not ours: unharmed, and stopped here */
		CHECK_EQ(kill((pid_t)atoi(spid), 0), 0);
		CHECK(tt_wait_restored((pid_t)atoi(spid), PGBIN "/postgres", 5000));
		kill((pid_t)atoi(spid), SIGINT);
		st = tt_finish(srv, 60000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		free(srv);
	}
	free(p);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	sh(cmd);
}

TEST_TIMEOUT(postgres_x_autovacuum_every_second, 300)
{
	postgres_autovacuum(false);
}

TEST_TIMEOUT(postgres_c_autovacuum_every_second, 300)
{
	postgres_autovacuum(true);
}

/* A child that cannot be armed (func:sb_tiny, an int3 breakpoint only, in
 * a child that blocks SIGTRAP, its parent not) is reported in one line
 * that names the site and left untraced; the trace goes on, the parent's
 * calls counted exactly, and ends 0 with its summary. */
TEST_TIMEOUT(trace_x_skips_a_child_that_cannot_be_armed, 60)
{
	struct tproc *t = start_how(0, "--open"), *p = trace_x(t->pid, NULL, "func:sb_tiny");
	tt_wait_byte(t->pid, tt_func_addr(t->pid, target(), "sb_tiny"), 0xcc, 10000);
	tt_send(t, "fork 50\n");
	CHECK(tt_wait_out(t, "forked 50", 20000));
	CHECK(tt_wait_err(p, "can only be an int3 breakpoint", 10000));
	tt_send(t, "run 100\n");
	CHECK(tt_wait_out(t, "ran 100", 10000));
	for (int i = 0; i < 1000 && tt_count(p->obuf, " func:sb_tiny") < 100; i++)
		tt_wait_out(p, "\n\n", 20);
	stop_and_count(p, "func:sb_tiny", 100);
	if (tt_count(p->ebuf, "djp: process ") != 1 || !strstr(p->ebuf, "the site sb_tiny at "))
		djp_test_fail(__FILE__, __LINE__, "djp trace: %s", p->ebuf);
	free(p);
	intact(t);
}

/* The tool killed while a process whose threads block SIGTRAP is armed:
 * nobody is left to stop its threads, so the agent does not disarm (an
 * int3 on the way would kill them) and retries; the jumps stay whole and
 * the program runs on through them, then exits well. */
TEST_TIMEOUT(trace_x_killed_tool_leaves_whole_jumps_where_sigtrap_is_blocked, 60)
{
	struct tproc *t = start(2), *p = trace_x(t->pid, NULL, "sb_*");
	uintptr_t at = tt_site_addr(t->pid, "sb_tick");
	int st;
	tt_wait_byte(t->pid, at, 0xe9, 10000);
	kill(p->pid, SIGKILL);
	st = tt_finish(p, 10000);
	CHECK(WIFSIGNALED(st));
	free(p);
	tt_send(t, "tick 1000\n");
	CHECK(tt_wait_out(t, "ticked 1000", 10000));
	tt_send(t, "run 1000\n");
	CHECK(tt_wait_out(t, "ran 1000", 10000));
	CHECK_EQ(tt_byte_at(t->pid, at), 0xe9);
	close(t->in);
	t->in = -1;
	st = tt_finish(t, 10000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "target: status %d", st);
	free(t);
}

/* A script the same way: `djp -x PID -e` counts sb_tick in the process
 * whose one thread blocks every signal, exactly. */
TEST_TIMEOUT(script_x_counts_in_a_process_that_blocks_every_signal, 60)
{
	struct tproc *t = start(0), *p;
	char spid[16];
	int st;

	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", spid, "-e",
				      "global c\n"
				      "probe process.mark(\"sb_tick\") { c++ }\n"
				      "probe end { printf(\"count %d\\n\", c) }",
				      NULL },
		     false, -1);
	tt_wait_byte(t->pid, tt_site_addr(t->pid, "sb_tick"), 0xe9, 10000);
	tt_send(t, "run 1000\n");
	CHECK(tt_wait_out(t, "ran 1000", 10000));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(p->obuf, "count 1000\n"))
		djp_test_fail(__FILE__, __LINE__, "djp: status %d: %s / %s", st, p->obuf, p->ebuf);
	free(p);
	intact(t);
}

/* A function probe's jump covers sb_ranged's three pauses,
 * which two threads that block SIGTRAP run through without end: each time
 * it is armed or taken away, the threads are stopped outside them (asked
 * again when one is inside), never resumed into the middle of the jump.
 * Ten rounds; the threads keep ticking, the trace ends 0 with hits. */
TEST_TIMEOUT(trace_x_function_jump_keeps_out_of_threads_inside_it, 120)
{
	struct tproc *t = start_how(2, "--ranged");
	uintptr_t at = tt_func_addr(t->pid, target(), "sb_ranged");
	for (int round = 0; round < 10; round++) {
		char spid[16];
		struct tproc *p;
		unsigned long long ev = 0, lost = 0;
		int st;
		snprintf(spid, sizeof(spid), "%d", (int)t->pid);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "-o", "/dev/null", "func:sb_ranged",
					      NULL },
			     false, -1);
		for (int i = 0; i < 2000 && tt_byte_at(t->pid, at) != 0xe9; i++)
			if (tt_wait_err(p, "\n", 5)) /* djp said something: it failed */
				break;
		if (tt_byte_at(t->pid, at) != 0xe9) {
			st = tt_finish(p, 10000);
			djp_test_fail(__FILE__, __LINE__, "round %d: not armed; djp trace: status %d: %s", round, st,
				      p->ebuf);
		}
		tt_send(t, "tick 100\n");
		if (!tt_wait_out(t, "ticked 100", 10000)) {
			st = tt_finish(t, 1000);
			djp_test_fail(__FILE__, __LINE__, "round %d: target status %d: %s / djp: %s", round, st, t->obuf,
				      p->ebuf);
		}
		t->olen = 0;
		t->obuf[0] = 0;
		kill(p->pid, SIGINT);
		st = tt_finish(p, 20000);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !tt_summary_row(p->ebuf, "func:sb_ranged", &ev, &lost) ||
		    ev == 0)
			djp_test_fail(__FILE__, __LINE__, "round %d: djp trace: status %d: %s", round, st, p->ebuf);
		free(p);
		tt_wait_byte(t->pid, at, 0xf3, 5000);
	}
	intact(t);
}

/*
 * A library loaded after the trace began, by the program's thread that
 * blocks every signal: the agent arms its marker there, in the dlopen
 * hook, and no request of the tool's asks it to, so it asks the tool of
 * its own accord to stop the other threads (two spinning ones).  Its
 * every hit is counted, and no arming error said.  Under -c the mask is
 * set by the raw system call, past the preloaded library's interposers.
 */
#define LATE_PATTERN "[st][bp]_[tp]*" /* sb_tick and tp_plugin, not sb_hot */

static void late_library(bool launch, const char *lib, unsigned long long fired)
{
	char line[4200], cmd[4200], spid[16];
	struct tproc *t = NULL, *p;
	int st;

	if (launch) {
		snprintf(cmd, sizeof(cmd), "%s --threads 2 --raw", target());
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, LATE_PATTERN, NULL }, false, -1);
		CHECK(tt_wait_out(p, "ready ", 10000));
	} else {
		t = start(2);
		snprintf(spid, sizeof(spid), "%d", (int)t->pid);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, LATE_PATTERN, NULL }, false, -1);
		tt_wait_byte(t->pid, tt_site_addr(t->pid, "sb_tick"), 0xe9, 10000);
	}
	if (p->elen)
		djp_test_fail(__FILE__, __LINE__, "djp trace: %s", p->ebuf);
	snprintf(line, sizeof(line), "dlopen %s 300\n", lib);
	tt_send(launch ? p : t, line);
	CHECK(tt_wait_out(launch ? p : t, "dlopened 300", 10000));
	tt_send(launch ? p : t, "run 100\n");
	CHECK(tt_wait_out(launch ? p : t, "ran 100", 10000));
	if (launch) {
		close(p->in); /* the command exits, and the trace with it */
		p->in = -1;
		st = tt_finish(p, 20000);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			djp_test_fail(__FILE__, __LINE__, "djp trace: status %d: %s", st, p->ebuf);
	} else {
		for (int i = 0; i < 1000 && tt_count(p->obuf, " sb_tick ") < 100; i++)
			tt_wait_out(p, "\n\n", 20); /* reads what there is */
		stop_and_count(p, "sb_tick", 100);
	}
	{
		unsigned long long n = 0, tick = 0;
		int zero = 0;
		tt_summary_sum(p->ebuf, "tp_plugin", &n, &zero);
		tt_summary_sum(p->ebuf, "sb_tick", &tick, &zero);
		if (n != fired || tick != 100 || strstr(p->ebuf, "arming error"))
			djp_test_fail(__FILE__, __LINE__, "%s: tp_plugin %llu of %llu, sb_tick %llu of 100: %s",
				      launch ? "-c" : "-x", n, fired, tick, p->ebuf);
	}
	free(p);
	if (t)
		intact(t);
}

TEST_TIMEOUT(trace_x_library_loaded_later_where_sigtrap_is_blocked, 60)
{
	late_library(false, tt_plugin(), 300);
}

TEST_TIMEOUT(trace_c_library_loaded_later_where_sigtrap_is_blocked, 60)
{
	late_library(true, tt_plugin(), 300);
}

/* The library loaded by the constructor of another, inside its dlopen:
 * the thread that asks the tool holds the loader's lock, which the tool
 * needs nothing of; the 7 hits made there are counted too.  (Under -c,
 * where the preloaded interposer sees the inner dlopen.) */
TEST_TIMEOUT(trace_c_library_loaded_inside_a_dlopen_where_sigtrap_is_blocked, 60)
{
	char *lib = strdup(djp_test_path("trace_progs/libnested_plugin.so")); /* (its buffer is reused) */
	CHECK(lib != NULL);
	late_library(true, lib, 307);
	free(lib);
}

/* Whether a thread of pid waits in poll(2) on a single descriptor: an
 * ask for FREEZE waiting for its answer (the agent thread's own loop
 * polls its listening socket and every session's). */
static bool asking(pid_t pid)
{
	char path[64];
	struct dirent *de;
	bool found = false;
	DIR *d;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return false;
	while (!found && (de = readdir(d))) {
		char sys[96], line[256] = "";
		unsigned long nfds = 0;
		long nr = -1;
		FILE *f;
		if (de->d_name[0] == '.')
			continue;
		snprintf(sys, sizeof(sys), "%s/%d/syscall", path, atoi(de->d_name));
		if (!(f = fopen(sys, "r")))
			continue;
		if (fgets(line, sizeof(line), f))
			found = sscanf(line, "%ld %*x %lx", &nr, &nfds) == 2 && nr == 7 /* poll */ && nfds == 1;
		fclose(f);
	}
	closedir(d);
	return found;
}

/*
 * The tool killed while the agent waits for its answer to a FREEZE asked
 * of its own accord (the tool stopped first, so that the ask waits, on
 * the program's thread in dlopen or on the agent thread that noticed the
 * library first): the ask ends at once, the library's site is refused
 * and left as the file has it, and the program goes on and exits 0.
 */
TEST_TIMEOUT(trace_x_tool_killed_while_asked_to_freeze_leaves_the_library_alone, 60)
{
	struct tproc *t = start(2), *p = trace_x(t->pid, NULL, LATE_PATTERN);
	char line[4200];
	uintptr_t at;
	int st, polls = 0;

	tt_wait_byte(t->pid, tt_site_addr(t->pid, "sb_tick"), 0xe9, 10000);
	CHECK_EQ(kill(p->pid, SIGSTOP), 0);
	snprintf(line, sizeof(line), "dlopen %s 50\n", tt_plugin());
	tt_send(t, line);
	for (int i = 0; i < 5000 && !(polls = asking(t->pid)); i++)
		usleep(1000);
	kill(p->pid, SIGKILL);
	st = tt_finish(p, 10000);
	CHECK(WIFSIGNALED(st));
	free(p);
	if (!polls)
		djp_test_fail(__FILE__, __LINE__, "no thread of the program waited for the tool: %s", t->obuf);
	CHECK(tt_wait_out(t, "dlopened 50", 10000));
	at = tt_site_addr(t->pid, "tp_plugin");
	CHECK(at != 0);
	CHECK_EQ(tt_byte_at(t->pid, at), 0x66); /* the file's nop */
	tt_send(t, "run 1000\n");
	CHECK(tt_wait_out(t, "ran 1000", 10000));
	tt_end(t);
}
