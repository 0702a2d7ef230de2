/*
 * A target with the agent linked in, for the permission tests: run as a
 * setuid copy, or told to make itself non-dumpable (as daemons that drop
 * privileges are), it must be traceable only by peers that could ptrace it.
 *
 *   agent_perm_target [nodump]
 *
 * Prints "ready PID" once its agent listens, fires perm_tick every
 * millisecond, and exits at end of stdin.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <djprobe/djprobe.h>
#include <djprobe/marker.h>

static volatile int done;

static void *ticker(void *arg)
{
	(void)arg;
	for (long i = 0; !done; i++) {
		MARK(perm_tick, "i=%ld", i);
		usleep(1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char buf[64];

	if (argc > 1 && !strcmp(argv[1], "nodump"))
		prctl(PR_SET_DUMPABLE, 0);
	if (djp_agent_start() < 0) {
		fprintf(stderr, "agent_perm_target: no agent\n");
		return 1;
	}
	pthread_create(&t, NULL, ticker, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	done = 1;
	pthread_join(t, NULL);
	return 0;
}
