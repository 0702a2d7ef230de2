/*
 * The recorder's typed fast entries (kernel/agent/recorder.c): a site
 * with load programs (a script's $p->field) is recorded by a fast entry of
 * its own, not by the general record, and its events are the general
 * record's, value for value: members of every width, signed and bitfield
 * ones, addresses, chains, and faults, a NULL pointer's and a PROT_NONE
 * page's, as the faulting address and the mask.  A thread's first event
 * goes through the general record (the ring's fast path is not set up
 * yet); every later one through the fast entry; both must read the same.
 */
#include <stdatomic.h>
#include <sys/mman.h>

#include "djprobe/djprobe.h"
#include "harness.h"
#include "kernel/agent/loads.h"
#include "kernel/agent/recorder.h"
#include "kernel/engine.h"
#include "lib/ring.h"

struct tnode {
	long a;
	struct tnode *next;
	int s32;
	unsigned char u8;
	unsigned bf : 3, bf_hi : 5;
	short s16;
};

/* Long enough for a jump (its first instruction is 7 bytes): a function
 * shorter than one is an int3 probe, whose hits the fast entries never
 * see. */
volatile long typed_fast_sink;
__attribute__((noinline, noipa)) long typed_fast_target(struct tnode *n)
{
	__asm__ volatile("" ::"r"(n) : "memory");
	typed_fast_sink += (long)(uintptr_t)n;
	return typed_fast_sink;
}

/* The same without a parameter in its DWARF, called with one: a site
 * with no argument, whose program's base (%rdi) the entry reads from the
 * hit's register block instead of a prefetched argument. */
__attribute__((noinline, noipa)) long typed_fast_target_bare(void)
{
	typed_fast_sink += 1;
	__asm__ volatile("" ::: "memory");
	return typed_fast_sink;
}

/* The node as the second parameter: the program's base, %rsi, is the
 * site's second prefetched argument. */
__attribute__((noinline, noipa)) long typed_fast_target_second(long x, struct tnode *n)
{
	__asm__ volatile("" ::"r"(n) : "memory");
	typed_fast_sink += (long)(uintptr_t)n + x;
	return typed_fast_sink;
}

static long call_second(struct tnode *n)
{
	return typed_fast_target_second(7, n);
}

/* The function record() probes, and how it calls it. */
static const char *target_name = "typed_fast_target";
static long (*target_fn)(struct tnode *) = typed_fast_target;
static long (*target_call)(struct tnode *) = typed_fast_target;

/* A program from %rdi, the parameter at the entry. */
static struct djp_load_prog prog(unsigned nderef, const int64_t *off, int64_t last, unsigned size, bool sign)
{
	struct djp_load_prog p = {
		.base = { .kind = DJP_LOC_REG, .size = 8, .reg = DJP_REG_RDI, .index = DJP_REG_NONE, .scale = 1 },
		.nderef = (uint8_t)nderef,
		.size = (uint8_t)size,
		.is_signed = sign,
		.last = last,
	};
	for (unsigned i = 0; i < nderef; i++)
		p.off[i] = off[i];
	return p;
}

#define NEXT ((int64_t)offsetof(struct tnode, next))

struct got {
	unsigned events;
	uint64_t v[2][DJP_LOAD_MAX_PROGS]; /* the first event's and the last's */
	uint64_t faulted[2];
	unsigned n[2];
};

static int take(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct got *g = arg;
	unsigned n, k = g->events ? 1 : 0;
	uint64_t faulted, strs;
	const uint64_t *v = djp_event_loads(ev, &n, &faulted, &strs);

	(void)tid;
	(void)slot;
	if (!v)
		djp_test_fail(__FILE__, __LINE__, "event %u carries no results", g->events);
	g->n[k] = n;
	g->faulted[k] = faulted;
	memcpy(g->v[k], v, 8 * n);
	g->events++;
	return 0;
}

static atomic_int planned; /* sites the recorder's plan gave an entry */

/* The recorder's plan, as djp_recorder_connect gives it, counted. */
static djp_fast_entry_fn counted_plan(void *data, const struct djp_site *s, struct djp_fast_plan *plan)
{
	djp_fast_entry_fn fn = djp_recorder_plan(data, s, plan);
	if (fn)
		atomic_fetch_add(&planned, 1);
	return fn;
}

/* Record `hits` calls of typed_fast_target(n), connected as
 * djp_recorder_connect connects a function point, with the set's
 * programs: the first and the last event's results in *g. */
static void record(const struct djp_load_prog *progs, unsigned nprogs, struct tnode *n, unsigned hits, struct got *g)
{
	struct djp_recorder *rec = djp_recorder_create(NULL);
	struct djp_connect_opts o = { .plan = counted_plan, .once = true };
	struct djp_load_set *ls = calloc(1, sizeof(*ls));
	struct djp_consumer *c;
	int id;

	CHECK(rec != NULL && ls != NULL);
	CHECK((c = djp_consumer_open(djp_region_fd(rec->region))) != NULL);
	strcpy(ls->provider, "func");
	strcpy(ls->name, target_name);
	ls->n = nprogs;
	memcpy(ls->prog, progs, nprogs * sizeof(*progs));
	for (unsigned i = 0; i < nprogs; i++)
		CHECK_EQ(djp_load_check(&progs[i]), 0);
	CHECK((rec->loads = djp_loads_create()) != NULL);
	CHECK_EQ(djp_loads_add(rec->loads, ls), 0);
	CHECK_EQ(djp_safe_copy_enable(), 0);
	CHECK(djp_loads_fast_copy()); /* else every hit takes the general record */

	char point[64];
	snprintf(point, sizeof(point), "func:%s", target_name);
	CHECK_EQ(djp__point_parse(point, &o.point), 0);
	atomic_store(&planned, 0);
	id = djp__connect(NULL, djp_recorder_hit, rec, DJP_GPR_ONLY, &o);
	CHECK(id >= 0);
	/* a jump, whose trampoline calls the fast entry */
	CHECK_EQ(*(const volatile uint8_t *)(uintptr_t)target_fn, 0xe9);
	if (atomic_load(&planned) != 1)
		djp_test_fail(__FILE__, __LINE__, "the typed site has no fast entry (%d)", atomic_load(&planned));
	for (unsigned i = 0; i < hits; i++)
		target_call(n);
	*g = (struct got){ 0 };
	CHECK(djp_consumer_drain(c, &(struct djp_drain_ops){ take, NULL }, g) >= 0);
	CHECK_EQ(g->events, hits);
	CHECK_EQ(g->n[0], nprogs);
	CHECK_EQ(g->n[1], nprogs);
	/* the general record's (the first) and the fast entry's, alike */
	CHECK_EQ(g->faulted[0], g->faulted[1]);
	for (unsigned i = 0; i < nprogs; i++)
		if (g->v[0][i] != g->v[1][i])
			djp_test_fail(__FILE__, __LINE__, "result %u: %#llx at the first hit, %#llx at the last", i,
				      (unsigned long long)g->v[0][i], (unsigned long long)g->v[1][i]);
	djp_disconnect(id);
	djp_consumer_close(c);
	djp_recorder_destroy(rec);
	free(ls);
}

static struct tnode c3 = { 3, NULL, -7, 200, 5, 17, -300 }, b2 = { 2, &c3, 0, 0, 0, 0, 0 }, a1 = { 1, &b2, 0, 0, 0, 0, 0 },
		     d0 = { 0, &a1, 0, 0, 0, 0, 0 };

/* One member ($n->a), the shortest entry (the member entry). */
TEST(recorder_typed_fast_entry_one_member)
{
	struct djp_load_prog p = prog(0, NULL, offsetof(struct tnode, a), 8, true);
	struct got g;

	record(&p, 1, &a1, 50, &g);
	CHECK_EQ(g.faulted[1], 0);
	CHECK_EQ(g.v[1][0], 1);
}

/* One member straight from the register (the member entry: no pointer
 * loaded first), unsigned of each width, and from a NULL pointer and a
 * page nobody may read: the fault's address and mask, as the general
 * record gives them. */
TEST(recorder_typed_fast_entry_member_widths_and_faults)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct tnode *bad = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct djp_load_prog p8 = prog(0, NULL, offsetof(struct tnode, a), 8, true);
	struct djp_load_prog p4 = prog(0, NULL, offsetof(struct tnode, s32), 4, false);
	struct djp_load_prog p2 = prog(0, NULL, offsetof(struct tnode, s16), 2, false);
	struct djp_load_prog p1 = prog(0, NULL, offsetof(struct tnode, u8), 1, false);
	struct got g;

	CHECK(bad != MAP_FAILED);
	record(&p4, 1, &c3, 50, &g);
	CHECK_EQ(g.faulted[1], 0);
	CHECK_EQ(g.v[1][0], (uint32_t)-7);
	record(&p2, 1, &c3, 50, &g);
	CHECK_EQ(g.v[1][0], (uint16_t)-300);
	record(&p1, 1, &c3, 50, &g);
	CHECK_EQ(g.v[1][0], 200);
	record(&p8, 1, NULL, 50, &g); /* refused in the first page, no load */
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)offsetof(struct tnode, a));
	/* each width's load is its own instruction with its own fixup */
	record(&p1, 1, bad, 50, &g);
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)(uintptr_t)bad + offsetof(struct tnode, u8));
	record(&p2, 1, bad, 50, &g);
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)(uintptr_t)bad + offsetof(struct tnode, s16));
	record(&p4, 1, bad, 50, &g);
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)(uintptr_t)bad + offsetof(struct tnode, s32));
	record(&p8, 1, bad, 50, &g);
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)(uintptr_t)bad + offsetof(struct tnode, a));
	/* the top of the address space: a kernel address, and one whose
	 * 8 bytes wrap (non-canonical, the kernel's SIGSEGV all the same) */
	record(&p8, 1, (struct tnode *)(uintptr_t)0xffffffff81000000ull, 50, &g);
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], 0xffffffff81000000ull);
	record(&p8, 1, (struct tnode *)(uintptr_t)(UINT64_MAX - 3), 50, &g);
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], UINT64_MAX - 3);
	munmap(bad, (size_t)pg);
}

/* A member and a chain from a register that is no prefetched argument of
 * the site (the member entry's and the chain's register-block case). */
TEST(recorder_typed_fast_entry_base_from_the_register_block)
{
	struct djp_load_prog p8 = prog(0, NULL, offsetof(struct tnode, a), 8, true);
	struct djp_load_prog p3 = prog(2, (const int64_t[]){ NEXT, NEXT }, offsetof(struct tnode, s32), 4, true);
	struct got g;

	target_name = "typed_fast_target_bare";
	target_fn = target_call = (long (*)(struct tnode *))(void (*)(void))typed_fast_target_bare;
	record(&p8, 1, &b2, 50, &g);
	CHECK_EQ(g.faulted[1], 0);
	CHECK_EQ(g.v[1][0], 2);
	record(&p3, 1, &a1, 50, &g);
	CHECK_EQ(g.faulted[1], 0);
	CHECK_EQ((int64_t)g.v[1][0], -7);
	target_name = "typed_fast_target";
	target_fn = target_call = typed_fast_target;
}

/* From the site's second argument (%rsi): a member, a chain, a chain
 * through a NULL pointer (the walk's address), and a load that faults. */
TEST(recorder_typed_fast_entry_base_from_the_second_argument)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct tnode *bad = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct djp_load_prog p8 = prog(0, NULL, offsetof(struct tnode, a), 8, true);
	struct djp_load_prog p2 = prog(2, (const int64_t[]){ NEXT, NEXT }, offsetof(struct tnode, a), 8, true);
	struct got g;

	CHECK(bad != MAP_FAILED);
	p8.base.reg = p2.base.reg = DJP_REG_RSI;
	target_name = "typed_fast_target_second";
	target_fn = (long (*)(struct tnode *))(void (*)(void))typed_fast_target_second;
	target_call = call_second;
	record(&p8, 1, &b2, 50, &g);
	CHECK_EQ(g.faulted[1], 0);
	CHECK_EQ(g.v[1][0], 2);
	record(&p2, 1, &a1, 50, &g);
	CHECK_EQ(g.faulted[1], 0);
	CHECK_EQ(g.v[1][0], 3);
	record(&p2, 1, &b2, 50, &g); /* c3.next is NULL */
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)offsetof(struct tnode, a));
	record(&p8, 1, bad, 50, &g);
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)(uintptr_t)bad);
	target_name = "typed_fast_target";
	target_fn = target_call = typed_fast_target;
	munmap(bad, (size_t)pg);
}

/* A chain ($n->next->next->a), one through a NULL pointer and one into
 * a page nobody may read: the address that could not be read, and the
 * mask. */
TEST(recorder_typed_fast_entry_chain_and_null)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *bad = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct djp_load_prog p = prog(2, (const int64_t[]){ NEXT, NEXT }, offsetof(struct tnode, a), 8, true);
	struct djp_load_prog q = prog(3, (const int64_t[]){ NEXT, NEXT, NEXT }, offsetof(struct tnode, a), 8, true);
	struct djp_load_prog r = prog(1, (const int64_t[]){ NEXT }, 16, 8, false);
	struct tnode x = c3;
	struct got g;
	uint64_t word;

	CHECK(bad != MAP_FAILED);
	record(&p, 1, &a1, 50, &g);
	CHECK_EQ(g.faulted[1], 0);
	CHECK_EQ(g.v[1][0], 3);
	record(&q, 1, &d0, 50, &g); /* three pointers, each entry's depth */
	CHECK_EQ(g.faulted[1], 0);
	CHECK_EQ(g.v[1][0], 3);
	record(&r, 1, &b2, 50, &g); /* one pointer: the 8 bytes at 16 in c3 */
	CHECK_EQ(g.faulted[1], 0);
	memcpy(&word, (const char *)&c3 + 16, 8);
	CHECK_EQ(g.v[1][0], word);
	record(&q, 1, &a1, 50, &g); /* c3.next is NULL: ->a at 0 */
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)offsetof(struct tnode, a) + 0);
	x.next = (struct tnode *)bad;
	record(&r, 1, &x, 50, &g); /* the fault handler's fixup */
	CHECK_EQ(g.faulted[1], 1);
	CHECK_EQ(g.v[1][0], (uint64_t)(uintptr_t)bad + 16);
	munmap(bad, (size_t)pg);
}

/* Several programs: every width, signed, a bitfield, an address, and a
 * load from a page nobody may read (a real fault, the copy's fixup). */
TEST(recorder_typed_fast_entry_many_programs)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct tnode *bad = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct tnode x = c3;
	struct djp_load_prog p[8];
	struct got g;

	CHECK(bad != MAP_FAILED);
	x.next = bad;
	p[0] = prog(0, NULL, offsetof(struct tnode, s32), 4, true);
	p[1] = prog(0, NULL, offsetof(struct tnode, u8), 1, false);
	p[2] = prog(0, NULL, offsetof(struct tnode, s16), 2, true);
	p[3] = prog(0, NULL, offsetof(struct tnode, next), 0, false); /* &$n->next */
	p[4] = prog(1, (const int64_t[]){ NEXT }, offsetof(struct tnode, a), 8, true); /* into the page */
	p[5] = prog(0, NULL, offsetof(struct tnode, u8) + 1, 1, false);		  /* the bitfields' byte */
	p[5].bit_off = 3;
	p[5].bit_size = 5;
	p[6] = prog(0, NULL, offsetof(struct tnode, a), 8, false);
	p[7] = p[5];
	p[7].bit_off = 0;
	p[7].bit_size = 3;
	record(p, 8, &x, 50, &g);
	CHECK_EQ(g.faulted[1], 1u << 4);
	CHECK_EQ((int64_t)g.v[1][0], -7);
	CHECK_EQ(g.v[1][1], 200);
	CHECK_EQ((int64_t)g.v[1][2], -300);
	CHECK_EQ(g.v[1][3], (uint64_t)(uintptr_t)&x + offsetof(struct tnode, next));
	CHECK_EQ(g.v[1][4], (uint64_t)(uintptr_t)bad + offsetof(struct tnode, a));
	CHECK_EQ(g.v[1][5], 17);
	CHECK_EQ(g.v[1][6], 3);
	CHECK_EQ(g.v[1][7], 5);
	munmap(bad, (size_t)pg);
}
