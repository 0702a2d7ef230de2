/*
 * A program with SIGSEGV handlers of every kind, traced with string
 * copies on (its marker has a %s): what each of its own faults does must
 * be what it does without djp (selftests/test_trace_fault_forward.c).
 * Nothing of djprobe but the marker; the agent comes by LD_PRELOAD or
 * injection.
 *
 *   fault_target [--block-faults]
 *
 * --block-faults: a thread that blocks SIGSEGV (the raw system call, as a
 * mask from before the agent) for the whole run, so that the agent cannot
 * keep a fault handler and copies by process_vm_readv; and the main thread
 * opens the mask it may have inherited.
 *
 * Prints "ready PID", then reads one command a line from stdin:
 *
 *   copy       "copy fast" when a SIGSEGV handler the program never set is
 *              installed (the agent's), else "copy syscall"
 *   str        hit ft_str with a good string and a bad one: "str done"
 *   resethand  an SA_RESETHAND handler that prints "handler" and returns,
 *              then a fault: killed by SIGSEGV (exit 98 if called twice)
 *   ignore     SIGSEGV ignored, then a fault: killed by SIGSEGV
 *   defer      a handler without SA_NODEFER, with SIGUSR1 in its sa_mask,
 *              on an alternate stack: it checks both are blocked and its
 *              stack, prints "handler ok", and faults itself: killed by
 *              SIGSEGV (exit 97 if entered again, 93-96 a failed check)
 *   mainstack  a handler without SA_ONSTACK on a thread with an
 *              alternate stack: it prints "handler on its stack" and exits
 *              5 when its frame is not on the alternate stack (95 if it is)
 *   raw        a handler that exits 99, installed by the raw rt_sigaction
 *              system call; waits (5 s at most) until sigaction() shows it
 *              ("released"), hits ft_str with a bad string and exits 7
 *
 * and exits 0 at end of stdin.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <djprobe/marker.h>

#define ALT_SIZE (64 * 1024)

static char *alt;
static const char *unmapped; /* a string no load can read: PROT_NONE */
static volatile sig_atomic_t calls;

/* An address that faults, hidden from the compiler. */
static volatile int *bad_address(uintptr_t a)
{
	volatile int *p;
	__asm__("" : "=r"(p) : "0"(a));
	return p;
}

static void say(const char *s)
{
	write(1, s, strlen(s));
}

static void hit(const char *s)
{
	MARK(ft_str, "s=%s", s);
}

/* Never reached: the handlers that use it exit (x86-64 wants one). */
static void no_return(void)
{
	_exit(100);
}

/* The kernel's struct sigaction, for the raw system calls. */
struct k_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static void *blocker(void *arg)
{
	uint64_t segv = 1ull << (SIGSEGV - 1);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &segv, NULL, 8);
	for (;;)
		pause();
	return arg;
}

static void returns(int sig)
{
	(void)sig;
	if (++calls > 1)
		_exit(98);
	say("handler\n");
}

static void defers(int sig)
{
	uint64_t cur = 0;
	char here;
	(void)sig;
	if (calls++)
		_exit(97);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, 8);
	if (!(cur & 1ull << (SIGSEGV - 1)))
		_exit(93);
	if (!(cur & 1ull << (SIGUSR1 - 1)))
		_exit(94);
	if (&here < alt || &here >= alt + ALT_SIZE)
		_exit(95);
	say("handler ok\n");
	*bad_address(32) = 1;
	_exit(96);
}

static void off_alt(int sig)
{
	char here;
	(void)sig;
	if (&here >= alt && &here < alt + ALT_SIZE)
		_exit(95);
	say("handler on its stack\n");
	_exit(5);
}

static void exits_99(int sig)
{
	(void)sig;
	_exit(99);
}

static void run(const char *cmd)
{
	struct sigaction sa;
	struct k_sigaction k;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (!strcmp(cmd, "copy")) {
		memset(&k, 0, sizeof(k));
		syscall(SYS_rt_sigaction, SIGSEGV, NULL, &k, 8);
		say(k.handler != SIG_DFL ? "copy fast\n" : "copy syscall\n");
	} else if (!strcmp(cmd, "str")) {
		hit("good");
		hit(unmapped);
		say("str done\n");
	} else if (!strcmp(cmd, "resethand")) {
		sa.sa_handler = returns;
		sa.sa_flags = SA_RESETHAND;
		sigaction(SIGSEGV, &sa, NULL);
		*bad_address(16) = 1;
		_exit(91);
	} else if (!strcmp(cmd, "ignore")) {
		signal(SIGSEGV, SIG_IGN);
		*bad_address(16) = 1;
		_exit(91);
	} else if (!strcmp(cmd, "defer")) {
		stack_t ss = { .ss_size = ALT_SIZE };
		if (!(alt = ss.ss_sp = malloc(ALT_SIZE)) || sigaltstack(&ss, NULL))
			_exit(89);
		sa.sa_handler = defers;
		sa.sa_flags = SA_ONSTACK;
		sigaddset(&sa.sa_mask, SIGUSR1);
		sigaction(SIGSEGV, &sa, NULL);
		*bad_address(16) = 1;
		_exit(91);
	} else if (!strcmp(cmd, "mainstack")) {
		stack_t ss = { .ss_size = ALT_SIZE };
		if (!(alt = ss.ss_sp = malloc(ALT_SIZE)) || sigaltstack(&ss, NULL))
			_exit(89);
		sa.sa_handler = off_alt;
		sigaction(SIGSEGV, &sa, NULL);
		*bad_address(16) = 1;
		_exit(91);
	} else if (!strcmp(cmd, "raw")) {
		memset(&k, 0, sizeof(k));
		k.handler = exits_99;
		k.flags = 0x04000000; /* SA_RESTORER */
		k.restorer = no_return;
		if (syscall(SYS_rt_sigaction, SIGSEGV, &k, NULL, 8))
			_exit(90);
		for (int i = 0; i < 2500; i++) {
			if (!sigaction(SIGSEGV, NULL, &sa) && sa.sa_handler == exits_99) {
				say("released\n");
				break;
			}
			nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
		}
		hit(unmapped);
		_exit(7);
	}
}

int main(int argc, char **argv)
{
	char line[128];

	if (argc > 1 && !strcmp(argv[1], "--block-faults")) {
		uint64_t faults = 1ull << (SIGSEGV - 1) | 1ull << (SIGBUS - 1);
		pthread_t t;
		if (pthread_create(&t, NULL, blocker, NULL))
			return 2;
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &faults, NULL, 8);
	}
	if ((unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		return 2;
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		run(line);
	}
	return 0;
}
