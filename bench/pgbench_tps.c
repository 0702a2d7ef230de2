/*
 * PostgreSQL under djp: pgbench's transactions a second with `djp trace -x
 * POSTMASTER postgresql:transaction__start` counting every backend's
 * transactions, against pgbench without it, in interleaved runs (plain,
 * traced, plain, ...) on one server, so that the machine's drift hits both
 * alike.  pgbench -c 4 -T 5 (TPC-B like) on a scale-1 database in a
 * temporary folder, the server without fsync (CPU-bound: the probe's cost
 * shows most, the disk's noise least).  The row is the median traced / median plain (target
 * >= 0.98); the noise row is the spread of the plain runs, (max - min) /
 * median, which says how far apart two runs of the same thing are here.
 * Needs root (the server runs as the postgres user) and postgresql-15
 * (make check installs it); otherwise the rows say skipped.
 */
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#define PGBIN "/usr/lib/postgresql/15/bin"
#define RUNS 5

static char dir[PATH_MAX], data[64];
static int port;

static int sh(const char *cmd, char *out, size_t sz)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (!p)
		return -1;
	while (out && n + 1 < sz && fgets(out + n, (int)(sz - n), p))
		n += strlen(out + n);
	if (out)
		out[n] = 0;
	return pclose(p);
}

static double pgbench_tps(void)
{
	char cmd[512], out[8192];
	const char *s;
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/pgbench -h %s -p %d -c 4 -T 5 postgres 2>&1", data,
		 port);
	if (sh(cmd, out, sizeof(out)) || !(s = strstr(out, "tps = ")))
		return -1;
	return atof(s + 6);
}

static void skipped(const char *why)
{
	printf("pgbench: TPS traced (transaction__start in every backend) / plain | - | >= 0.98 | skipped (%s)\n", why);
}

int main(void)
{
	char exe[PATH_MAX], cmd[2 * PATH_MAX], pid[32] = "";
	double plain[RUNS], traced[RUNS], m0, m1, lo, hi;
	struct passwd *pw = getpwnam("postgres");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	pid_t server;
	FILE *f;
	int ok = 0, rc = 0;

	if (n <= 0)
		return 1;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));
	if (geteuid() != 0 || !pw || access(PGBIN "/pgbench", X_OK)) {
		skipped(geteuid() ? "needs root" : "no postgresql-15");
		return 0;
	}
	snprintf(data, sizeof(data), "/tmp/djp-bench-pg-XXXXXX");
	if (!mkdtemp(data) || chown(data, pw->pw_uid, pw->pw_gid))
		return 1;
	port = 30000 + (int)(getpid() % 20000);
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/initdb -D %s >/dev/null 2>&1", data);
	if (sh(cmd, NULL, 0)) {
		skipped("initdb failed");
		return 0;
	}
	if ((server = fork()) == 0) {
		/* no fsync: the disk of a virtual machine is the noisiest part of
		 * a run, and a server bound by its CPU shows a probe's cost most */
		snprintf(cmd, sizeof(cmd),
			 "exec " PGBIN "/postgres -D %s -k %s -p %d -c listen_addresses= -c autovacuum=off -c fsync=off "
			 "-c synchronous_commit=off 2>/dev/null",
			 data, data, port);
		execl("/usr/sbin/runuser", "runuser", "-u", "postgres", "--", "/bin/sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	snprintf(cmd, sizeof(cmd), "runuser -u postgres -- " PGBIN "/pgbench -h %s -p %d -i -s 4 postgres >/dev/null 2>&1",
		 data, port);
	for (int i = 0; i < 100 && !ok; i++)
		if (!(ok = sh(cmd, NULL, 0) == 0))
			usleep(200000);
	snprintf(cmd, sizeof(cmd), "%s/postmaster.pid", data);
	if (!ok || !(f = fopen(cmd, "r")) || !fgets(pid, sizeof(pid), f)) {
		skipped("the server did not start");
		rc = 1;
		goto out;
	}
	fclose(f);
	pid[strcspn(pid, "\n")] = 0;
	for (int r = 0; r < RUNS && rc == 0; r++) {
		pid_t djp;
		plain[r] = pgbench_tps();
		if ((djp = fork()) == 0) {
			char tool[PATH_MAX + 8];
			snprintf(tool, sizeof(tool), "%s/djp", dir);
			if (!freopen("/dev/null", "w", stderr))
				_exit(127);
			execl(tool, tool, "trace", "-x", pid, "-o", "/dev/null", "postgresql:transaction__start",
			      (char *)NULL);
			_exit(127);
		}
		sleep(1); /* attached and armed (the agent stays after the first) */
		traced[r] = pgbench_tps();
		kill(djp, SIGINT);
		waitpid(djp, NULL, 0);
		if (plain[r] <= 0 || traced[r] <= 0)
			rc = 1;
	}
	if (rc) {
		printf("pgbench: TPS traced (transaction__start in every backend) / plain | - | >= 0.98 | error\n");
		goto out;
	}
	m0 = median_of(plain, RUNS); /* sorts */
	lo = plain[0];
	hi = plain[RUNS - 1];
	m1 = median_of(traced, RUNS);
	printf("pgbench: TPS plain, median of %d (-c 4 -T 5) | %.0f | - | -\n", RUNS, m0);
	printf("pgbench: TPS traced, median of %d | %.0f | - | -\n", RUNS, m1);
	printf("pgbench: noise, plain runs (max - min) / median | %.3f | - | -\n", (hi - lo) / m0);
	printf("pgbench: TPS traced (transaction__start in every backend) / plain | %.3f | >= 0.98 | %s\n", m1 / m0,
	       m1 / m0 >= 0.98 ? "ok" : "over");
out:
	/* fast shutdown of the postmaster, then runuser returns */
	snprintf(cmd, sizeof(cmd), "kill -INT $(head -1 %s/postmaster.pid 2>/dev/null) 2>/dev/null", data);
	sh(cmd, NULL, 0);
	waitpid(server, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", data);
	sh(cmd, NULL, 0);
	return rc;
}
