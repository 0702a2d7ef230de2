/*
 * A fork storm under `djp trace -c`: each child of fork is a session of its
 * own (tools/djp/session/session_kids.c), and one that has exited and been drained
 * is let go (its socket, ring and marker log, its tables; the summary kept
 * as text), so the tool's descriptors come back to where they were and its
 * memory stays flat, while every child's events are counted exactly.  And
 * a descriptor the tool has no room for is said as EMFILE, not as a
 * malformed reply.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/proto.h"
#include "test_trace_util.h"

static int fds_of(pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	CHECK((d = opendir(path)));
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The lowest descriptor number pid has free: what its next one gets. */
static int lowest_free(pid_t pid)
{
	char path[64];
	for (int n = 0;; n++) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, n);
		if (access(path, F_OK))
			return n;
	}
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	CHECK((f = fopen(path, "re")));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Wait (10 s at most) until pid has `want` descriptors open; the count. */
static int wait_fds(pid_t pid, int want)
{
	int n = fds_of(pid);
	for (int i = 0; i < 1000 && n != want; i++) {
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		n = fds_of(pid);
	}
	return n;
}

/* n children of k events each; "forked n" once all have ended. */
static void storm(struct tproc *p, long n, long k)
{
	char line[64], expect[64];
	snprintf(line, sizeof(line), "fork %ld %ld\n", n, k);
	snprintf(expect, sizeof(expect), "forked %ld\n", n);
	tt_send(p, line);
	CHECK(tt_wait_out(p, expect, 120000));
}

TEST_TIMEOUT(trace_fork_storm_releases_exited_children, 240)
{
	char cmd[4200];
	struct tproc *p;
	unsigned long long total;
	int base, n, blocks, others, st, errfd;
	long rss1, rss2;
	char errpath[] = "/tmp/djp-storm-XXXXXX";
	static char summary[1 << 20];
	ssize_t len;

	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	/* the summary (400 processes) to a file: more than a pipe's buffer here */
	CHECK((errfd = mkstemp(errpath)) >= 0 && setenv("DJP_STORM_ERR", errpath, 1) == 0);
	p = tt_spawn((char *const[]){ "/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$DJP_STORM_ERR\"", (char *)tt_djp(),
				      "trace", "-c", cmd, "tt_burst", NULL },
		     false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	base = fds_of(p->pid);
	storm(p, 100, 3);
	/* every child gone and drained: back to the main session's */
	if ((n = wait_fds(p->pid, base)) != base)
		djp_test_fail(__FILE__, __LINE__, "after 100 children: %d descriptors, %d before", n, base);
	rss1 = rss_kb(p->pid);
	storm(p, 300, 3);
	if ((n = wait_fds(p->pid, base)) != base)
		djp_test_fail(__FILE__, __LINE__, "after 400 children: %d descriptors, %d before", n, base);
	rss2 = rss_kb(p->pid);
	/* a summary's text per child, not 100 KB */
	if (rss2 - rss1 > 2048)
		djp_test_fail(__FILE__, __LINE__, "300 more children: %ld kB more resident (%ld -> %ld)", rss2 - rss1,
			      rss1, rss2);
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	len = pread(errfd, summary, sizeof(summary) - 1, 0);
	CHECK(len > 0);
	summary[len] = 0;
	close(errfd);
	unlink(errpath);
	blocks = tt_summary_sum(summary, "tt_burst", &total, &others);
	if (blocks != 400 || total != 1200 || others != 1)
		djp_test_fail(__FILE__, __LINE__, "%d processes with events (%d without), %llu events", blocks, others,
			      total);
	free(p);
}

/* A RING_FD frame whose descriptor cannot be installed (the receiver at
 * its RLIMIT_NOFILE): -EMFILE, and the frame read whole. */
TEST(proto_descriptor_past_the_limit_is_emfile)
{
	static uint8_t buf[DJP_PROTO_MAX_PAYLOAD];
	static struct djp_pbuf b;
	struct rlimit rl;
	unsigned type;
	int sv[2], got = -2, memfd;
	long n;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK((memfd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
	djp_pbuf_init(&b);
	djp_put_u64(&b, 4096);
	CHECK_EQ(djp_proto_send(sv[0], DJP_MSG_RING_FD, &b, memfd), 0);
	djp_pbuf_init(&b);
	djp_put_u64(&b, 8192);
	CHECK_EQ(djp_proto_send(sv[0], DJP_MSG_RING_FD, &b, memfd), 0);
	/* no room: the limit at the highest descriptor open, all below used */
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	rl.rlim_cur = (rlim_t)(memfd > sv[1] ? memfd : sv[1]) + 1;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0)
		;
	n = djp_proto_recv(sv[1], &type, buf, 1000, &got);
	CHECK_EQ(n, -EMFILE);
	CHECK_EQ(got, -1);
	/* the stream is still in step: room again, the next frame whole */
	close(memfd);
	n = djp_proto_recv(sv[1], &type, buf, 1000, &got);
	CHECK_EQ(n, 8);
	CHECK_EQ(type, DJP_MSG_RING_FD);
	CHECK(got >= 0);
}

/* The same storm under a script (the live source keeps its own sessions):
 * descriptors back to where they were, every hit counted. */
TEST_TIMEOUT(script_fork_storm_releases_exited_children, 240)
{
	char cmd[4200];
	struct tproc *p;
	int base, n, st;

	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				      "global n, kids; probe process.mark(\"tt_burst\") { n++; kids[pid()] = 1 }\n"
				      "probe end { k = 0; foreach (c in kids) k++; printf(\"hits %d in %d\\n\", n, k) }",
				      NULL },
		     false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	base = fds_of(p->pid);
	storm(p, 100, 3);
	if ((n = wait_fds(p->pid, base)) != base)
		djp_test_fail(__FILE__, __LINE__, "after 100 children: %d descriptors, %d before", n, base);
	storm(p, 200, 3);
	if ((n = wait_fds(p->pid, base)) != base)
		djp_test_fail(__FILE__, __LINE__, "after 300 children: %d descriptors, %d before", n, base);
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!strstr(p->obuf, "hits 900 in 300\n"))
		djp_test_fail(__FILE__, __LINE__, "%s / %s", p->obuf, p->ebuf);
	free(p);
}

/* The tool at its descriptor limit (set on it once it runs: its command
 * keeps its own): a process dialling in is let go at once, untraced, and
 * the tool says why, once; the children run on.  (A ring descriptor that
 * cannot be installed is proto_descriptor_past_the_limit_is_emfile's.) */
TEST_TIMEOUT(trace_fork_at_the_descriptor_limit_says_emfile, 120)
{
	char cmd[4200];
	struct tproc *p;
	struct rlimit rl;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "tt_burst", NULL }, false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	/* an event through: the tool is past its start */
	tt_send(p, "burst 1\n");
	CHECK(tt_wait_out(p, " tt_burst ", 10000));
	/* a limit counts descriptor numbers: no room for one more */
	CHECK(prlimit(p->pid, RLIMIT_NOFILE, NULL, &rl) == 0);
	rl.rlim_cur = (rlim_t)lowest_free(p->pid);
	CHECK(prlimit(p->pid, RLIMIT_NOFILE, &rl, NULL) == 0);
	storm(p, 10, 2);
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (tt_count(p->ebuf, "djp: cannot take a process that dialled in: Too many open files\n") != 1 ||
	    strstr(p->ebuf, "malformed"))
		djp_test_fail(__FILE__, __LINE__, "%s", p->ebuf);
	free(p);
}
