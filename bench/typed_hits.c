/*
 * What a typed access costs at the hit itself (docs/SCRIPTS.md, "Typed
 * access"), apart from what bench/typed_access's rows also count: the
 * tool, and the kernel's first touch of each ring page (a ring of 128 MiB
 * that never wraps there, so an event 16 bytes longer meets a new page
 * that much sooner).  The recorder is connected in-process as the agent
 * connects it for a script (a function point, the load programs the tool
 * compiles for $n->a and $n->next->next->a, from %rdi), on a ring of
 * 4 MiB drained from another core between batches, which the timed calls
 * have written through before (warm pages).  Three functions of the same
 * code, one per case, connected at once: the register argument alone,
 * one member, three loads; a round times a batch of each, in an order
 * that turns each round, so that what the host does to the machine falls
 * on the three alike.  Rows: the median of the rounds' ns per call with
 * the register argument recorded, and the median of each access's
 * difference over it within a round (targets: 3 and 8 ns).
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

#define BATCH 8192
#define WARM 64 /* rounds through the ring before the timed ones */
#define TIMED 400

struct bnode {
	long a;
	struct bnode *next;
};

volatile long sink;

/* One function per case, the same code each. */
#define HOT(NAME)                                                       \
	__attribute__((noinline, noipa, aligned(64))) long NAME(struct bnode *n) \
	{                                                               \
		sink += n->a;                                           \
		return n->a + 1;                                        \
	}
HOT(hot_reg)
HOT(hot_member)
HOT(hot_chain)

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

/* The set of one program for function `name`, `nderef` pointers loaded
 * before the member, from %rdi. */
static int add_loads(struct djp_recorder *rec, const char *name, int nderef)
{
	static struct djp_load_set ls;

	memset(&ls, 0, sizeof(ls));
	strcpy(ls.provider, "func");
	strcpy(ls.name, name);
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
	return djp_loads_add(rec->loads, &ls);
}

/* ns per call of one batch of fn(n). */
static double batch(long (*fn)(struct bnode *), struct bnode *n)
{
	double t0 = thread_ns();
	for (int i = 0; i < BATCH; i++)
		sink += fn(n);
	return (thread_ns() - t0) / BATCH;
}

int main(void)
{
	static double reg[TIMED], d_member[TIMED], d_chain[TIMED];
	long (*const fn[3])(struct bnode *) = { hot_reg, hot_member, hot_chain };
	struct bnode c = { 3, NULL }, b = { 2, &c }, a = { 1, &b };
	struct djp_ring_opts o = { .sz = sizeof(o), .ring_size = 4 << 20 };
	struct djp_recorder *rec = djp_recorder_create(&o);
	double m_reg, m_member, m_chain;
	int id[3];

	drain_remote_start(drain);
	if (!rec || !(cons = djp_consumer_open(djp_region_fd(rec->region))) || !(rec->loads = djp_loads_create()) ||
	    add_loads(rec, "hot_member", 0) || add_loads(rec, "hot_chain", 2))
		return 1;
	(void)djp_safe_copy_enable(); /* as the agent's LOADS does */
	if ((id[0] = djp_recorder_connect(rec, "func:hot_reg", 0, NULL, NULL)) < 0 ||
	    (id[1] = djp_recorder_connect(rec, "func:hot_member", 0, NULL, NULL)) < 0 ||
	    (id[2] = djp_recorder_connect(rec, "func:hot_chain", 0, NULL, NULL)) < 0)
		return 1;
	for (int k = 0; k < WARM + TIMED; k++) {
		double t[3];
		for (int j = 0; j < 3; j++) {
			int w = (j + k) % 3;
			t[w] = batch(fn[w], &a);
			drain_remote_now();
		}
		if (k >= WARM) {
			reg[k - WARM] = t[0];
			d_member[k - WARM] = t[1] - t[0];
			d_chain[k - WARM] = t[2] - t[0];
		}
	}
	for (int j = 0; j < 3; j++)
		djp_disconnect(id[j]);
	djp_consumer_close(cons);
	djp_recorder_destroy(rec);
	m_reg = median_of(reg, TIMED);
	m_member = median_of(d_member, TIMED);
	m_chain = median_of(d_chain, TIMED);
	printf("in-process, warm ring: function entry, register argument ($n) | %.2f ns/call | - | -\n", m_reg);
	printf("in-process, warm ring: one member ($n->a), over the register argument | %.2f ns | <= 3 | %s\n",
	       m_member, m_member <= 3 ? "ok" : "over");
	printf("in-process, warm ring: three dereferences ($n->next->next->a), over the register argument | %.2f ns | "
	       "<= 8 | %s\n",
	       m_chain, m_chain <= 8 ? "ok" : "over");
	return 0;
}
