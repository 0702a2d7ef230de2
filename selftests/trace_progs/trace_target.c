/*
 * The target of the `djp trace` tests.  Its markers are header-only and it
 * is linked without libdjprobe (selftests/trace.mk), so it gets the agent
 * only by LD_PRELOAD, as a traced command would.
 *
 *   trace_target [--ticks N] [--tick-us US] [--exit CODE] [--no-stdin] [--burst K]
 *
 * Marker tt_main fires once at the start of main (the -c "armed before main"
 * test looks for it).  A ticker thread fires tt_tick every --tick-us
 * microseconds (default 2000), --ticks times (default: forever), with an int,
 * a string and a pointer.  The main thread prints "ready PID" and then reads
 * commands from stdin, one per line, answering each on stdout:
 *
 *   burst N         fire tt_burst N times as fast as it can: "burst N NS"
 *   fork N K [RATE [die]]
 *                   fork N children, each firing tt_burst K times (RATE a
 *                   second each, paced, when given) and exiting, or with
 *                   "die" killing itself (SIGKILL) right after its last;
 *                   wait for them all: "forked M", M the children that
 *                   ended as they were told to
 *   dlopen PATH N   load PATH and call its plugin_fire(N): "dlopen ok"
 *   fire N          call plugin_fire(N) again: "fired N"
 *   kinds N         fire tt_kinds with arguments of every size and sign
 *   evil N          fire tt_evil N times with a string full of control bytes
 *   strings N       fire tt_strs N times with pointers (%p, never read by
 *                   the marker's format) to: a string, NULL, a nonsense
 *                   address, an unmapped page, a PROT_NONE page, a string
 *                   running into it: "strings done"
 *   exec            exec itself again (--ticks 0), keeping its pid and stdin
 *   spawn N K       fork N children that each exec this program with
 *                   --no-stdin --ticks 0 --burst K (fire tt_burst K times
 *                   at the start of main, then exit); wait: "spawned M",
 *                   M the children that exited 0
 *   forkarm N       spin until tt_forkarm is armed, then fork a child at
 *                   once that fires it N times: "forkarm 1" when it
 *                   exited 0
 *   block           block every signal in the main thread (sigprocmask, as
 *                   a server does around its fork): "blocked"
 *   membarrier      whether the process is registered for membarrier's
 *                   SYNC_CORE (the agent registers as it starts, while the
 *                   process has one thread): "membarrier sync_core 0", or
 *                   the error, "membarrier sync_core EPERM" when it is not
 *   crash           die of SIGSEGV
 *   exit CODE       exit(CODE)
 *
 * At end of stdin (or at once with --no-stdin) it waits for the ticker and
 * exits with --exit CODE (default 0).
 */
#include <djprobe/marker.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long ticks = -1, tick_us = 2000;


static void *ticker(void *arg)
{
	static const char *const names[] = { "alpha", "beta", "gamma" };
	(void)arg;
	for (long i = 0; ticks < 0 || i < ticks; i++) {
		const char *name = names[i % 3];
		MARK(tt_tick, "i=%d name=%s p=%p", (int)i, name, (void *)name);
		usleep((useconds_t)tick_us);
	}
	return NULL;
}

__attribute__((noinline)) static void burst(long n)
{
	for (long i = 0; i < n; i++) {
		MARK(tt_burst, "a=%d b=%ld", (int)i, i * 2);
		__asm__ volatile("" ::: "memory");
	}
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* n events at `rate` a second (0: as fast as it can), in slices of a
 * millisecond's worth: the load a steady workload puts on the tool. */
static void paced_burst(long n, long rate)
{
	long long t0 = now_ns();
	long done = 0;
	if (rate <= 0) {
		burst(n);
		return;
	}
	while (done < n) {
		long due = (long)((now_ns() - t0) * rate / 1000000000LL) + 1, step = due - done;
		if (step > n - done)
			step = n - done;
		if (step > 0) {
			burst(step);
			done += step;
		} else {
			usleep(1000);
		}
	}
}

/* tt_forkarm's one site, alone in its function */
__attribute__((noinline)) static void forkarm_site(long i)
{
	MARK(tt_forkarm, "i=%ld", i);
	__asm__ volatile("" ::: "memory");
}

/* forkarm N: spin until tt_forkarm's NOP changes (a tool armed it), then
 * fork at once a child that fires it N times; "forkarm M", M the
 * children that exited 0 (1), or "forkarm timeout" after 30 s. */
static void forkarm(long n)
{
	static const unsigned char nop6[] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const volatile unsigned char *p = (const volatile unsigned char *)forkarm_site, *site = NULL;
	long long t0 = now_ns();
	int st;
	pid_t c;

	for (int i = 0; i < 64 && !site; i++)
		if (!memcmp((const void *)(p + i), nop6, sizeof(nop6)))
			site = p + i;
	if (!site) {
		printf("forkarm no site\n");
		return;
	}
	while (site[0] == 0x66)
		if (now_ns() - t0 > 30000000000LL) {
			printf("forkarm timeout\n");
			return;
		}
	if ((c = fork()) == 0) {
		for (long i = 0; i < n; i++)
			forkarm_site(i);
		_exit(0);
	}
	printf("forkarm %d\n", c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && !WEXITSTATUS(st));
}

int main(int argc, char **argv)
{
	int code = 0, use_stdin = 1;
	char line[4096];
	pthread_t th;
	void (*fire)(long) = NULL;

	MARK(tt_main, "argc=%d", argc);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ticks") && i + 1 < argc)
			ticks = atol(argv[++i]);
		else if (!strcmp(argv[i], "--tick-us") && i + 1 < argc)
			tick_us = atol(argv[++i]);
		else if (!strcmp(argv[i], "--exit") && i + 1 < argc)
			code = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-stdin"))
			use_stdin = 0;
		else if (!strcmp(argv[i], "--burst") && i + 1 < argc)
			burst(atol(argv[++i]));
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_create(&th, NULL, ticker, NULL);
	printf("ready %d\n", (int)getpid());
	while (use_stdin && fgets(line, sizeof(line), stdin)) {
		char path[4096];
		long n, k;
		if (sscanf(line, "forkarm %ld", &n) == 1) {
			forkarm(n);
		} else if (sscanf(line, "burst %ld", &n) == 1) {
			long long t0 = now_ns();
			burst(n);
			printf("burst %ld %lld\n", n, now_ns() - t0);
		} else if (sscanf(line, "fork %ld %ld", &n, &k) == 2) {
			long ok = 0, rate = 0;
			char die[8] = "";
			sscanf(line, "fork %*d %*d %ld %7s", &rate, die);
			for (long i = 0; i < n; i++) {
				pid_t c = fork();
				if (c == 0) {
					paced_burst(k, rate);
					if (!strcmp(die, "die"))
						raise(SIGKILL);
					_exit(0);
				}
			}
			for (long i = 0; i < n; i++) {
				int st;
				if (wait(&st) > 0 && (strcmp(die, "die") ? WIFEXITED(st) && WEXITSTATUS(st) == 0
									: WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
					ok++;
			}
			printf("forked %ld\n", ok);
		} else if (sscanf(line, "dlopen %4095s %ld", path, &n) == 2) {
			void *h = dlopen(path, RTLD_NOW);
			fire = h ? (void (*)(long))dlsym(h, "plugin_fire") : NULL;
			if (fire)
				fire(n);
			printf("dlopen %s\n", fire ? "ok" : dlerror());
		} else if (sscanf(line, "fire %ld", &n) == 1 && fire) {
			fire(n);
			printf("fired %ld\n", n);
		} else if (sscanf(line, "kinds %ld", &n) == 1) {
			volatile signed char c = (signed char)-n;
			volatile short sh = (short)(-300 * n);
			volatile unsigned u = 4000000000u;
			volatile long l = -1234567890123L * n;
			MARK(tt_kinds, "c=%d s=%d u=%u l=%ld x=%x", c, sh, u, l, 0xbeefu);
			printf("kinds done\n");
		} else if (sscanf(line, "evil %ld", &n) == 1) {
			/* A string that would forge a line and retitle a
			 * terminal if printed raw. */
			static const char evil[] = "a\n1.0 1 tt_forged x=1\x1b]0;pwned\x07\x1b[2J\\z";
			for (long i = 0; i < n; i++)
				MARK(tt_evil, "s=%s", evil);
			printf("evil done\n");
		} else if (sscanf(line, "strings %ld", &n) == 1) {
			long pg = sysconf(_SC_PAGESIZE);
			char *m = mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			static const char good[] = "SELECT 1; -- \"quoted\"\n";
			if (m == MAP_FAILED)
				return 1;
			mprotect(m + pg, (size_t)pg, PROT_NONE);
			munmap(m + 2 * pg, (size_t)pg);
			memcpy(m + pg - 5, "tail!", 5); /* no NUL before the PROT_NONE page */
			for (long i = 0; i < n; i++)
				MARK(tt_strs, "good=%p null=%p bad=%p unmapped=%p none=%p cut=%p", (void *)good, (void *)0,
				     (void *)1, (void *)(m + 2 * pg), (void *)(m + pg), (void *)(m + pg - 5));

			munmap(m, 2 * (size_t)pg);
			printf("strings done\n");
		} else if (!strncmp(line, "block", 5)) {
			sigset_t all;
			sigfillset(&all);
			sigprocmask(SIG_BLOCK, &all, NULL);
			printf("blocked\n");
		} else if (sscanf(line, "spawn %ld %ld", &n, &k) == 2) {
			long ok = 0;
			char kk[32];
			snprintf(kk, sizeof(kk), "%ld", k);
			for (long i = 0; i < n; i++)
				if (fork() == 0) {
					execl("/proc/self/exe", argv[0], "--no-stdin", "--ticks", "0", "--burst", kk,
					      (char *)NULL);
					_exit(127);
				}
			for (long i = 0; i < n; i++) {
				int st;
				if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
					ok++;
			}
			printf("spawned %ld\n", ok);
		} else if (!strncmp(line, "exec", 4)) {
			fflush(stdout);
			execl("/proc/self/exe", argv[0], "--ticks", "0", (char *)NULL);
			printf("exec failed\n");
		} else if (!strncmp(line, "membarrier", 10)) {
			long r = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
			printf("membarrier sync_core %s\n", !r ? "0" : errno == EPERM ? "EPERM" : strerror(errno));
		} else if (!strncmp(line, "crash", 5)) {
			raise(SIGSEGV);
		} else if (sscanf(line, "exit %d", &code) == 1) {
			exit(code);
		}
	}
	pthread_join(th, NULL);
	return code;
}
