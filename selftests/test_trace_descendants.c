/*
 * -x PID reaches the processes PID forked before the attach, and theirs:
 * a server's workers (kids_target: forked, exec'd, a grandchild) are each
 * attached, armed and counted exactly; --no-children leaves them alone; a
 * worker that may not be traced is said once and the others traced; and
 * PostgreSQL's checkpointer, which the postmaster forked at its start,
 * records its checkpoint under `djp trace -x POSTMASTER`.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define NOBODY 65534

struct server {
	struct tproc *t;
	pid_t pid[6]; /* main, then its workers in their order */
	int n;
};

static void server_start_as(struct server *s, bool undumpable, int uid, bool preload)
{
	const char *p;
	char *end;
	s->t = tt_spawn((char *const[]){ (char *)djp_test_path("trace_progs/kids_target"),
					 undumpable ? "--undumpable" : NULL, NULL },
			preload, uid);
	CHECK(tt_wait_out(s->t, "\n", 10000));
	CHECK((p = strstr(s->t->obuf, "ready ")) != NULL);
	p += 6;
	for (s->n = 0; s->n < 6; s->n++) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		s->pid[s->n] = (pid_t)v;
		p = end;
	}
	CHECK_EQ(s->n, undumpable ? 6 : 5);
	s->t->olen = 0;
	s->t->obuf[0] = 0;
}

static void server_start(struct server *s, bool undumpable, int uid)
{
	server_start_as(s, undumpable, uid, false);
}

/* Every process of the server ticks n times; "ran n". */
static void server_run(struct server *s, long n)
{
	char line[32], want[32];
	snprintf(line, sizeof(line), "run %ld\n", n);
	snprintf(want, sizeof(want), "ran %ld", n);
	tt_send(s->t, line);
	CHECK(tt_wait_out(s->t, want, 10000));
}

static void server_end(struct server *s)
{
	tt_end(s->t);
}

static struct tproc *trace_x(pid_t pid, const char *opt, int uid)
{
	char spid[16];
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	return tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "kt_tick", (char *)opt, NULL }, false,
			uid);
}

/* SIGINT once `n` kt_tick lines are out: exit 0, n counted over `blocks`
 * process blocks. */
static void stop_and_count(struct tproc *p, unsigned long long n, int blocks)
{
	unsigned long long total = 0;
	int zero = 0, got, st;
	for (int i = 0; i < 1000 && (unsigned long long)tt_count(p->obuf, " kt_tick ") < n; i++)
		tt_wait_out(p, "\n\n", 20); /* reads what there is */
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %d: %s", st, p->ebuf);
	got = tt_summary_sum(p->ebuf, "kt_tick", &total, &zero);
	if (total != n || got != blocks)
		djp_test_fail(__FILE__, __LINE__, "kt_tick: %llu events in %d processes, expected %llu in %d: %s", total,
			      got, n, blocks, p->ebuf);
}

/* Wait for kt_tick to be armed (a jump) in each process of s but `skip`. */
static void wait_armed(struct server *s, int skip)
{
	for (int i = 0; i < s->n; i++)
		if (i != skip)
			tt_wait_byte(s->pid[i], tt_site_addr(s->pid[i], "kt_tick"), 0xe9, 20000);
}

TEST_TIMEOUT(trace_x_reaches_the_workers_forked_before_the_attach, 60)
{
	struct server s;
	struct tproc *p;

	server_start(&s, false, -1);
	p = trace_x(s.pid[0], NULL, -1);
	wait_armed(&s, -1);
	server_run(&s, 100);
	stop_and_count(p, 500, 5);
	if (p->elen && strstr(p->ebuf, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "djp trace: %s", p->ebuf);
	free(p);
	for (int i = 0; i < s.n; i++) /* disarmed in every one */
		CHECK(tt_wait_restored(s.pid[i], djp_test_path("trace_progs/kids_target"), 5000));
	server_end(&s);
}

/* A server that had the agent when it forked its workers, with nobody
 * tracing it (preloaded here; a tool that attached once and left does the
 * same): worker 1 has the library and no agent thread, which does not
 * survive fork.  -x of that worker starts its agent (the library's
 * djp_agent_start, not a second load) and counts its ticks exactly; it
 * used to be refused ("loaded in it but its agent is not running"). */
TEST_TIMEOUT(trace_x_starts_the_agent_of_a_worker_forked_without_one, 60)
{
	struct server s;
	struct tproc *p;
	bool lib = false;
	char path[64], line[4200];
	FILE *f;

	server_start_as(&s, false, -1, true);
	/* the premise: the library is in worker 1 */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s.pid[1]);
	CHECK((f = fopen(path, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		lib |= strstr(line, "/libdjprobe.so") != NULL;
	fclose(f);
	CHECK(lib);
	p = trace_x(s.pid[1], "--no-children", -1);
	tt_wait_byte(s.pid[1], tt_site_addr(s.pid[1], "kt_tick"), 0xe9, 20000);
	server_run(&s, 100);
	stop_and_count(p, 100, 1);
	if (p->elen && strstr(p->ebuf, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "djp trace: %s", p->ebuf);
	free(p);
	CHECK(tt_wait_restored(s.pid[1], djp_test_path("trace_progs/kids_target"), 5000));
	/* and again, its agent found this time */
	p = trace_x(s.pid[1], "--no-children", -1);
	tt_wait_byte(s.pid[1], tt_site_addr(s.pid[1], "kt_tick"), 0xe9, 20000);
	server_run(&s, 50);
	stop_and_count(p, 50, 1);
	free(p);
	server_end(&s);
}

TEST_TIMEOUT(trace_x_no_children_traces_the_process_alone, 60)
{
	struct server s;
	struct tproc *p;

	server_start(&s, false, -1);
	p = trace_x(s.pid[0], "--no-children", -1);
	tt_wait_byte(s.pid[0], tt_site_addr(s.pid[0], "kt_tick"), 0xe9, 10000);
	server_run(&s, 100);
	for (int i = 1; i < s.n; i++) /* nothing armed in the workers */
		CHECK_EQ(tt_byte_at(s.pid[i], tt_site_addr(s.pid[i], "kt_tick")), 0x66);
	stop_and_count(p, 100, 1);
	free(p);
	server_end(&s);
}

/* As nobody, with a worker that made itself non-dumpable: that one is
 * said in one line and left out, the four others and main counted. */
TEST_TIMEOUT(trace_x_skips_a_worker_it_may_not_trace, 60)
{
	struct server s;
	struct tproc *p;
	char want[64];

	if (geteuid() != 0)
		djp_test_fail(__FILE__, __LINE__, "needs root, to run the server and the tool as nobody");
	server_start(&s, true, NOBODY);
	p = trace_x(s.pid[0], NULL, NOBODY);
	wait_armed(&s, 5);
	server_run(&s, 100);
	stop_and_count(p, 500, 5);
	snprintf(want, sizeof(want), "djp: process %d: not allowed to trace it", (int)s.pid[5]);
	if (tt_count(p->ebuf, "djp: ") != 1 || !strstr(p->ebuf, want))
		djp_test_fail(__FILE__, __LINE__, "djp trace, expected one line '%s...': %s", want, p->ebuf);
	CHECK_EQ(tt_byte_at(s.pid[5], tt_site_addr(s.pid[5], "kt_tick")), 0x66);
	free(p);
	server_end(&s);
}

/* pid has exited (a zombie, or reaped). */
static bool gone(pid_t pid)
{
	char path[64], buf[512], *c;
	bool z = true;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return true;
	if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')))
		z = c[2] == 'Z' || c[2] == 'X';
	fclose(f);
	return z;
}

/* The tool a child of PID itself (a shell given as -x PID runs it): not
 * taken for one of the descendants, the others traced as ever. */
TEST_TIMEOUT(trace_x_leaves_itself_out_of_the_descendants, 60)
{
	struct server s;
	char line[4200];
	const char *r;
	unsigned long long total = 0;
	int zero = 0, got;
	pid_t tool;

	server_start(&s, false, -1);
	snprintf(line, sizeof(line), "spawn exec %s trace -x %d -o /dev/null kt_tick\n", tt_djp(), (int)s.pid[0]);
	tt_send(s.t, line);
	CHECK(tt_wait_out(s.t, "spawned ", 10000));
	CHECK((r = strstr(s.t->obuf, "spawned ")) != NULL);
	CHECK((tool = (pid_t)atoi(r + 8)) > 0);
	wait_armed(&s, -1);
	server_run(&s, 100);
	kill(tool, SIGINT);
	/* its summary, on main's stderr, once it has exited (main's child,
	 * a zombie until main ends) */
	for (int i = 0; i < 2000 && !gone(tool); i++)
		tt_wait_err(s.t, "\n\n\n", 10); /* reads what there is */
	CHECK(gone(tool));
	tt_read_now(s.t);
	got = tt_summary_sum(s.t->ebuf, "kt_tick", &total, &zero);
	if (got != 5 || total != 500 || strstr(s.t->ebuf, "djp: "))
		djp_test_fail(__FILE__, __LINE__, "kt_tick: %llu events in %d processes, expected 500 in 5: %s", total,
			      got, s.t->ebuf);
	server_end(&s);
}

/* The same from a script: `djp -x PID -e` counts every process's ticks. */
TEST_TIMEOUT(script_x_reaches_the_workers_forked_before_the_attach, 60)
{
	struct server s;
	struct tproc *p;
	char spid[16];
	int st;

	server_start(&s, false, -1);
	snprintf(spid, sizeof(spid), "%d", (int)s.pid[0]);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", spid, "-e",
				      "global c, n\n"
				      "probe process.mark(\"kt_tick\") { c[pid()]++; n++ }\n"
				      "probe end { m = 0; foreach (k in c) m++; printf(\"processes %d ticks %d\\n\", m, n) }",
				      NULL },
		     false, -1);
	wait_armed(&s, -1);
	server_run(&s, 100);
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(p->obuf, "processes 5 ticks 500\n"))
		djp_test_fail(__FILE__, __LINE__, "djp: status %d: %s / %s", st, p->obuf, p->ebuf);
	free(p);
	server_end(&s);
}

/*
 * PostgreSQL 15: the checkpointer is forked by the postmaster at its start.
 * `djp trace -x POSTMASTER postgresql:checkpoint__start` arms it there
 * too, and a CHECKPOINT (psql) is recorded under the checkpointer's pid.
 * Needs root and the postgresql-15 package, which make check installs.
 */
#define PGBIN TT_PGBIN

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The child of `parent` whose command line starts with `title`, or 0. */
static pid_t child_titled(pid_t parent, const char *title)
{
	char cmd[256], out[64] = "";
	FILE *f;
	snprintf(cmd, sizeof(cmd), "for p in $(cat /proc/%d/task/*/children); do "
				   "tr '\\0' ' ' </proc/$p/cmdline | grep -q '^%s' && echo $p; done",
		 (int)parent, title);
	CHECK((f = popen(cmd, "r")) != NULL);
	if (!fgets(out, sizeof(out), f))
		out[0] = 0;
	pclose(f);
	return (pid_t)atoi(out);
}

TEST_TIMEOUT(postgres_x_reaches_the_checkpointer, 300)
{
	char dir[64] = "/tmp/djp-pgkids-XXXXXX", cmd[8192], server[4096], pidfile[128], spid[32] = "", want[64];
	struct tproc *srv, *p;
	int port = 20000 + (int)((getpid() * 7919) % 20000), st;
	pid_t ckpt;
	uintptr_t at;
	int nop;
	FILE *f;

	tt_pg_initdb(dir);
	snprintf(server, sizeof(server),
		 "exec runuser -u postgres -- " PGBIN "/postgres -D %s -k %s -p %d -c listen_addresses=", dir, dir,
		 port);
	snprintf(pidfile, sizeof(pidfile), "%s/postmaster.pid", dir);
	srv = tt_spawn((char *const[]){ "/bin/sh", "-c", server, NULL }, false, -1);
	CHECK(tt_wait_err(srv, "ready to accept connections", 30000));
	CHECK((f = fopen(pidfile, "r")) != NULL);
	CHECK(fgets(spid, sizeof(spid), f) != NULL);
	fclose(f);
	spid[strcspn(spid, "\n")] = 0;
	CHECK((ckpt = child_titled((pid_t)atoi(spid), "postgres: checkpointer")) > 0);
	at = tt_site_addr(ckpt, "postgresql:checkpoint__start");
	nop = tt_byte_at(ckpt, at);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "postgresql:checkpoint__start", NULL },
		     false, -1);
	/* armed in the checkpointer: its site a jump or an int3 */
	for (int i = 0; i < 15000 && tt_byte_at(ckpt, at) == nop; i++)
		usleep(2000);
	if (tt_byte_at(ckpt, at) == nop)
		djp_test_fail(__FILE__, __LINE__, "the checkpointer %d was not armed: %s", (int)ckpt, p->ebuf);
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/psql -h %s -p %d -d postgres -qc CHECKPOINT", dir,
		 port);
	CHECK_EQ(sh(cmd), 0);
	snprintf(want, sizeof(want), " %d %d ", (int)ckpt, (int)ckpt); /* (its only thread) */
	if (!tt_wait_out(p, want, 20000))
		djp_test_fail(__FILE__, __LINE__, "no checkpoint__start of the checkpointer %d: %s / %s", (int)ckpt,
			      p->obuf, p->ebuf);
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %d: %s", st, p->ebuf);
	free(p);
	CHECK(tt_wait_restored(ckpt, PGBIN "/postgres", 5000));
	kill((pid_t)atoi(spid), SIGINT);
	st = tt_finish(srv, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(srv);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	sh(cmd);
}
