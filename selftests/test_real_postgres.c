/*
 * PostgreSQL 15, a pre-fork server nobody here wrote, with SDT probes only.
 * `djp trace ... postgresql:transaction__start` while `pgbench -c 4 -t 500`
 * runs, two ways:
 *  - `-c 'runuser -u postgres -- postgres -D DIR ...'`: runuser is a
 *    wrapper without probes (the postgres it execs dials in), the
 *    postmaster forks its backends (followed through fork);
 *  - `-x POSTMASTER`: the server started without djprobe, the agent
 *    injected, and the backends pgbench's connections fork after that
 *    followed.
 * Every backend's transactions are recorded, process by process exactly
 * as bpftrace sees them end over the same run: it counts
 * transaction__commit and transaction__abort per pid, of the server's own
 * processes (the probes are on the file, which other servers on the
 * machine run too); it cannot share the start probe: the kernel's uprobe
 * and our int3 would claim the same byte.  With autovacuum off every
 * transaction that starts ends in one of them before the server is idle.
 * Four of those processes are pgbench's clients, 501 transactions each
 * (its 500 and their start's).  Needs root (to start the server as the
 * postgres user), postgresql-15 and bpftrace, which make check installs:
 * without them the tests fail.
 */
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

#define PGBIN "/usr/lib/postgresql/15/bin"

/* Run a shell command; its exit status, its output in out. */
static int sh(const char *cmd, char *out, size_t outsz)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (!p)
		return -1;
	while (out && n + 1 < outsz && fgets(out + n, (int)(outsz - n), p))
		n += strlen(out + n);
	if (out)
		out[n] = 0;
	return pclose(p);
}

struct cluster {
	char dir[64];
	char server[4096]; /* the command that runs the server */
	int port;
};

static void cluster_init(struct cluster *c)
{
	struct passwd *pw = getpwnam("postgres");
	char cmd[8192];

	if (geteuid() != 0)
		SKIP("needs root, to start the server as the postgres user");
	if (access(PGBIN "/postgres", X_OK) || access(PGBIN "/pgbench", X_OK) || !pw)
		djp_test_fail(__FILE__, __LINE__,
			      "no " PGBIN "/postgres, pgbench or user postgres: make check installs postgresql-15");
	snprintf(c->dir, sizeof(c->dir), "/tmp/djp-pg-XXXXXX");
	CHECK(mkdtemp(c->dir) != NULL);
	CHECK(chown(c->dir, pw->pw_uid, pw->pw_gid) == 0);
	c->port = 20000 + (int)(getpid() % 20000);
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/initdb -D %s >/dev/null 2>&1", c->dir);
	CHECK_EQ(sh(cmd, NULL, 0), 0);
	snprintf(c->server, sizeof(c->server),
		 "runuser -u postgres -- " PGBIN "/postgres -D %s -k %s -p %d -c listen_addresses= -c autovacuum=off",
		 c->dir, c->dir, c->port);
}

static void cluster_remove(struct cluster *c)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", c->dir);
	sh(cmd, NULL, 0);
}

/* pgbench -i, retried until the server takes connections. */
static void pgbench_init(const struct cluster *c)
{
	char cmd[8192];
	int ok = 0;
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/pgbench -h %s -p %d -i postgres >/dev/null 2>&1",
		 c->dir, c->port);
	for (int i = 0; i < 100 && !ok; i++) {
		ok = sh(cmd, NULL, 0) == 0;
		if (!ok)
			usleep(200000);
	}
	CHECK(ok);
}

/* pgbench -c 4 -t 500: the transactions it reports. */
static long pgbench_run(const struct cluster *c)
{
	char cmd[8192], out[8192];
	const char *s;
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/pgbench -h %s -p %d -c 4 -t 500 postgres 2>&1",
		 c->dir, c->port);
	if (sh(cmd, out, sizeof(out)) || !(s = strstr(out, "number of transactions actually processed: ")))
		djp_test_fail(__FILE__, __LINE__, "pgbench failed: %.3000s", out);
	return atol(s + strlen("number of transactions actually processed: "));
}

/* Transactions per process: pid and count, as one side saw them. */
struct counts {
	int n;
	struct {
		int pid;
		long long n;
	} v[256];
};

static long long *count_of(struct counts *c, int pid)
{
	for (int i = 0; i < c->n; i++)
		if (c->v[i].pid == pid)
			return &c->v[i].n;
	CHECK(c->n < (int)(sizeof(c->v) / sizeof(c->v[0])));
	c->v[c->n].pid = pid;
	c->v[c->n].n = 0;
	return &c->v[c->n++].n;
}

/* bpftrace counting, per process, the transactions that end.  make check
 * installs it: missing, or not attached within 30 s, is a failure. */
static struct tproc *bpftrace_start(void)
{
	struct tproc *b;
	if (access("/usr/bin/bpftrace", X_OK))
		djp_test_fail(__FILE__, __LINE__,
			      "no /usr/bin/bpftrace for the second count: make check installs bpftrace");
	b = tt_spawn((char *const[]){ "/usr/bin/bpftrace", "-e",
				      "usdt:" PGBIN "/postgres:postgresql:transaction__commit,"
				      "usdt:" PGBIN "/postgres:postgresql:transaction__abort"
				      " { @ended[pid, curtask->real_parent->tgid] = count(); }"
				      " BEGIN { printf(\"attached\\n\"); }",
				      NULL },
		     false, -1);
	if (!tt_wait_out(b, "attached\n", 30000)) { /* BEGIN runs once the probes are in */
		tt_kill(b);
		djp_test_fail(__FILE__, __LINE__, "bpftrace did not attach to postgres's probes in 30 s: %.500s",
			      b->ebuf);
	}
	return b;
}

/* Stop bpftrace: its "@ended[PID, PPID]: N" lines, of the postmaster and
 * its children only (the probes are on the file: other servers of the
 * machine fire them too).  The counts are final: a backend fires
 * transaction__commit before it answers the COMMIT, and pgbench has had
 * every answer. */
static void bpftrace_counts(struct tproc *b, int postmaster, struct counts *c)
{
	const char *s;
	int st;
	kill(b->pid, SIGINT);
	/* bpftrace takes its uprobes out before it prints: seconds on a
	 * loaded machine */
	st = tt_finish(b, 90000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !strstr(b->obuf, "@ended["))
		djp_test_fail(__FILE__, __LINE__, "bpftrace: status %#x, no count: %.300s; its stderr: %.500s", st,
			      b->obuf, b->ebuf);
	for (s = b->obuf; (s = strstr(s, "@ended[")); s++) {
		int pid, ppid;
		long long n;
		CHECK_EQ(sscanf(s, "@ended[%d, %d]: %lld", &pid, &ppid, &n), 3);
		if (pid == postmaster || ppid == postmaster)
			*count_of(c, pid) += n;
	}
}

/* The server's postmaster, from its pid file. */
static int postmaster_of(const struct cluster *c)
{
	char path[128], line[32] = "";
	FILE *f;
	snprintf(path, sizeof(path), "%s/postmaster.pid", c->dir);
	CHECK((f = fopen(path, "r")) != NULL);
	CHECK(fgets(line, sizeof(line), f) != NULL);
	fclose(f);
	CHECK(atoi(line) > 0);
	return atoi(line);
}

/* The transaction__start lines djp trace printed, per process. */
static void printed_counts(const char *out, struct counts *c)
{
	c->n = 0;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char name[64];
		int pid;
		if (sscanf(l, "%*s %d %*u %63s", &pid, name) == 2 && !strcmp(name, "postgresql:transaction__start"))
			(*count_of(c, pid))++;
	}
}

static bool same_counts(struct counts *a, struct counts *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (*count_of(b, a->v[i].pid) != a->v[i].n)
			return false;
	return true;
}

static void say_counts(const char *who, struct counts *c)
{
	printf("# %s:", who);
	for (int i = 0; i < c->n; i++)
		printf(" %d:%lld", c->v[i].pid, c->v[i].n);
	printf("\n");
}

/* Four processes are pgbench's clients: 501 transactions each, exactly,
 * the `-t 500` asked and the one every backend runs as it starts (it
 * reads the catalogues in a transaction); the rest (pgbench -i, its
 * vacuum) are other processes, with other counts. */
static void check_clients(struct counts *c, const char *how)
{
	int clients = 0;
	for (int i = 0; i < c->n; i++)
		clients += c->v[i].n == 501;
	if (clients != 4) {
		say_counts(how, c);
		djp_test_fail(__FILE__, __LINE__, "%s: %d processes with pgbench's 500 transactions and 1, not 4", how,
			      clients);
	}
}

/* The server idle (autovacuum off: no transaction starts on its own):
 * bpftrace stopped, djp trace's lines awaited until they match bpftrace's
 * counts process by process, the trace stopped, and its summary checked
 * process by process too: a transaction counted twice, or in the wrong
 * backend, is a difference. */
static void check_counts(struct tproc *p, struct tproc *bpf, int postmaster, const char *how)
{
	struct counts ended = { 0 }, printed = { 0 }, summed = { 0 };
	long long end;
	const char *b;
	int st;

	bpftrace_counts(bpf, postmaster, &ended);
	for (end = 0; end < 3000; end++) { /* 30 s for djp trace to print them */
		tt_read_now(p);
		printed_counts(p->obuf, &printed);
		if (same_counts(&ended, &printed))
			break;
		usleep(10000);
	}
	kill(p->pid, SIGINT);
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st));
	printed_counts(p->obuf, &printed);
	for (b = p->ebuf; (b = strstr(b, "djp trace: process ")); b++) {
		unsigned long long ev, lost;
		const char *next = strstr(b + 1, "djp trace: process ");
		const char *row = strstr(b, "  postgresql:transaction__start ");
		int pid = atoi(b + strlen("djp trace: process "));
		if (!row || (next && row > next))
			continue;
		CHECK(tt_summary_row(row, "postgresql:transaction__start", &ev, &lost));
		if (lost)
			djp_test_fail(__FILE__, __LINE__, "%s: process %d lost %llu events", how, pid, lost);
		if (ev)
			*count_of(&summed, pid) += (long long)ev;
	}
	say_counts("bpftrace ended", &ended);
	if (!same_counts(&ended, &printed) || !same_counts(&printed, &ended)) {
		say_counts("djp printed", &printed);
		djp_test_fail(__FILE__, __LINE__, "%s: djp's transaction__start per process is not bpftrace's end",
			      how);
	}
	if (!same_counts(&ended, &summed) || !same_counts(&summed, &ended)) {
		say_counts("djp summary", &summed);
		djp_test_fail(__FILE__, __LINE__, "%s: djp's summary per process is not bpftrace's: %.3000s", how,
			      p->ebuf);
	}
	check_clients(&ended, how);
}

TEST_TIMEOUT(postgres_pgbench_every_backend_traced, 300)
{
	struct cluster c;
	struct tproc *p, *bpf;
	long txns;

	cluster_init(&c);
	bpf = bpftrace_start(); /* from the server's first transaction on, as djp */
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", c.server, "postgresql:transaction__start", NULL },
		     false, -1);
	pgbench_init(&c);
	txns = pgbench_run(&c);
	CHECK_EQ(txns, 2000);
	check_counts(p, bpf, postmaster_of(&c), "-c"); /* the tool stops the server */
	free(bpf);
	free(p);
	cluster_remove(&c);
}

TEST_TIMEOUT(postgres_attach_to_a_running_postmaster, 300)
{
	struct cluster c;
	struct tproc *srv, *p, *bpf;
	char pidfile[128], spid[32] = "";
	long txns;
	FILE *f;
	int st;

	cluster_init(&c);
	srv = tt_spawn((char *const[]){ "/bin/sh", "-c", c.server, NULL }, false, -1);
	pgbench_init(&c); /* the server is up */
	snprintf(pidfile, sizeof(pidfile), "%s/postmaster.pid", c.dir);
	CHECK((f = fopen(pidfile, "r")) != NULL);
	CHECK(fgets(spid, sizeof(spid), f) != NULL);
	fclose(f);
	spid[strcspn(spid, "\n")] = 0;
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "postgresql:transaction__start", NULL },
		     false, -1);
	CHECK(tt_wait_armed((pid_t)atoi(spid), PGBIN "/postgres", 20000));
	bpf = bpftrace_start();
	txns = pgbench_run(&c); /* its backends are forked after the attach */
	CHECK_EQ(txns, 2000);
	check_counts(p, bpf, atoi(spid), "-x");
	/* the server was not ours to stop: it is still there, unharmed */
	CHECK_EQ(kill((pid_t)atoi(spid), 0), 0);
	CHECK(tt_wait_restored((pid_t)atoi(spid), PGBIN "/postgres", 5000));
	kill((pid_t)atoi(spid), SIGINT); /* fast shutdown */
	st = tt_finish(srv, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(bpf);
	free(p);
	free(srv);
	cluster_remove(&c);
}

/* The same as a script, through the same wrapper: `djp -c 'runuser ...
 * postgres ...' -e 'probe process("…/postgres").mark("transaction__start")
 * { c[pid()]++ }'`.  runuser has no probes; the script binds to the file
 * its point names, and every backend's count comes to the script under
 * the backend's pid. */
TEST_TIMEOUT(postgres_script_through_runuser, 300)
{
	struct counts ended = { 0 }, counted = { 0 };
	struct cluster c;
	struct tproc *p, *bpf;
	long txns;
	int st;
	const char *l;

	cluster_init(&c);
	bpf = bpftrace_start();
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", c.server, "-e",
				      "global c\n"
				      "probe process(\"" PGBIN "/postgres\").provider(\"postgresql\")"
				      ".mark(\"transaction__start\") { c[pid()]++ }\n"
				      "probe end { foreach (p in c) printf(\"pid %d %d\\n\", p, c[p]) }",
				      NULL },
		     false, -1);
	pgbench_init(&c);
	txns = pgbench_run(&c);
	CHECK_EQ(txns, 2000);
	bpftrace_counts(bpf, postmaster_of(&c), &ended);
	/* ^C: every hit recorded before it is counted, then the end probes
	 * run, then the server is stopped */
	kill(p->pid, SIGINT);
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (l = p->obuf; (l = strstr(l, "pid ")); l++) {
		int pid;
		long long n;
		CHECK_EQ(sscanf(l, "pid %d %lld", &pid, &n), 2);
		*count_of(&counted, pid) += n;
	}
	say_counts("bpftrace ended", &ended);
	if (!same_counts(&ended, &counted) || !same_counts(&counted, &ended)) {
		say_counts("the script counted", &counted);
		djp_test_fail(__FILE__, __LINE__, "the script's count per process is not bpftrace's: %s / %.2000s",
			      p->obuf, p->ebuf);
	}
	check_clients(&counted, "script");
	free(bpf);
	free(p);
	cluster_remove(&c);
}

/* psql's one value, as the postgres user. */
static long long psql_value(const struct cluster *c, const char *sql)
{
	char cmd[8192], out[256] = "";
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- /usr/bin/psql -h %s -p %d -At -c \"%s\" postgres 2>&1",
		 c->dir, c->port, sql);
	if (sh(cmd, out, sizeof(out)))
		djp_test_fail(__FILE__, __LINE__, "psql -c \"%s\": %.500s", sql, out);
	return atoll(out);
}

/* How many bytes before its nop the run of `probe`'s jump starts, as
 * `djp list --json` says: 0 when it starts at the nop. */
static int run_before_of(const char *probe)
{
	char cmd[512], out[1 << 16] = "";
	const char *l, *r;
	snprintf(cmd, sizeof(cmd), "%s list --json " PGBIN "/postgres", tt_djp());
	CHECK_EQ(sh(cmd, out, sizeof(out)), 0);
	CHECK((l = strstr(out, probe)) != NULL);
	r = strstr(l, "\"run_before\":");
	return r && r < strchr(l, '\n') ? atoi(r + strlen("\"run_before\":")) : 0;
}

/*
 * PostgreSQL's buffer__sync__done fires in the checkpointer, at a nop
 * right before a place a branch lands: its jump's run starts 6 bytes
 * before it, with an add into CheckpointStats (rip-relative) that the
 * trampoline runs relocated before the handlers.  Five CHECKPOINTs, each
 * after more writes: djp reports five, with the NBuffers and the number of
 * buffers to scan that bpftrace reads at buffer__sync__start of the same
 * checkpoint (bpftrace's uprobe cannot share the done probe's byte, which
 * our jump covers), and the buffers written, which the add the run moved
 * counts into pg_stat_bgwriter's buffers_checkpoint: the program's own
 * work, done once and right.
 */
/* bpftrace's "S PID NBUFFERS TO_SCAN" lines of the checkpointer PID:
 * how many; with DONE, each of the first five checked against djp's */
static int bpftrace_starts(const char *out, int pid, long (*done)[3])
{
	int starts = 0;
	for (const char *l = out; (l = strstr(l, "S ")); l++) {
		int spid;
		long nbuffers, to_scan;
		if ((l > out && l[-1] != '\n') || !strchr(l, '\n'))
			continue; /* a whole line only */
		if (sscanf(l, "S %d %ld %ld", &spid, &nbuffers, &to_scan) != 3 || spid != pid)
			continue;
		if (done && starts < 5 && (nbuffers != done[starts][0] || to_scan != done[starts][2]))
			djp_test_fail(__FILE__, __LINE__,
				      "checkpoint %d: bpftrace's start NBuffers=%ld to_scan=%ld, djp's done %ld, %ld", starts,
				      nbuffers, to_scan, done[starts][0], done[starts][2]);
		starts++;
	}
	return starts;
}

TEST_TIMEOUT(postgres_checkpoint_site_with_a_run_before_it_equals_bpftrace, 300)
{
	struct cluster c;
	struct tproc *p, *b;
	long long before, after, written = 0;
	long done[5][3];
	int n = 0, pid = 0, starts = 0, st, pre = run_before_of("\"buffer__sync__done\"");
	char cmd[8192];
	const char *l;

	if (pre <= 0)
		djp_test_fail(__FILE__, __LINE__, "buffer__sync__done's jump starts at its nop (%d), not before", pre);
	cluster_init(&c);
	if (access("/usr/bin/bpftrace", X_OK))
		djp_test_fail(__FILE__, __LINE__, "no /usr/bin/bpftrace: make check installs bpftrace");
	b = tt_spawn((char *const[]){ "/usr/bin/bpftrace", "-e",
				      "usdt:" PGBIN "/postgres:postgresql:buffer__sync__start"
				      " { printf(\"S %d %d %d\\n\", pid, arg0, arg1); }"
				      " BEGIN { printf(\"attached\\n\"); }",
				      NULL },
		     false, -1);
	if (!tt_wait_out(b, "attached\n", 30000)) {
		tt_kill(b);
		djp_test_fail(__FILE__, __LINE__, "bpftrace did not attach in 30 s: %.500s", b->ebuf);
	}
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", c.server, "postgresql:buffer__sync__done", NULL },
		     false, -1);
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- /usr/bin/psql -h %s -p %d -At -c 'select 1' postgres >/dev/null 2>&1",
		 c.dir, c.port);
	for (int i = 0; i < 150 && sh(cmd, NULL, 0); i++)
		usleep(200000);
	before = psql_value(&c, "SELECT buffers_checkpoint FROM pg_stat_bgwriter");
	for (int k = 1; k <= 5; k++) {
		char sql[256];
		snprintf(sql, sizeof(sql),
			 "CREATE TABLE IF NOT EXISTS t (x int); INSERT INTO t SELECT generate_series(1, %d); CHECKPOINT",
			 1000 * k);
		psql_value(&c, sql);
	}
	after = psql_value(&c, "SELECT buffers_checkpoint FROM pg_stat_bgwriter");
	/* djp's five lines, in the checkpointer */
	for (int tries = 0; tries < 3000 && n < 5; tries++) {
		tt_read_now(p);
		n = 0;
		for (l = p->obuf; n < 5 && (l = strstr(l, " postgresql:buffer__sync__done ")); l++) {
			const char *line = l;
			while (line > p->obuf && line[-1] != '\n')
				line--;
			CHECK_EQ(sscanf(line, "%*s %d", &pid), 1);
			CHECK_EQ(sscanf(l, " postgresql:buffer__sync__done arg1=%ld arg2=%ld arg3=%ld", &done[n][0],
					&done[n][1], &done[n][2]),
				 3);
			n++;
		}
		if (n < 5)
			usleep(10000);
	}
	if (n != 5)
		djp_test_fail(__FILE__, __LINE__, "djp reported %d checkpoints' buffer__sync__done, not 5: %.2000s / %.2000s",
			      n, p->obuf, p->ebuf);
	/* the jump at the run's start, in the checkpointer */
	CHECK_EQ(tt_byte_at(pid, tt_site_addr(pid, "postgresql:buffer__sync__done") - (uintptr_t)pre), 0xe9);
	/* bpftrace prints each start as it fires: its five lines are read
	 * while it runs, so the comparison does not hang on how long it
	 * takes its uprobes out at exit (on one clean machine, more than
	 * 90 s after SIGINT; that is bpftrace's, and said, not failed) */
	for (int tries = 0; tries < 3000 && starts < 5; tries++) {
		tt_read_now(b);
		starts = bpftrace_starts(b->obuf, pid, NULL);
		if (starts < 5)
			usleep(10000);
	}
	starts = bpftrace_starts(b->obuf, pid, done);
	kill(b->pid, SIGINT);
	st = tt_finish(b, 90000);
	if (st == -1)
		printf("# bpftrace did not exit within 90 s of SIGINT (killed); its lines were read before\n");
	else if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "bpftrace: status %#x: %.500s", st, b->ebuf);
	for (int k = 0; k < 5; k++)
		written += done[k][1];
	printf("# 5 checkpoints: djp's buffers written %lld, pg_stat_bgwriter's %lld; bpftrace's starts %d\n", written,
	       after - before, starts);
	CHECK_EQ(starts, 5);
	CHECK(written > 0);
	CHECK_EQ(written, after - before);
	kill(p->pid, SIGINT); /* the tool stops the server */
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st));
	free(b);
	free(p);
	cluster_remove(&c);
}
