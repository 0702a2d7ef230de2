/*
 * `djp trace` costs, side by side in one run: rows "label | value | target |
 * status".  The recorder is connected in-process through the calls the
 * agent makes for a tool (djp_recorder_create, djp_recorder_connect), and a
 * consumer on the same region stands in for the tool.
 *
 *   recorded event, 2 integer arguments: ns per hit over the NOP, next to
 *   what it cannot do without, the clock read (rdtsc) and an armed marker
 *   with an empty lean handler, and its cost over their sum (target 1.3)
 *   the same event with the user stack (a script's ubacktrace():
 *   DJP_RECORD_USTACK): the walk and the pcs in the event, ns per hit
 *   2 threads on 2 cores: each one's rate / the single-thread rate
 *   drain rate of the consumer (what the tool reads per second)
 *   1 M events/s sustained for DJP_BENCH_SECONDS (default 10): lost events
 *
 * Every value is the median of RUNS runs, armed and unarmed interleaved;
 * between timed batches the ring is drained from the other core, as the
 * tool drains it.
 * The LTTng-UST comparison is bench/lttng (bench/lttng.mk), which prints
 * its rows after these when it could be built.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "kernel/agent/recorder.h"
#include "lib/ring.h"
#include "bench/bench.h"
#include "bench/drain_remote.h"

#define RUNS 7
#define BATCH 16384 /* events per timed batch: fits a 1 MiB ring (32 B each) */
#define BATCHES 16

ALIGNED void hit_marker(int a, long b)
{
	MARK(bench_trace_hit, "a=%d b=%ld", a, b);
}

/* What a recorded event is measured against: the clock read alone, and
 * a marker armed with an empty handler (the lean trampoline). */
ALIGNED void hit_clock(int a, long b)
{
	uint64_t ts = djp_clock_raw();
	(void)a;
	(void)b;
	__asm__ volatile("" ::"r"(ts));
}

ALIGNED void hit_lean(int a, long b)
{
	MARK(bench_trace_lean, "a=%d b=%ld", a, b);
}

ALIGNED void hit_stack(int a, long b)
{
	MARK(bench_trace_stack, "a=%d b=%ld", a, b);
}

static void empty_handler(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
}

static void row(const char *name, double value, const char *unit, double target, int lower_is_ok)
{
	if (target < 0) {
		printf("%s | %.3f %s | - | -\n", name, value, unit);
	} else {
		int ok = lower_is_ok ? value <= target : value >= target;
		printf("%s | %.3f %s | %s %.3g | %s\n", name, value, unit, lower_is_ok ? "<=" : ">=", target,
		       ok ? "ok" : "over");
	}
	fflush(stdout);
}

/* ---- the consumer ---------------------------------------------------------- */

static struct djp_recorder *rec;
static struct djp_consumer *cons;
static uint64_t consumed;
static unsigned stack_depth; /* of the events with a stack */

static int count_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	unsigned n;
	(void)arg;
	(void)tid;
	(void)slot;
	consumed += ev->nargs;
	if (djp_event_ustack(ev, &n) && n > stack_depth)
		stack_depth = n;
	return 0;
}

static const struct djp_drain_ops count_ops = { count_event, NULL };

static long drain(void)
{
	long n = djp_consumer_drain(cons, &count_ops, NULL);
	return n > 0 ? n : 0;
}

static uint64_t lost_total(void)
{
	uint64_t lost = djp_consumer_lost_noslot(cons);
	for (unsigned i = 0; i < djp_consumer_nslots(cons); i++) {
		struct djp_slot_stats st;
		if (!djp_consumer_slot_stats(cons, i, &st))
			lost += st.lost_full + st.lost_nested + st.overwritten;
	}
	return lost;
}

/* ---- per-hit cost ------------------------------------------------------------ */

/* ns per call of fn over BATCHES batches of BATCH, the ring drained
 * between them (outside the timed part) from the other core, as the tool
 * drains it (bench/drain_remote.h). */
static void drain_quietly(void)
{
	drain();
}

static void drain_between(fn_t fn)
{
	(void)fn;
	drain_remote_now();
}

static double batch_ns(fn_t fn)
{
	return timed_batches(fn, BATCHES, BATCH, drain_between);
}

/* The same with events that carry a stack: a quarter of the batch, so
 * that it still fits the ring (up to 8 pcs, 104 B an event). */
static double stack_batch_ns(fn_t fn)
{
	return timed_batches(fn, BATCHES, BATCH / 4, drain_between);
}

/* ---- 2 threads --------------------------------------------------------------- */

/*
 * Each producer's rate with two threads recording at once, against one
 * thread recording alone, under the same conditions: a consumer drains the
 * rings between batches from CPU 0, as the tool does from some core.  (A
 * producer whose ring lines another core has read pays to take them back
 * when it writes there again: the one-thread run pins its producer to CPU 1
 * and drains from CPU 0, so that it pays that too, as thread 1 of the pair
 * does.)
 */
static pthread_barrier_t barrier;
static double thread_ns[2];

/* A producer: on CPU `cpu`, BATCHES batches between barriers; with
 * `drains`, it drains between them itself (one consumer, the other
 * producer waiting). */
struct producer_arg {
	int cpu, drains;
};

static void *producer(void *arg)
{
	const struct producer_arg *a = arg;
	double total = 0;
	bench_pin(a->cpu);
	for (int b = 0; b < BATCHES; b++) {
		double t0;
		pthread_barrier_wait(&barrier);
		t0 = now_ns();
		loop(hit_marker, BATCH);
		total += now_ns() - t0;
		pthread_barrier_wait(&barrier);
		if (a->drains)
			drain();
	}
	thread_ns[a->cpu] = total / (BATCHES * (double)BATCH);
	return NULL;
}

/* ns per hit of each producer: thread i on CPU i (one producer: CPU 1,
 * with the calling thread, on CPU 0, draining). */
static void producers(int n)
{
	static const struct producer_arg pair[2] = { { 0, 1 }, { 1, 0 } }, alone = { 1, 0 };
	pthread_t th[2];
	pthread_barrier_init(&barrier, NULL, 2);
	if (n == 2) {
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, producer, (void *)&pair[i]);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
	} else {
		bench_pin(0);
		pthread_create(&th[1], NULL, producer, (void *)&alone);
		for (int b = 0; b < BATCHES; b++) {
			pthread_barrier_wait(&barrier);
			pthread_barrier_wait(&barrier);
			drain();
		}
		pthread_join(th[1], NULL);
	}
	pthread_barrier_destroy(&barrier);
}

static double two_threads_ratio(void)
{
	double one;
	producers(1);
	one = thread_ns[1];
	producers(2);
	/* rate = 1/ns: each thread's rate over the single-thread rate */
	return one / (thread_ns[0] > thread_ns[1] ? thread_ns[0] : thread_ns[1]);
}

/* ---- drain rate --------------------------------------------------------------- */

static double drain_rate(void)
{
	long n = 0;
	double t0;
	drain();
	loop(hit_marker, 30000); /* nearly a full 1 MiB ring */
	t0 = now_ns();
	n = drain();
	return n / ((now_ns() - t0) / 1e9);
}

/* ---- sustained rate ------------------------------------------------------------ */

static atomic_int sustain_stop;

static void *tool_thread(void *arg)
{
	(void)arg;
	bench_pin(1);
	while (!atomic_load(&sustain_stop)) {
		long n = drain();
		if (n < 1024)
			usleep(5000); /* the tool's period */
	}
	drain();
	return NULL;
}

/* Record `rate` events/s for `secs` seconds in bursts every millisecond;
 * returns the events lost.  *achieved gets the rate reached. */
static uint64_t sustained(double rate, double secs, double *achieved)
{
	pthread_t th;
	uint64_t lost0 = lost_total(), sent = 0;
	double t0 = now_ns(), per_ms = rate / 1000, end = t0 + secs * 1e9;
	bench_pin(0);
	atomic_store(&sustain_stop, 0);
	pthread_create(&th, NULL, tool_thread, NULL);
	for (double tick = t0; tick < end; tick += 1e6) {
		while (now_ns() < tick)
			;
		loop(hit_marker, (long)per_ms);
		sent += (uint64_t)per_ms;
	}
	*achieved = sent / ((now_ns() - t0) / 1e9);
	atomic_store(&sustain_stop, 1);
	pthread_join(th, NULL);
	return lost_total() - lost0;
}

int main(void)
{
	double nop[RUNS], armed[RUNS], clk[RUNS], lean[RUNS], stack[RUNS], ratio[RUNS], dr[RUNS], m_nop, m_armed,
		m_clk, m_lean, achieved;
	const char *env = getenv("DJP_BENCH_SECONDS");
	double secs = env ? atof(env) : 10;
	unsigned nsites = 0;
	int id, lean_id, stack_id;

	rec = djp_recorder_create(NULL);
	if (!rec) {
		perror("djp_recorder_create");
		return 1;
	}
	cons = djp_consumer_open(djp_region_fd(rec->region));
	if (!cons) {
		perror("djp_consumer_open");
		return 1;
	}
	id = djp_recorder_connect(rec, "bench_trace_hit", 0, NULL, &nsites);
	if (id < 0 || nsites != 1) {
		fprintf(stderr, "trace_record: connect: %d (%u sites)\n", id, nsites);
		return 1;
	}
	lean_id = djp_connect("bench_trace_lean", empty_handler, NULL, DJP_GPR_ONLY);
	if (lean_id < 0) {
		fprintf(stderr, "trace_record: connect bench_trace_lean: %d\n", lean_id);
		return 1;
	}
	stack_id = djp_recorder_connect(rec, "bench_trace_stack", DJP_RECORD_USTACK, NULL, &nsites);
	if (stack_id < 0 || nsites != 1) {
		fprintf(stderr, "trace_record: connect bench_trace_stack: %d (%u sites)\n", stack_id, nsites);
		return 1;
	}
	djp_clock_init();
	drain_remote_start(drain_quietly); /* this thread on CPU 0, the drains on CPU 1 */
	loop(hit_marker, BATCH);	    /* warm up: slot claim, page faults */
	loop(hit_stack, BATCH / 4);
	drain();

	for (int r = 0; r < RUNS; r++) {
		nop[r] = batch_ns(hit_nop);
		armed[r] = batch_ns(hit_marker);
		clk[r] = batch_ns(hit_clock);
		lean[r] = batch_ns(hit_lean);
		stack[r] = stack_batch_ns(hit_stack);
		ratio[r] = two_threads_ratio();
		dr[r] = drain_rate();
	}
	m_nop = median_of(nop, RUNS);
	m_armed = median_of(armed, RUNS);
	row("NOP (marker site, nobody listening)", m_nop, "ns", -1, 1);
	m_clk = median_of(clk, RUNS);
	m_lean = median_of(lean, RUNS);
	row("recorded event, 2 int args, ns per hit over the NOP", m_armed - m_nop, "ns", -1, 1);
	row("clock read (the event's timestamp), ns over the NOP", m_clk - m_nop, "ns", -1, 1);
	row("armed marker, empty lean handler, ns over the NOP", m_lean - m_nop, "ns", -1, 1);
	row("recorded event / (clock read + empty lean hit)", (m_armed - m_nop) / (m_clk - m_nop + m_lean - m_nop),
	    "x", 1.3, 1);
	{
		char label[128];
		snprintf(label, sizeof(label), "recorded event with the user stack (%u frames), ns per hit over the NOP",
			 stack_depth);
		row(label, median_of(stack, RUNS) - m_nop, "ns", -1, 1);
	}
	row("2 threads on 2 cores: per-thread rate / 1-thread rate", median_of(ratio, RUNS), "x", 0.9, 0);
	row("drain rate (consumer, events counted)", median_of(dr, RUNS) / 1e6, "M events/s", 10, 0);
	row("lost events during the runs above (rings drained between batches)", (double)lost_total(), "events",
	    0, 1);
	{
		uint64_t lost = sustained(1e6, secs, &achieved);
		char label[128];
		snprintf(label, sizeof(label), "1 M events/s for %g s, default buffers: lost events", secs);
		row(label, (double)lost, "events", 0, 1);
		row("  ... rate achieved", achieved / 1e6, "M events/s", -1, 0);
	}
	djp_disconnect(id);
	djp_disconnect(lean_id);
	djp_disconnect(stack_id);
	djp_consumer_close(cons);
	djp_recorder_destroy(rec);
	return 0;
}
