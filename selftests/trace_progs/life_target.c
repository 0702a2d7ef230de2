/*
 * The process lifetime probes' target (test_script_life.c): processes
 * and threads whose number the test knows.
 *
 *   life_target FORKS EXECS THREADS
 *
 * main starts THREADS threads and joins them, then forks FORKS children
 * that return from main (exit 0) and EXECS children that exec this
 * program's twin, life_target_exec beside it (the same source; a program
 * that a process of the trace execs is traced when it has markers), one
 * after the other, each reaped before the next is forked; then main
 * prints "pid PID" and returns 0.  Each thread and each child hits the
 * marker lt_work once (what=1 a thread, 2 a child, 3 the exec'd twin).
 * Nothing of djprobe is linked: the agent comes by LD_PRELOAD.
 *
 *   life_target_exec exec-child     hit lt_work (what=3), exit 0
 */
#include <pthread.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "djprobe/marker.h"

static void *thread_main(void *arg)
{
	MARK(lt_work, "what=%ld", (long)(size_t)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	long forks, execs, threads;
	char twin[PATH_MAX];
	ssize_t n;

	if (argc == 2 && !strcmp(argv[1], "exec-child")) {
		MARK(lt_work, "what=%ld", 3L);
		return 0;
	}
	if (argc != 4)
		return 2;
	n = readlink("/proc/self/exe", twin, sizeof(twin) - 32);
	if (n <= 0)
		return 1;
	twin[n] = 0;
	strcpy(strrchr(twin, '/') + 1, "life_target_exec");
	forks = atol(argv[1]);
	execs = atol(argv[2]);
	threads = atol(argv[3]);
	for (long i = 0; i < threads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, thread_main, (void *)(size_t)1) || pthread_join(t, NULL))
			return 1;
	}
	for (long i = 0; i < forks + execs; i++) {
		int st;
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (!pid) {
			MARK(lt_work, "what=%ld", 2L);
			if (i >= forks) {
				execl(twin, "life_target_exec", "exec-child", (char *)NULL);
				_exit(127);
			}
			return 0;
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	printf("pid %d\n", (int)getpid());
	return 0;
}
