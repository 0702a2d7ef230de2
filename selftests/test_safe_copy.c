/*
 * The in-process string copy and its fault handler (kernel/safe_copy.c):
 * the program's own faults still do what they did without us, its SIGSEGV
 * handler still runs, a mask that blocks the fault signals cannot come
 * back, and the copy is refused where a blocked signal would kill.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "kernel/engine.h"
#include "lib/real_signal.h"
#include "lib/ring.h"

extern uint64_t djp_arch_copy_str(char *dst, const char *src, uint64_t max);

/* An address that faults, hidden from the compiler's bounds checks. */
static volatile int *bad_address(uintptr_t a)
{
	volatile int *p;
	__asm__("" : "=r"(p) : "0"(a));
	return p;
}

/* Run fn in a child; its wait status. */
static int in_child(void (*fn)(void))
{
	int status;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		fn();
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return status;
}

/* fn in a child, which must exit 0 (its _exit codes say which check failed). */
static void child_passes(void (*fn)(void))
{
	int st = in_child(fn);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "child status %#x", st);
}

static void null_write(void)
{
	if (djp_safe_copy_enable())
		_exit(90);
	signal(SIGSEGV, SIG_DFL); /* recorded; ours stays */
	*bad_address(16) = 1;
	_exit(91);
}

TEST(safe_copy_program_fault_still_kills)
{
	int st = in_child(null_write);
	CHECK(WIFSIGNALED(st));
	CHECK_EQ(WTERMSIG(st), SIGSEGV);
}

static sigjmp_buf app_jb;
static volatile sig_atomic_t app_faults;

static void app_segv(int sig, siginfo_t *info, void *uc)
{
	(void)sig, (void)uc;
	app_faults += info->si_addr == (void *)(uintptr_t)24;
	siglongjmp(app_jb, 1);
}

static void app_handler_runs(void)
{
	struct sigaction sa, now;
	char buf[16];
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_segv;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask); /* blocks SIGSEGV while it runs: cleaned */
	if (djp_safe_copy_enable() || sigaction(SIGSEGV, &sa, NULL))
		_exit(90);
	/* the kernel still has ours; the program sees its own */
	if (djp_real_sigaction(SIGSEGV, NULL, &now) || now.sa_sigaction == app_segv)
		_exit(92);
	if (sigaction(SIGSEGV, NULL, &now) || now.sa_sigaction != app_segv)
		_exit(93);
	for (int i = 0; i < 3; i++)
		if (!sigsetjmp(app_jb, 1))
			*bad_address(24) = 1;
	if (app_faults != 3)
		_exit(94);
	/* and a bad copy after all that is still ours */
	if (djp_arch_copy_str(buf, (const char *)(uintptr_t)32, 8) >> 63 != 1)
		_exit(95);
	_exit(0);
}

TEST(safe_copy_program_handler_still_runs)
{
	child_passes(app_handler_runs);
}

static bool segv_blocked_now(void)
{
	sigset_t cur;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, 8);
	return sigismember(&cur, SIGSEGV) || sigismember(&cur, SIGBUS);
}

static void mask_kept_open(void)
{
	sigset_t all;
	if (djp_safe_copy_enable())
		_exit(90);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (segv_blocked_now())
		_exit(91);
	sigprocmask(SIG_SETMASK, &all, NULL);
	if (segv_blocked_now())
		_exit(92);
	_exit(0);
}

TEST(safe_copy_keeps_fault_signals_unblocked)
{
	child_passes(mask_kept_open);
}

static void *blocker(void *arg)
{
	pause();
	return arg;
}

/* A thread that blocked SIGSEGV before the handler came (the raw system
 * call: as a mask inherited from before the library): the fast copy is
 * refused, and the ring's copy stays safe. */
static void refused_when_blocked(void)
{
	sigset_t segv, old;
	pthread_t t;
	struct djp_ring_opts o = { .sz = sizeof(o) };
	struct djp_region *r;
	uint64_t arg = 40;

	sigemptyset(&segv);
	sigaddset(&segv, SIGSEGV);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &segv, &old, 8);
	if (pthread_create(&t, NULL, blocker, NULL))
		_exit(89);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, 8);
	if (djp_safe_copy_enable() != -EDEADLK)
		_exit(90);
	if (!(r = djp_region_create(&o)) || djp_ring_record(r, 1, &arg, 1, 1, 0))
		_exit(91);
	_exit(0);
}

TEST(safe_copy_refused_when_a_thread_blocks_faults)
{
	child_passes(refused_when_blocked);
}

TEST(safe_copy_copies_and_bounds)
{
	char buf[64];
	static const char text[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	for (size_t off = 0; off < 9; off++)
		for (uint64_t max = 1; max < 40; max += 3) {
			uint64_t r;
			size_t len = strlen(text + off);
			memset(buf, 0x55, sizeof(buf));
			r = djp_arch_copy_str(buf, text + off, max);
			if (len < max) {
				CHECK_EQ(r, len);
				CHECK_STR(buf, text + off);
			} else {
				CHECK_EQ(r, max);
				CHECK(!memcmp(buf, text + off, max));
			}
			/* the word holding the NUL is stored whole, but never
			 * a byte at or past max */
			for (size_t i = max; i < sizeof(buf); i++)
				CHECK_EQ((unsigned char)buf[i], 0x55);
		}
}

/*
 * Strings that end at the last byte of a page with nothing mapped after it,
 * and strings that run into that page, from every alignment and of every
 * length up to 40: the first kind copies without a fault (no word read
 * past the NUL leaves the page), the second faults with exactly the bytes
 * the page held copied.  Short bounds from every alignment too.
 */
static void page_edges(void)
{
	char *map, *end, buf[64];
	long pg = sysconf(_SC_PAGESIZE);
	if (djp_safe_copy_enable())
		_exit(90);
	map = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map + pg, (size_t)pg, PROT_NONE))
		_exit(91);
	end = map + pg;
	for (size_t len = 0; len < 40; len++) {
		char *s = end - len - 1;
		uint64_t r;
		memset(map, 'x', (size_t)pg);
		s[len] = 0;
		memset(buf, 0x55, sizeof(buf));
		r = djp_arch_copy_str(buf, s, 48);
		if (r != len || memcmp(buf, s, len + 1))
			_exit(92);
		/* no NUL before the unmapped page: a fault after len + 1 bytes */
		s[len] = 'y';
		r = djp_arch_copy_str(buf, s, 48);
		if (r != (1ull << 63 | (len + 1)) || memcmp(buf, s, len + 1))
			_exit(93);
	}
	for (size_t off = 0; off < 16; off++)
		for (uint64_t max = 1; max <= 10; max++)
			for (size_t len = 0; len < 12; len++) {
				char *s = map + 64 + off;
				uint64_t r;
				memset(map, 'x', 128);
				s[len] = 0;
				memset(buf, 0x55, sizeof(buf));
				r = djp_arch_copy_str(buf, s, max);
				if (r != (len < max ? len : max) || memcmp(buf, s, len < max ? len + 1 : max))
					_exit(94);
				for (size_t i = max; i < sizeof(buf); i++)
					if ((unsigned char)buf[i] != 0x55)
						_exit(95);
			}
	_exit(0);
}

TEST(safe_copy_page_edges_and_short_bounds)
{
	child_passes(page_edges);
}
