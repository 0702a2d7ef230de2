/*
 * What a typed access costs at the hit itself (docs/SCRIPTS.md, "Typed
 * access"), apart from what bench/typed_access's rows also count: the
 * tool, and the kernel's first touch of each ring page (a ring of 128 MiB
 * that never wraps there, so an event 16 bytes longer meets a new page
 * that much sooner).  The recorder is connected in-process as the agent
 * connects it for a script (a function point, the load programs the tool
 * compiles for $n->a and $n->next->next->a, from %rdi), on a ring of
 * 4 MiB drained from another core between batches, which the timed calls
 * have written through before (warm pages).  Rows: ns per call of
 * hot_node with the register argument recorded, and each access over it
 * (targets: 3 and 8 ns).  Medians of RUNS runs, the cases interleaved.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "djprobe/djprobe.h"
#include "kernel/agent/loads.h"
#include "kernel/agent/recorder.h"
#include "kernel/engine.h"
#include "lib/ring.h"
#include "bench/bench.h"
#include "bench/drain_remote.h"

#define RUNS 5
#define BATCH 8192
#define WARM 64 /* batches through the ring before the timed ones */
#define TIMED 64

struct bnode {
	long a;
	struct bnode *next;
};

volatile long sink;

__attribute__((noinline, noipa, aligned(64))) long hot_node(struct bnode *n)
{
	sink += n->a;
	return n->a + 1;
}

static struct djp_consumer *cons;

static int count_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	(void)arg, (void)ev, (void)tid, (void)slot;
	return 0;
}

static void drain(void)
{
	djp_consumer_drain(cons, &(struct djp_drain_ops){ count_event, NULL }, NULL);
}

static double thread_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* ns per call with the recorder connected and `nderef` pointers loaded
 * before the member (-1: no load program, the register alone). */
static double run(int nderef)
{
	struct bnode c = { 3, NULL }, b = { 2, &c }, a = { 1, &b };
	struct djp_ring_opts o = { .sz = sizeof(o), .ring_size = 4 << 20 };
	struct djp_recorder *rec = djp_recorder_create(&o);
	static struct djp_load_set ls;
	double total = 0;
	int id;

	if (!rec || !(cons = djp_consumer_open(djp_region_fd(rec->region))))
		return -1;
	if (nderef >= 0) {
		memset(&ls, 0, sizeof(ls));
		strcpy(ls.provider, "func");
		strcpy(ls.name, "hot_node");
		ls.n = 1;
		ls.prog[0] = (struct djp_load_prog){
			.base = { .kind = DJP_LOC_REG, .size = 8, .reg = DJP_REG_RDI, .index = DJP_REG_NONE, .scale = 1 },
			.nderef = (uint8_t)nderef,
			.size = 8,
			.is_signed = true,
			.last = offsetof(struct bnode, a),
		};
		for (int i = 0; i < nderef; i++)
			ls.prog[0].off[i] = offsetof(struct bnode, next);
		if (!(rec->loads = djp_loads_create()) || djp_loads_add(rec->loads, &ls))
			return -1;
		(void)djp_safe_copy_enable(); /* as the agent's LOADS does */
	}
	if ((id = djp_recorder_connect(rec, "func:hot_node", 0, NULL, NULL)) < 0)
		return -1;
	for (int k = 0; k < WARM + TIMED; k++) {
		double t0 = thread_ns();
		for (int i = 0; i < BATCH; i++)
			sink += hot_node(&a);
		if (k >= WARM)
			total += thread_ns() - t0;
		drain_remote_now();
	}
	djp_disconnect(id);
	djp_consumer_close(cons);
	djp_recorder_destroy(rec);
	return total / ((double)TIMED * BATCH);
}

int main(void)
{
	double v[3][RUNS], m[3];
	int ok = 1;

	drain_remote_start(drain);
	for (int r = 0; r < RUNS; r++)
		for (int k = 0; k < 3; k++)
			ok &= (v[k][r] = run(k == 0 ? -1 : k == 1 ? 0 : 2)) > 0;
	for (int k = 0; k < 3; k++)
		m[k] = median_of(v[k], RUNS);
	printf("in-process, warm ring: function entry, register argument ($n) | %.2f ns/call | - | -\n", m[0]);
	printf("in-process, warm ring: one member ($n->a), over the register argument | %.2f ns | <= 3 | %s\n",
	       m[1] - m[0], m[1] - m[0] <= 3 ? "ok" : "over");
	printf("in-process, warm ring: three dereferences ($n->next->next->a), over the register argument | %.2f ns | "
	       "<= 8 | %s\n",
	       m[2] - m[0], m[2] - m[0] <= 8 ? "ok" : "over");
	return ok ? 0 : 1;
}
