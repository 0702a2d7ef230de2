/*
 * Ring buffer and clock costs, side by side in one run.  Prints rows
 * "label | value | unit"; every value is the median of RUNS runs.
 *
 * DJP_BENCH_SECONDS sets the length of the sustained-rate run (default 10).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/ring.h"

uint64_t djp_arch_copy_str(char *dst, const char *src, uint64_t max); /* arch/x86/copy_str.S */
#include "bench/bench.h"

#define RUNS 7
#define N_EVENTS 2000000

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void row(const char *label, double value, const char *unit)
{
	printf("%s | %.2f | %s\n", label, value, unit);
	fflush(stdout);
}

static struct djp_region *region(unsigned nslots, size_t ring_size, unsigned mode)
{
	struct djp_ring_opts o = { .sz = sizeof(o), .nslots = nslots, .ring_size = ring_size, .mode = mode };
	struct djp_region *r = djp_region_create(&o);
	if (!r) {
		perror("djp_region_create");
		exit(1);
	}
	return r;
}

static double clock_ns(void)
{
	uint64_t t0 = djp_clock_monotonic_ns(), sum = 0;
	for (int i = 0; i < N_EVENTS; i++)
		sum += djp_clock_raw();
	__asm__ volatile("" ::"r"(sum));
	return (double)(djp_clock_monotonic_ns() - t0) / N_EVENTS;
}

/* ns per record of 2 integer arguments. */
static double record_ns(struct djp_region *r, int n)
{
	uint64_t a[2] = { 1, 2 }, t0 = djp_clock_monotonic_ns();
	for (int i = 0; i < n; i++) {
		a[0] = (uint64_t)i;
		djp_ring_record(r, 1, a, 2, 0, 0);
	}
	return (double)(djp_clock_monotonic_ns() - t0) / n;
}

static double record_str_ns(struct djp_region *r, int n, uint32_t mask)
{
	uint64_t a[2] = { 1, (uintptr_t) "a string of some length" }, t0 = djp_clock_monotonic_ns();
	for (int i = 0; i < n; i++)
		djp_ring_record(r, 1, a, 2, mask, 0);
	return (double)(djp_clock_monotonic_ns() - t0) / n;
}

/* A hit amid other work: the loop's time with a record, minus without. */
static uint64_t work(uint64_t x)
{
	for (int k = 0; k < 40; k++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static double record_in_work_ns(struct djp_region *r, int n)
{
	uint64_t a[2] = { 1, 2 }, x = 1, t0, best_without = UINT64_MAX, best_with = UINT64_MAX;

	/* alternate the two loops and keep the best of each, against noise */
	for (int rep = 0; rep < 5; rep++) {
		t0 = djp_clock_monotonic_ns();
		for (int i = 0; i < n; i++)
			x = work(x);
		t0 = djp_clock_monotonic_ns() - t0;
		best_without = t0 < best_without ? t0 : best_without;
		t0 = djp_clock_monotonic_ns();
		for (int i = 0; i < n; i++) {
			x = work(x);
			a[0] = x;
			djp_ring_record(r, 1, a, 2, 0, 0);
		}
		t0 = djp_clock_monotonic_ns() - t0;
		best_with = t0 < best_with ? t0 : best_with;
	}
	__asm__ volatile("" ::"r"(x));
	return ((double)best_with - (double)best_without) / n;
}

static int nop_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	(*(uint64_t *)arg) += ev->args[0];
	return 0;
}

/* Discard mode with the reader in the loop: record a batch, drain it. */
static double discard_record_ns(void)
{
	struct djp_region *r = region(4, 1 << 20, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct djp_drain_ops ops = { .event = nop_event };
	uint64_t sink = 0, spent = 0;
	for (int b = 0; b < N_EVENTS / 20000; b++) {
		uint64_t t0 = djp_clock_monotonic_ns();
		record_ns(r, 20000);
		spent += djp_clock_monotonic_ns() - t0;
		djp_consumer_drain(c, &ops, &sink);
	}
	djp_consumer_close(c);
	djp_region_destroy(r);
	return (double)spent / (N_EVENTS / 20000 * 20000);
}

struct par {
	struct djp_region *r;
	pthread_barrier_t *bar;
	double ns;
};

static void *par_thread(void *arg)
{
	struct par *p = arg;
	pthread_barrier_wait(p->bar);
	p->ns = record_ns(p->r, N_EVENTS);
	return NULL;
}

static double spin_ns(int n)
{
	uint64_t x = 1, t0 = djp_clock_monotonic_ns();
	for (int i = 0; i < n; i++)
		x = work(x);
	__asm__ volatile("" ::"r"(x));
	return (double)(djp_clock_monotonic_ns() - t0) / n;
}

static void *spin_thread(void *arg)
{
	struct par *p = arg;
	pthread_barrier_wait(p->bar);
	p->ns = spin_ns(N_EVENTS / 10);
	return NULL;
}

/* What the machine itself gives two threads: the same ratio for a loop of
 * plain arithmetic (two SMT siblings, or two busy vCPUs on one core, give
 * about 0.5 whatever the code). */
static double two_thread_machine_ratio(void)
{
	pthread_barrier_t bar;
	struct par p[2] = { { NULL, &bar, 0 }, { NULL, &bar, 0 } };
	pthread_t th[2];
	double single = spin_ns(N_EVENTS / 10);

	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, spin_thread, &p[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	return single / (p[0].ns > p[1].ns ? p[0].ns : p[1].ns);
}

static double two_thread_ratio(void)
{
	double single_ns;
	struct djp_region *r = region(4, 1 << 20, DJP_RING_OVERWRITE);
	pthread_barrier_t bar;
	struct par p[2] = { { r, &bar, 0 }, { r, &bar, 0 } };
	pthread_t th[2];

	single_ns = record_ns(r, N_EVENTS); /* the same ring, just before */
	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, par_thread, &p[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	djp_region_destroy(r);
	/* the slower thread's rate over the single-thread rate */
	return single_ns / (p[0].ns > p[1].ns ? p[0].ns : p[1].ns);
}

static double drain_meps(void)
{
	struct djp_region *r = region(2, 1 << 26, DJP_RING_DISCARD);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct djp_drain_ops ops = { .event = nop_event };
	uint64_t sink = 0, a[2] = { 1, 2 }, t0;
	long n;
	for (int i = 0; i < N_EVENTS; i++)
		djp_ring_record(r, 1, a, 2, 0, 0);
	t0 = djp_clock_monotonic_ns();
	n = djp_consumer_drain(c, &ops, &sink);
	t0 = djp_clock_monotonic_ns() - t0;
	djp_consumer_close(c);
	djp_region_destroy(r);
	return n * 1e3 / (double)t0;
}

/* 1 M events/s for `seconds`, default buffers, the consumer in another
 * process polling every 10 ms.  Returns the events lost. */
static double sustained_lost(int seconds)
{
	struct djp_region *r = region(256, 1 << 20, DJP_RING_DISCARD);
	struct djp_consumer *c;
	int pfd[2];
	uint64_t a[2] = { 0, 0 }, t0, sent = 0, total = (uint64_t)seconds * 1000000, lost = 0;
	pid_t pid;

	if (pipe2(pfd, O_NONBLOCK) < 0)
		exit(1);
	pid = fork();
	if (pid == 0) {
		struct djp_drain_ops ops = { .event = nop_event };
		uint64_t sink = 0;
		char b;
		c = djp_consumer_open(djp_region_fd(r));
		if (!c)
			_exit(1);
		while (read(pfd[0], &b, 1) != 1) {
			struct timespec nap = { 0, 10000000 };
			djp_consumer_drain(c, &ops, &sink);
			nanosleep(&nap, NULL);
		}
		_exit(0);
	}
	t0 = djp_clock_monotonic_ns();
	while (sent < total) {
		uint64_t due = (djp_clock_monotonic_ns() - t0) / 1000; /* one a microsecond */
		for (; sent < due && sent < total; sent++) {
			a[0] = sent;
			djp_ring_record(r, 1, a, 2, 0, 0);
		}
	}
	if (write(pfd[1], "x", 1) != 1)
		exit(1);
	waitpid(pid, NULL, 0);
	c = djp_consumer_open(djp_region_fd(r));
	for (unsigned i = 0; c && i < djp_consumer_nslots(c); i++) {
		struct djp_slot_stats st;
		djp_consumer_slot_stats(c, i, &st);
		lost += st.lost_full + st.lost_nested;
	}
	lost += c ? djp_consumer_lost_noslot(c) : 0;
	djp_consumer_close(c);
	djp_region_destroy(r);
	return (double)lost;
}

int main(void)
{
	double v[10][RUNS], single;
	const char *env = getenv("DJP_BENCH_SECONDS");
	int seconds = env ? atoi(env) : 10;
	struct djp_region *ow = region(4, 1 << 20, DJP_RING_OVERWRITE);

	djp_clock_init();
	record_ns(ow, N_EVENTS); /* warm up: claim the slot, fault the ring in */
	for (int run = 0; run < RUNS; run++) {
		v[0][run] = clock_ns();
		v[1][run] = record_ns(ow, N_EVENTS);
		v[2][run] = discard_record_ns();
		v[3][run] = record_str_ns(ow, N_EVENTS / 20, 0);
		v[4][run] = record_str_ns(ow, N_EVENTS / 20, 2);
		/* the copy a preloaded agent gives the ring (kernel/safe_copy.c):
		 * its fault handler costs nothing until a copy faults, so the
		 * copy alone is measured here, on a good string */
		djp_ring_set_fast_copy(djp_arch_copy_str);
		v[9][run] = record_str_ns(ow, N_EVENTS / 20, 2);
		djp_ring_set_fast_copy(NULL);
		v[5][run] = drain_meps();
		v[7][run] = record_in_work_ns(ow, N_EVENTS / 10);
	}
	single = median(v[1], RUNS);
	row(djp_clock_params()->kind == DJP_CLOCK_TSC ? "ring: clock read (rdtsc)" : "ring: clock read (vDSO)",
	    median(v[0], RUNS), "ns");
	row("ring: record 2 int args, 1 thread, overwrite", single, "ns");
	row("ring: record 2 int args, 1 thread, discard", median(v[2], RUNS), "ns");
	row("ring: record 2 int args amid other work, added", median(v[7], RUNS), "ns");
	row("ring: %s arg copy (process_vm_readv), extra", median(v[4], RUNS) - median(v[3], RUNS), "ns");
	{
		double fast = median(v[9], RUNS) - median(v[3], RUNS);
		/* issue 13's "a few ns" for a string read in the target */
		printf("ring: %%s arg copy in the target (fault-handled), extra, 23 bytes | %.2f ns | <= 10 ns | %s\n", fast,
		       fast <= 10 ? "ok" : "over");
	}
	for (int run = 0; run < RUNS; run++) {
		v[6][run] = two_thread_ratio();
		v[8][run] = two_thread_machine_ratio();
	}
	row("ring: 2 threads, per-thread rate / 1-thread rate", median(v[6], RUNS), "ratio");
	row("ring: 2 threads, same ratio for plain arithmetic (machine)", median(v[8], RUNS), "ratio");
	row("ring: consumer drain", median(v[5], RUNS), "M events/s");
	if (seconds > 0) {
		double lost = sustained_lost(seconds);
		char label[96];
		snprintf(label, sizeof(label), "ring: 1 M events/s for %d s, default buffers, lost", seconds);
		row(label, lost, "events");
	}
	djp_region_destroy(ow);
	return 0;
}
