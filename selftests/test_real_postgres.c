/*
 * PostgreSQL 15, a pre-fork server nobody here wrote, with SDT probes only:
 * `djp trace -c 'runuser -u postgres -- postgres -D DIR ...'
 * postgresql:transaction__start` while pgbench runs.  runuser is a wrapper
 * without probes (the postgres it execs dials in too), the postmaster forks
 * its backends (followed through fork), and every backend's transactions
 * are recorded: at least the transactions pgbench reports (initialisation,
 * autovacuum and the like add a few).  Needs root (to start the server as
 * the postgres user) and the postgresql-15 package, which make check
 * installs.
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

TEST_TIMEOUT(postgres_pgbench_every_backend_traced, 240)
{
	char dir[] = "/tmp/djp-pg-XXXXXX", cmd[8192], out[8192], server[4096];
	struct passwd *pw = getpwnam("postgres");
	unsigned long long total;
	int port = 20000 + (int)(getpid() % 20000), blocks, others, st, ok = 0;
	long txns = 0;
	struct tproc *p;
	const char *s;

	if (geteuid() != 0)
		SKIP("needs root, to start the server as the postgres user");
	if (access(PGBIN "/postgres", X_OK) || access(PGBIN "/pgbench", X_OK) || !pw)
		SKIP("PostgreSQL 15 is not installed");
	CHECK(mkdtemp(dir) != NULL);
	CHECK(chown(dir, pw->pw_uid, pw->pw_gid) == 0);
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/initdb -D %s >/dev/null 2>&1", dir);
	CHECK_EQ(sh(cmd, NULL, 0), 0);

	snprintf(server, sizeof(server), "runuser -u postgres -- " PGBIN "/postgres -D %s -k %s -p %d -c listen_addresses=",
		 dir, dir, port);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", server, "postgresql:transaction__start", NULL },
		     false, -1);
	/* pgbench -i, retried until the server takes connections */
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/pgbench -h %s -p %d -i postgres >/dev/null 2>&1",
		 dir, port);
	for (int i = 0; i < 100 && !ok; i++) {
		ok = sh(cmd, NULL, 0) == 0;
		if (!ok)
			usleep(200000);
	}
	CHECK(ok);
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/pgbench -h %s -p %d -c 4 -t 200 postgres 2>&1", dir,
		 port);
	CHECK_EQ(sh(cmd, out, sizeof(out)), 0);
	CHECK((s = strstr(out, "number of transactions actually processed: ")) != NULL);
	txns = atol(s + strlen("number of transactions actually processed: "));
	CHECK_EQ(txns, 800);

	kill(p->pid, SIGINT); /* the tool ends the trace and stops the server */
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st));
	blocks = tt_summary_sum(p->ebuf, "postgresql:transaction__start", &total, &others);
	if (total < (unsigned long long)txns || blocks < 4)
		djp_test_fail(__FILE__, __LINE__, "%llu events in %d processes for %ld transactions: %.3000s", total,
			      blocks, txns, p->ebuf);
	printf("# %llu transaction__start events in %d processes (%d without), pgbench: %ld transactions\n", total,
	       blocks, others, txns);
	free(p);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	sh(cmd, NULL, 0);
}
