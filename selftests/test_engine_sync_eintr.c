/*
 * Arming and disarming must not make the application's system calls fail,
 * whichever way other cores are serialised (membarrier, or the fallback
 * that DJP_SYNC=freeze once made a freeze of every thread by signal): a
 * thread blocked in sleep, nanosleep, poll, read or a futex wait is not
 * running any site, and none of those calls may see EINTR or return early
 * because djprobe armed or disarmed a marker.
 *
 * More threads than cores block in each kind of call, with timeouts that
 * wake them all along, while the main thread connects and disconnects over
 * and over (three syncs each), and one more thread runs the marker all
 * along, so every sync has a running thread to serialise.
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"

enum { K_SLEEP, K_NANOSLEEP, K_POLL, K_READ, K_FUTEX, NKINDS };
#define PER_KIND 3
#define CYCLES 100

static const char *const kind_name[NKINDS] = { "sleep", "nanosleep", "poll", "read", "futex" };
static atomic_int stop;
static atomic_long done_calls[NKINDS], bad_calls[NKINDS], hits;
static int bad_errno[NKINDS];
static int read_pipe[2], idle_pipe[2];
static uint32_t futex_word;

__attribute__((noinline)) static void eintr_site(long i)
{
	MARK(sync_eintr_site, "i=%ld", i);
	__asm__ volatile("" ::: "memory");
}

static void bad(int k, int err)
{
	bad_errno[k] = err;
	atomic_fetch_add(&bad_calls[k], 1);
}

static pid_t blocker_tid[NKINDS * PER_KIND];

static void *blocker(void *arg)
{
	int i = (int)(intptr_t)arg, k = i % NKINDS;
	atomic_store((_Atomic pid_t *)&blocker_tid[i], (pid_t)syscall(SYS_gettid));
	while (!atomic_load(&stop)) {
		switch (k) {
		case K_SLEEP:
			/* sleep(3) returns the seconds left when interrupted */
			if (sleep(1) != 0)
				bad(k, EINTR);
			break;
		case K_NANOSLEEP: {
			struct timespec ts = { 0, 30 * 1000000 };
			if (nanosleep(&ts, NULL))
				bad(k, errno);
			break;
		}
		case K_POLL: {
			struct pollfd p = { idle_pipe[0], POLLIN, 0 };
			if (poll(&p, 1, 40) != 0)
				bad(k, errno);
			break;
		}
		case K_READ: {
			char c;
			ssize_t n = read(read_pipe[0], &c, 1);
			if (n != 1)
				bad(k, n < 0 ? errno : 0);
			break;
		}
		case K_FUTEX: {
			struct timespec ts = { 0, 40 * 1000000 };
			long r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
			if (r != -1 || errno != ETIMEDOUT)
				bad(k, r < 0 ? errno : 0);
			break;
		}
		}
		atomic_fetch_add(&done_calls[k], 1);
	}
	return NULL;
}

static void *runner(void *arg)
{
	(void)arg;
	for (long i = 0; !atomic_load(&stop); i++)
		eintr_site(i);
	return NULL;
}

/* Is thread tid blocked in the system call that kind k makes?  Its
 * /proc/self/task/TID/syscall says which call it is in, if any. */
static bool in_call(pid_t tid, int k)
{
	static const long nr[NKINDS][2] = {
		[K_SLEEP] = { SYS_clock_nanosleep, SYS_nanosleep },
		[K_NANOSLEEP] = { SYS_clock_nanosleep, SYS_nanosleep },
		[K_POLL] = { SYS_poll, SYS_ppoll },
		[K_READ] = { SYS_read, SYS_read },
		[K_FUTEX] = { SYS_futex, SYS_futex },
	};
	char path[64];
	long got = -2;
	FILE *f;
	if (!tid)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	if (!(f = fopen(path, "r")))
		return false;
	if (fscanf(f, "%ld", &got) != 1)
		got = -2;
	fclose(f);
	return got == nr[k][0] || got == nr[k][1];
}

static void on_hit(const struct djp_hit *hit, void *data)
{
	(void)hit, (void)data;
	atomic_fetch_add(&hits, 1);
}

static void blocked_calls_under_arming(const char *sync)
{
	pthread_t th[NKINDS * PER_KIND], run;

	if (sync)
		setenv("DJP_SYNC", sync, 1);
	CHECK(pipe(read_pipe) == 0 && pipe(idle_pipe) == 0);
	for (int i = 0; i < NKINDS * PER_KIND; i++)
		CHECK(pthread_create(&th[i], NULL, blocker, (void *)(intptr_t)i) == 0);
	CHECK(pthread_create(&run, NULL, runner, NULL) == 0);
	/* every blocker in its call (the kernel says so), not a time that
	 * a loaded machine may overrun */
	for (int i = 0, tries = 0; i < NKINDS * PER_KIND; tries++) {
		if (in_call(atomic_load((_Atomic pid_t *)&blocker_tid[i]), i % NKINDS)) {
			i++;
			continue;
		}
		CHECK(tries < 60000);
		usleep(500);
	}
	/* CYCLES connects and disconnects, each once the marker has been hit
	 * since it was armed (the runner ran through a site being changed) */
	for (int cycles = 0; cycles < CYCLES; cycles++) {
		long before;
		int id = djp_connect("sync_eintr_site", on_hit, NULL, 0);
		CHECK(id >= 0);
		before = atomic_load(&hits);
		for (int tries = 0; atomic_load(&hits) == before; tries++) {
			CHECK(tries < 10000000);
			sched_yield();
		}
		CHECK_EQ(djp_disconnect(id), 0);
		if ((cycles + 1) % 8 == 0) /* feed the readers now and then */
			for (int i = 0; i < PER_KIND; i++)
				CHECK(write(read_pipe[1], "x", 1) == 1);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < PER_KIND; i++)
		CHECK(write(read_pipe[1], "x", 1) == 1);
	for (int i = 0; i < NKINDS * PER_KIND; i++)
		pthread_join(th[i], NULL);
	pthread_join(run, NULL);
	printf("# %d connect/disconnect cycles, %ld hits\n", CYCLES, atomic_load(&hits));
	for (int k = 0; k < NKINDS; k++)
		printf("# %s: %ld calls, %ld failed or ended early (last errno %d)\n", kind_name[k],
		       atomic_load(&done_calls[k]), atomic_load(&bad_calls[k]), bad_errno[k]);
	CHECK(atomic_load(&hits) >= CYCLES);
	for (int k = 0; k < NKINDS; k++) {
		CHECK_EQ(atomic_load(&bad_calls[k]), 0);
		CHECK(atomic_load(&done_calls[k]) > 0);
	}
}

TEST_TIMEOUT(freeze_sync_never_interrupts_blocked_system_calls, 60)
{
	blocked_calls_under_arming("freeze");
}

TEST_TIMEOUT(membarrier_sync_never_interrupts_blocked_system_calls, 60)
{
	blocked_calls_under_arming(NULL);
}
