/*
 * A program with an SDT probe no jump can reach, as PostgreSQL's are: its
 * nop right after a call (the call's return lands on it, so no run may
 * start before it) and three bytes before its function's end (no run of
 * five bytes from it).  The engine can only make it an int3 probe; the
 * tool arms it with the kernel's uprobe instead where it may.
 *
 *   trapsite_target
 *
 * The probe, trapsite:after_call, has an argument of each kind an SDT note
 * writes: a callee-saved register (8@%rbx: a), a slot on the stack (8@0(%rsp):
 * b), a constant (-4@$-7), a global by its rip-relative address
 * (8@tsite_global(%rip)), the call's result in %rax (-8@%rax: 3a,
 * negative for a < 0) and a string's address (8@%rcx).  It has a
 * semaphore: the program calls tsite_fn only while it is raised, as
 * programs built with <sys/sdt.h> test their *_ENABLED() macros, and
 * counts the calls it made.  Before each call, trapsite:before (8@REG: i)
 * is an SDT nop in the loop that the engine makes a jump: the two probes'
 * events alternate, one from the agent's rings, one from the kernel's.
 *
 * Prints "ready PID", then reads commands from stdin:
 *
 *   run N         for i in 0..N-1, a = i - N/2, b = 7i + 1, s = the i % 3-th
 *                 of "alpha", "beta", "gamma": "ran N fired F" (F: calls
 *                 made with the semaphore raised)
 *   exec          exec itself (the same pid, a new program: "ready PID" again)
 *   fork N        a child of fork does run N's loop and exits 0 when every
 *                 call was made: "forked N status S" (its wait status)
 *   hammer K S    K threads blocking every signal do run 100's loop over and
 *                 over for S seconds, 1 ms apart: "hammered K fired F"
 *   threads K N   K threads, each blocking every signal (SIGTRAP too), do
 *                 the same loop: "threaded K N fired F"
 *
 * and exits 0 at end of stdin.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "selftests/sdt_note_asm.h"

long tsite_global = 0x1234567;
/* The probe's semaphore, where <sys/sdt.h> puts them. */
__attribute__((section(".probes"), used)) volatile unsigned short tsite_sem;

long tsite_helper(long a);
long tsite_fn(long a, long b, const char *s);
__asm__(".pushsection .text\n"
	".globl tsite_helper\n"
	".type tsite_helper,@function\n"
	"tsite_helper:\n"
	"	lea (%rdi,%rdi,2),%rax\n"
	"	ret\n"
	".size tsite_helper, .-tsite_helper\n"
	".globl tsite_fn\n"
	".type tsite_fn,@function\n"
	"tsite_fn:\n"
	"	push %rbx\n"
	"	push %rsi\n"
	"	mov %rdi,%rbx\n"
	"	mov %rdx,%rcx\n"
	"	call tsite_helper\n"
	"990:	nop\n"
	"	pop %rsi\n"
	"	pop %rbx\n"
	"	ret\n"
	".size tsite_fn, .-tsite_fn\n"
	".popsection\n"
	SDT_NOTE_ASM("trapsite", "after_call", "tsite_sem", "8@%rbx 8@0(%rsp) -4@$-7 8@tsite_global(%rip) -8@%rax 8@%rcx")
	SDT_BASE_ASM);

static const char *const texts[] = { "alpha", "beta", "gamma" };

/* trapsite:before, with i: an SDT nop in the loop, which the engine
 * widens into a jump; its events and after_call's alternate. */
#define BEFORE_PROBE(i) __asm__ __volatile__("990: nop\n" SDT_NOTE_ASM("trapsite", "before", "0", "8@%0")::"r"(i))

static long loop(long n)
{
	long fired = 0;
	for (long i = 0; i < n; i++)
		if (tsite_sem) {
			BEFORE_PROBE(i);
			tsite_fn(i - n / 2, 7 * i + 1, texts[i % 3]);
			fired++;
		}
	return fired;
}

static atomic_long fired_all;
static long per_thread;
static double hammer_until; /* hammer: CLOCK_MONOTONIC seconds */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	sigset_t all;
	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (hammer_until > 0)
		while (now() < hammer_until) {
			atomic_fetch_add(&fired_all, loop(per_thread));
			usleep(1000); /* a tracer's drain gets a core now and then */
		}
	else
		atomic_fetch_add(&fired_all, loop(per_thread));
	return NULL;
}

int main(int argc, char **argv)
{
	char line[128];
	long k, n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		double secs;
		if (sscanf(line, "hammer %ld %lf", &k, &secs) == 2 && k > 0 && k <= 64) {
			pthread_t t[64];
			per_thread = 100;
			hammer_until = now() + secs;
			atomic_store(&fired_all, 0);
			for (long i = 0; i < k; i++)
				pthread_create(&t[i], NULL, worker, NULL);
			for (long i = 0; i < k; i++)
				pthread_join(t[i], NULL);
			hammer_until = 0;
			printf("hammered %ld fired %ld\n", k, atomic_load(&fired_all));
		} else if (sscanf(line, "threads %ld %ld", &k, &n) == 2 && k > 0 && k <= 64) {
			pthread_t t[64];
			per_thread = n;
			atomic_store(&fired_all, 0);
			for (long i = 0; i < k; i++)
				pthread_create(&t[i], NULL, worker, NULL);
			for (long i = 0; i < k; i++)
				pthread_join(t[i], NULL);
			printf("threaded %ld %ld fired %ld\n", k, n, atomic_load(&fired_all));
		} else if (!strcmp(line, "exec\n")) {
			execv("/proc/self/exe", argv);
			printf("exec failed\n");
		} else if (sscanf(line, "fork %ld", &n) == 1) {
			int st = 0;
			pid_t c = fork();
			if (c == 0)
				_exit(loop(n) == n ? 0 : 1);
			waitpid(c, &st, 0);
			printf("forked %ld status %d\n", n, st);
		} else if (sscanf(line, "run %ld", &n) == 1) {
			printf("ran %ld fired %ld\n", n, loop(n));
		}
	}
	return 0;
}
