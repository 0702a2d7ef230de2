/*
 * `djp trace -c` over a fork storm (bench-targets/forker storm): 10,000
 * short-lived children, ten at a time, each hitting the marker 3 times.
 * Each child is a session of the tool's own while it lives; one that has
 * exited and been drained is let go (tools/djp/source/process.c), its
 * summary block kept as text.  Rows: the tool's descriptors after 1,000
 * children and after 10,000, once it has let the last wave go (target:
 * no more at the end); its resident
 * memory per child between the two (target: 1 kB, the summary's text,
 * where a child used to keep about 110 kB); the events counted over every
 * child's summary block (target: all 30,000, in 10,001 processes).  One
 * run: it takes tens of seconds.
 */
#include <fcntl.h>
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#define CHILDREN 10000
#define PER_CHILD 3

static int fds_of(pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The tool's descriptors once the children it had have been let go:
 * the fewest seen over 250 ms of the forker's pause after a checkpoint
 * (an exited child's session closes once it is drained, some
 * milliseconds later, so one look counts 0 to 10 of them by chance). */
static int settled_fds_of(pid_t pid)
{
	int best = -1;

	for (int i = 0; i < 25; i++) {
		int n = fds_of(pid);

		if (n >= 0 && (best < 0 || n < best))
			best = n;
		usleep(10 * 1000);
	}
	return best;
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int main(void)
{
	static char summary[16 << 20];
	char exe[PATH_MAX], dir[PATH_MAX], djp[PATH_MAX + 8], cmd[2 * PATH_MAX], errpath[] = "/tmp/djp-storm-XXXXXX";
	char line[256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int out[2], errfd, fds1 = -1, fds2 = -1, st;
	long rss1 = -1, rss2 = -1;
	unsigned long long events = 0, procs = 0;
	double t0, secs, per;
	FILE *o;
	pid_t pid;

	if (n <= 0 || (errfd = mkstemp(errpath)) < 0 || pipe(out))
		return 1;
	exe[n] = 0;
	unlink(errpath);
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));
	snprintf(djp, sizeof(djp), "%s/djp", dir);
	snprintf(cmd, sizeof(cmd), "%s/bench-targets/forker storm %d %d", dir, CHILDREN, PER_CHILD);
	t0 = now_ns();
	if ((pid = fork()) == 0) {
		dup2(out[1], 1);
		dup2(errfd, 2);
		close(out[0]);
		close(out[1]);
		execl(djp, djp, "trace", "-c", cmd, "-o", "/dev/null", "bench_many", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	if (pid < 0 || !(o = fdopen(out[0], "r")))
		return 1;
	while (fgets(line, sizeof(line), o)) {
		long m;
		if (sscanf(line, "children %ld", &m) != 1)
			continue;
		if (m == CHILDREN / 10) {
			fds1 = settled_fds_of(pid);
			rss1 = rss_kb(pid);
		} else if (m == CHILDREN) {
			fds2 = settled_fds_of(pid);
			rss2 = rss_kb(pid);
		}
	}
	fclose(o);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("fork storm: djp trace -c, %d children | - | - | error\n", CHILDREN);
		return 1;
	}
	secs = (now_ns() - t0) / 1e9;
	n = pread(errfd, summary, sizeof(summary) - 1, 0);
	summary[n > 0 ? n : 0] = 0;
	for (const char *s = summary; (s = strstr(s, "djp trace: process ")); s++) {
		unsigned long long e;
		const char *c = strstr(s, "): ");
		procs++;
		if (c && sscanf(c, "): %llu events", &e) == 1)
			events += e;
	}
	printf("fork storm: tool's descriptors after %d / %d children | %d / %d | no more | %s\n", CHILDREN / 10,
	       CHILDREN, fds1, fds2, fds1 > 0 && fds2 <= fds1 ? "ok" : "over");
	per = (double)(rss2 - rss1) / (CHILDREN - CHILDREN / 10);
	printf("fork storm: tool's resident kB a child (%ld kB after %d, %ld after %d) | %.2f | <= 1 | %s\n", rss1,
	       CHILDREN / 10, rss2, CHILDREN, per, rss1 > 0 && per <= 1 ? "ok" : "over");
	printf("fork storm: events counted in %llu processes (%.0f s) | %llu | %d | %s\n", procs, secs, events,
	       CHILDREN * PER_CHILD, events == CHILDREN * PER_CHILD && procs == CHILDREN + 1 ? "ok" : "over");
	return 0;
}
