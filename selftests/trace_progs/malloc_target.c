/*
 * The probe-ownership tests' target: one thread, nothing of djprobe.
 * `malloc_target N [PLUGIN]` calls malloc(4321) and free N times, then,
 * given a PLUGIN, dlopens and dlcloses it and does the N pairs again, and
 * prints "pairs M" (M: the pairs made).  Every malloc and free it makes
 * is on its one thread.  `malloc_target N fork:K` forks K children one
 * after the other instead of the dlopen, each of which exits at once;
 * none of them calls anything.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile mt_sink;

static long pairs(long n)
{
	for (long i = 0; i < n; i++) {
		mt_sink = malloc(4321);
		free(mt_sink);
	}
	return n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100, made = pairs(n);

	if (argc > 2 && !strncmp(argv[2], "fork:", 5)) {
		for (int k = atoi(argv[2] + 5); k > 0; k--) {
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			if (c < 0 || waitpid(c, NULL, 0) != c)
				return 1;
		}
	} else if (argc > 2) {
		void *h = dlopen(argv[2], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "malloc_target: %s\n", dlerror());
			return 1;
		}
		dlclose(h);
		made += pairs(n);
	}
	printf("pairs %ld\n", made);
	return 0;
}
