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
 * Every backend's transactions are recorded: at least the transactions
 * pgbench reports, in at least its four backends.  And exactly as many as
 * bpftrace sees end over the same run, where bpftrace works: it counts
 * transaction__commit and transaction__abort (it cannot share the start
 * probe: the kernel's uprobe and our int3 would claim the same byte), and
 * with autovacuum off every transaction that starts ends in one of them
 * before the server is idle.  Needs root (to start the server as the
 * postgres user) and the postgresql-15 package, which make check installs.
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
		djp_test_fail(__FILE__, __LINE__, "no " PGBIN "/postgres, pgbench or user postgres: make check installs postgresql-15");
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
	CHECK_EQ(sh(cmd, out, sizeof(out)), 0);
	CHECK((s = strstr(out, "number of transactions actually processed: ")) != NULL);
	return atol(s + strlen("number of transactions actually processed: "));
}

/* bpftrace counting the transactions that end, or NULL where it cannot
 * run (no bpftrace, no BPF in this kernel): said as a note. */
static struct tproc *bpftrace_start(void)
{
	struct tproc *b;
	if (access("/usr/bin/bpftrace", X_OK)) {
		printf("# no bpftrace: no second count\n");
		return NULL;
	}
	b = tt_spawn((char *const[]){ "/usr/bin/bpftrace", "-e",
				      "usdt:" PGBIN "/postgres:postgresql:transaction__commit,"
				      "usdt:" PGBIN "/postgres:postgresql:transaction__abort { @ended = count(); }"
				      " BEGIN { printf(\"attached\\n\"); }",
				      NULL },
		     false, -1);
	if (!tt_wait_out(b, "attached\n", 30000)) { /* BEGIN runs once the probes are in */
		printf("# bpftrace does not run here: no second count (%.200s)\n", b->ebuf);
		tt_kill(b);
		free(b);
		return NULL;
	}
	return b;
}

static long long bpftrace_count(struct tproc *b)
{
	const char *s;
	int st;
	kill(b->pid, SIGINT);
	st = tt_finish(b, 30000);
	s = strstr(b->obuf, "@ended: ");
	if (!s) /* what it did instead, for the failure that follows */
		printf("# bpftrace printed no count: %s %d; its stderr: %.500s\n",
		       st == -1 ? "killed after 30 s," : WIFEXITED(st) ? "exit status" : "signal",
		       st == -1 ? 0 : WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), b->ebuf);
	return s ? atoll(s + 8) : -1;
}

/* The server idle (autovacuum off: no transaction starts on its own), the
 * trace stopped; the events counted and checked against pgbench and
 * bpftrace. */
static void check_counts(struct tproc *p, struct tproc *bpf, long txns, const char *how)
{
	unsigned long long total;
	int blocks, others, st;
	long long ended = -1;

	usleep(500000); /* the last transactions' commits reach both */
	if (bpf)
		ended = bpftrace_count(bpf);
	kill(p->pid, SIGINT);
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st));
	blocks = tt_summary_sum(p->ebuf, "postgresql:transaction__start", &total, &others);
	if (total < (unsigned long long)txns || blocks < 4)
		djp_test_fail(__FILE__, __LINE__, "%s: %llu events in %d processes for %ld transactions: %.3000s", how,
			      total, blocks, txns, p->ebuf);
	if (bpf && ended != (long long)total)
		djp_test_fail(__FILE__, __LINE__, "%s: djp saw %llu transactions start, bpftrace %lld end: %.500s", how,
			      total, ended, bpf->obuf);
	printf("# %s: %llu transaction__start events in %d processes (%d without), pgbench %ld transactions, "
	       "bpftrace %lld ended\n",
	       how, total, blocks, others, txns, ended);
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
	check_counts(p, bpf, txns, "-c"); /* the tool stops the server */
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
	check_counts(p, bpf, txns, "-x");
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
	struct cluster c;
	struct tproc *p;
	long txns, total = 0;
	int procs = 0, st;
	const char *l;

	cluster_init(&c);
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
	usleep(500000);
	kill(p->pid, SIGINT); /* end probes, then the server is stopped */
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (l = p->obuf; (l = strstr(l, "pid ")); l++) {
		int pid;
		long n;
		CHECK_EQ(sscanf(l, "pid %d %ld", &pid, &n), 2);
		total += n;
		procs++;
	}
	if (total < txns || procs < 4)
		djp_test_fail(__FILE__, __LINE__, "%ld transactions in %d processes: %s / %.2000s", total, procs, p->obuf,
			      p->ebuf);
	printf("# script: %ld transaction__start in %d processes\n", total, procs);
	free(p);
	cluster_remove(&c);
}
