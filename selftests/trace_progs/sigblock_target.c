/*
 * A target whose threads all block every signal, as a server with a
 * sigwait thread does: main blocks them before anything else, so each
 * thread it makes and each child it forks blocks them too.  It has no
 * agent (the tests inject one), two markers and a tiny function:
 *
 *   sb_tick   fired once by each call of tick(): the counted probe;
 *   sb_work   a function tick() calls, for a function probe;
 *   sb_hot    fired by every turn of the --threads K spinning threads,
 *             which never make a system call and never stop (a turn is
 *             a few microseconds);
 *   sb_tiny   one 2-byte instruction and a ret: an instruction probe on
 *             it can only be an int3 breakpoint (no room for a jump).
 *
 * Prints "ready PID", then reads commands on stdin (main waits in read):
 *   run N     main calls tick() N times: "ran N"
 *   tick N    the spinning threads call tick() N times between them
 *             (each takes one from a shared budget): "ticked N"
 *   fork N    a child of fork calls tick() N times and exits 0; "forked N"
 *             once it is reaped, with its exit status checked
 *   dlopen PATH N
 *             main loads PATH (a library loaded after the trace began,
 *             trace_plugin.c) and calls its plugin_fire(N): "dlopened N"
 * At end of input it exits 0.
 *
 * --ranged: each turn of a spinning thread also calls sb_ranged, three
 * pauses and a ret, ten times (a fifth of its time or so).
 *
 * --stdio: each turn of a spinning thread also opens and closes a FILE
 * and frees what it mallocs (its locks are held much of the time).
 *
 * --raw: main blocks every signal by the raw system call, past the
 * interposers a preloaded libdjprobe.so has (under `djp trace -c`).
 *
 * --open: main blocks nothing; `fork` forks in a SIGUSR1 handler installed
 * at the start with every signal in its mask, as PostgreSQL's postmaster
 * starts its workers: only the child blocks SIGTRAP (and every signal).
 */
#include <djprobe/marker.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int sb_tiny(void);
__asm__(".text\n"
	".globl sb_tiny\n"
	".type sb_tiny, @function\n"
	"sb_tiny:\n"
	"\txorl %eax, %eax\n"
	"\tret\n"
	".size sb_tiny, .-sb_tiny\n");

/* Three pauses (two bytes each, a hundred cycles or so), then ret: a
 * thread that calls it without end is between two of the instructions a
 * function probe's jump covers most of the time, and is interrupted there
 * (a run of nops retires together: a stop lands at its start). */
void sb_ranged(void);
__asm__(".text\n"
	".globl sb_ranged\n"
	".type sb_ranged, @function\n"
	"sb_ranged:\n"
	"\tpause\n\tpause\n\tpause\n"
	"\tret\n"
	".size sb_ranged, .-sb_ranged\n");

static atomic_long budget, ticked, stop;
static volatile long sum;

/* Instructions of its own: a function probe there is a jump over them. */
__attribute__((noinline)) void sb_work(long i)
{
	sum = sum * 31 + i;
}

__attribute__((noinline)) static void tick(long i)
{
	MARK(sb_tick, "i=%ld", i);
	sb_work(i);
	sb_tiny();
}

__attribute__((noinline)) static void hot(long i)
{
	MARK(sb_hot, "i=%ld", i);
}

static int use_stdio, use_ranged;

static void *spinner(void *arg)
{
	(void)arg;
	for (long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		hot(i);
		if (use_ranged)
			for (int k = 0; k < 10; k++)
				sb_ranged();
		if (use_stdio) { /* malloc's and stdio's locks, held often */
			FILE *f = fopen("/dev/null", "r");
			if (f)
				fclose(f);
			free(malloc(100 + i % 1000));
		}
		/* a few microseconds a turn: the site runs tens of thousands
		 * of times a second, and a ring keeps up with it */
		for (int k = 0; k < 100; k++)
			__builtin_ia32_pause();
		/* one from the budget, never below 0: two threads that both
		 * took the last one would leave -1, one tick short next time */
		long b = atomic_load_explicit(&budget, memory_order_relaxed);
		while (b > 0 && !atomic_compare_exchange_weak(&budget, &b, b - 1))
			;
		if (b > 0) {
			tick(i);
			atomic_fetch_add(&ticked, 1);
		}
	}
	return NULL;
}

/* Fork a child that ticks n times, and reap it: "forked N", or why not. */
static void fork_ticks(long n)
{
	pid_t c = fork();
	int st = -1;
	if (c == 0) {
		for (long i = 0; i < n; i++)
			tick(i);
		_exit(0);
	}
	if (c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		printf("forked %ld\n", n);
	else
		printf("fork failed: status %d\n", st);
}

static long handler_ticks;

static void on_usr1(int sig)
{
	(void)sig;
	fork_ticks(handler_ticks);
}

int main(int argc, char **argv)
{
	int nthreads = 0, open = 0, raw = 0;
	pthread_t th[16];
	char line[4200], path[4096];
	sigset_t all;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--open"))
			open = 1;
		else if (!strcmp(argv[i], "--raw"))
			raw = 1;
		else if (!strcmp(argv[i], "--stdio"))
			use_stdio = 1;
		else if (!strcmp(argv[i], "--ranged"))
			use_ranged = 1;
	sigfillset(&all);
	if (raw) {
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof(long));
	} else if (!open) {
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	} else {
		struct sigaction sa = { .sa_handler = on_usr1, .sa_mask = all };
		sigaction(SIGUSR1, &sa, NULL);
	}
	if (nthreads > 16)
		nthreads = 16;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, spinner, NULL);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		long n = 0;
		if (sscanf(line, "run %ld", &n) == 1) {
			for (long i = 0; i < n; i++)
				tick(i);
			printf("ran %ld\n", n);
		} else if (sscanf(line, "tick %ld", &n) == 1 && nthreads) {
			long want = atomic_load(&ticked) + n;
			atomic_fetch_add(&budget, n);
			while (atomic_load(&ticked) < want)
				sched_yield();
			printf("ticked %ld\n", n);
		} else if (sscanf(line, "dlopen %4095s %ld", path, &n) == 2) {
			void *h = dlopen(path, RTLD_NOW);
			void (*fire)(long) = h ? (void (*)(long))dlsym(h, "plugin_fire") : NULL;
			if (fire) {
				fire(n);
				printf("dlopened %ld\n", n);
			} else {
				printf("dlopen failed: %s\n", dlerror());
			}
		} else if (sscanf(line, "fork %ld", &n) == 1) {
			if (open) {
				handler_ticks = n;
				raise(SIGUSR1);
			} else {
				fork_ticks(n);
			}
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	return 0;
}
