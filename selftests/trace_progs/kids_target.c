/*
 * A server whose workers are forked before anyone traces it, for `djp
 * trace -x`'s reach into a process's descendants.  main forks them at the
 * start; each waits for work on a pipe of its own:
 *
 *   worker 1  a child of fork that runs on in the same program;
 *   worker 2  a child of fork that execs this program again (--worker);
 *   worker 3  a child of fork that forks a worker of its own, worker 4
 *             (main's grandchild), and works too;
 *   worker 5  with --undumpable only: a child of fork that makes itself
 *             non-dumpable (PR_SET_DUMPABLE 0), which only root may
 *             ptrace.
 *
 * Each says its number and pid on a pipe they share once it is up; main
 * then prints "ready PID W1 W2 ..." (the workers' pids in their order).  Commands on stdin:
 *   run N   main and every worker call tick() N times (kt_tick each
 *           time): "ran N" once they all have
 *   spawn CMD
 *           a child of main runs CMD with /bin/sh (its output main's):
 *           "spawned PID" (a tool given main's pid, which is then among
 *           main's descendants itself)
 * At end of input main closes the workers' pipes, they exit, and it
 * exits 0 once it has reaped its children (worker 3 reaps worker 4).
 * No agent: the tests inject one.
 */
#include <djprobe/marker.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXW 5

static int cmd[MAXW + 1][2]; /* worker i reads cmd[i][0] */
static int done[2];	     /* every worker writes done[1] */

__attribute__((noinline)) static void tick(long i)
{
	MARK(kt_tick, "i=%ld", i);
}

static void ticks(long n)
{
	for (long i = 0; i < n; i++)
		tick(i);
}

/* A worker's life: "up" (its number and pid), then N ticks for each N
 * read, "done" (0, 0) after each. */
static void work(int i, int in, int out)
{
	int up[2] = { i, (int)getpid() }, zero[2] = { 0, 0 };
	long n;
	if (write(out, up, sizeof(up)) != sizeof(up))
		_exit(1);
	while (read(in, &n, sizeof(n)) == sizeof(n)) {
		ticks(n);
		if (write(out, zero, sizeof(zero)) != sizeof(zero))
			_exit(1);
	}
	_exit(0);
}

/* Worker i, forked (worker 4 by worker 3).  Each keeps only its own read
 * end and done's write end: the others' end of file is theirs to see. */
static void start_worker(int i, int nworkers)
{
	if (fork())
		return;
	for (int k = 1; k <= nworkers; k++) {
		close(cmd[k][1]);
		if (k != i && !(i == 3 && k == 4))
			close(cmd[k][0]);
	}
	close(done[0]);
	if (i == 2) { /* exec'd: the two descriptors travel by number */
		char n[16], a[16], b[16];
		fcntl(cmd[2][0], F_SETFD, 0);
		fcntl(done[1], F_SETFD, 0);
		snprintf(n, sizeof(n), "%d", i);
		snprintf(a, sizeof(a), "%d", cmd[2][0]);
		snprintf(b, sizeof(b), "%d", done[1]);
		execl("/proc/self/exe", "kids_target", "--worker", n, a, b, (char *)NULL);
		_exit(127);
	}
	if (i == 3) {
		start_worker(4, nworkers);
		close(cmd[4][0]);
	}
	if (i == 5)
		prctl(PR_SET_DUMPABLE, 0);
	work(i, cmd[i][0], done[1]);
}

int main(int argc, char **argv)
{
	int nworkers = 4, pids[MAXW + 1];
	char line[4200];

	if (argc == 5 && !strcmp(argv[1], "--worker"))
		work(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	if (argc > 1 && !strcmp(argv[1], "--undumpable"))
		nworkers = 5;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe2(done, O_CLOEXEC))
		return 1;
	for (int i = 1; i <= nworkers; i++)
		if (pipe2(cmd[i], O_CLOEXEC))
			return 1;
	for (int i = 1; i <= nworkers; i++)
		if (i != 4) /* (worker 3's) */
			start_worker(i, nworkers);
	close(done[1]);
	for (int i = 1; i <= nworkers; i++)
		close(cmd[i][0]);
	for (int k = 0; k < nworkers; k++) {
		int up[2];
		if (read(done[0], up, sizeof(up)) != sizeof(up) || up[0] < 1 || up[0] > nworkers)
			return 1;
		pids[up[0]] = up[1];
	}
	printf("ready %d", (int)getpid());
	for (int i = 1; i <= nworkers; i++)
		printf(" %d", pids[i]);
	printf("\n");
	while (fgets(line, sizeof(line), stdin)) {
		long n;
		if (!strncmp(line, "spawn ", 6)) {
			pid_t c = fork();
			if (c == 0) {
				execl("/bin/sh", "sh", "-c", line + 6, (char *)NULL);
				_exit(127);
			}
			printf("spawned %d\n", (int)c);
			continue;
		}
		if (sscanf(line, "run %ld", &n) != 1)
			continue;
		for (int i = 1; i <= nworkers; i++)
			if (write(cmd[i][1], &n, sizeof(n)) != sizeof(n))
				return 1;
		ticks(n);
		for (int i = 0; i < nworkers; i++) {
			int zero[2];
			if (read(done[0], zero, sizeof(zero)) != sizeof(zero))
				return 1;
		}
		printf("ran %ld\n", n);
	}
	for (int i = 1; i <= nworkers; i++)
		close(cmd[i][1]);
	while (wait(NULL) > 0)
		;
	return 0;
}
