/*
 * Argument decoding, checked from inside the instrumented program: every
 * size and signedness, and every location kind the compiler chooses
 * (register, %rsp- and %rbp-relative memory, immediate, a global).  Built at
 * -O2 and at -O0 (engine_args and engine_args-O0).  Prints the location
 * kinds it met, one per line ("reg", "mem-rsp", "mem-rbp", "imm", "abs"),
 * so the selftest can check that both builds together cover all of them;
 * exits 1 on any wrong value.
 *
 * Modes: "jump" and "int3" check djp_hit_arg from a handler; "recorder"
 * connects the recorder and checks the values it wrote into the ring.  The
 * markers of at most four arguments are recorded through the recorder's
 * fast entry, whose values the lean trampoline loads itself (the argument
 * prefetch): this mode checks that every one of them qualifies, so that
 * the prefetch of every size, sign and location kind is what is tested.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "kernel/engine.h"
#include "kernel/agent/recorder.h"
#include "lib/markers.h"

static int64_t got[12];
static unsigned gotn;
static int failures;
int args_global = -77;

static void record(const struct djp_hit *hit, void *data)
{
	(void)data;
	gotn = djp_hit_nargs(hit);
	for (unsigned i = 0; i < gotn; i++)
		got[i] = djp_hit_arg(hit, i);
}

static void expect(const char *what, unsigned n, const int64_t *v)
{
	if (gotn != n) {
		fprintf(stderr, "%s: %u args, expected %u\n", what, gotn, n);
		failures++;
		return;
	}
	for (unsigned i = 0; i < n; i++)
		if (got[i] != v[i]) {
			fprintf(stderr, "%s: arg %u = %lld, expected %lld\n", what, i, (long long)got[i],
				(long long)v[i]);
			failures++;
		}
	gotn = 0;
}

__attribute__((noinline)) void args_sizes(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f,
					  int64_t g, uint64_t h, void *p)
{
	MARK(args_sizes, "a=%hhd b=%hhu c=%hd d=%hu e=%d f=%u g=%ld h=%lu p=%p", a, b, c, d, e, f, g, h, p);
}

/* The same sizes four at a time, for the recorder's fast entry. */
__attribute__((noinline)) void args_small(int8_t a, uint8_t b, int16_t c, uint16_t d)
{
	MARK(args_small, "a=%hhd b=%hhu c=%hd d=%hu", a, b, c, d);
}

__attribute__((noinline)) void args_wide(int32_t e, uint32_t f, int64_t g, void *p)
{
	MARK(args_wide, "e=%d f=%u g=%ld p=%p", e, f, g, p);
}

__attribute__((noinline)) void args_imm(void)
{
	MARK(args_imm, "x=%d y=%ld z=%u c=%hhd", -5, (long)-1234567890123, 42u, (int8_t)-3);
}

/* Constants with the top bit of their size set: the compiler prints them as
 * negative numbers ("4@$-1294967296"), which the size prefix corrects. */
__attribute__((noinline)) void args_imm_unsigned(void)
{
	MARK(args_imm_u, "a=%hhu b=%hu c=%u d=%lu", (uint8_t)200, (uint16_t)60000, 3000000000u,
	     (uint64_t)18000000000000000000ULL);
}

__attribute__((noinline)) void args_imm_negative(void)
{
	MARK(args_imm_s, "a=%hhd b=%hd c=%d d=%ld", (int8_t)-100, (int16_t)-30000, -2000000000,
	     (int64_t)-9000000000000000000LL);
}

/* An array and a string literal go as pointers to their first element. */
#define ARGS_LITERAL "literal"
__attribute__((noinline)) const char *args_array(uintptr_t *where)
{
	char buf[16];
	snprintf(buf, sizeof(buf), "buf");
	MARK(args_array, "buf=%s lit=%s", buf, ARGS_LITERAL);
	*where = (uintptr_t)buf; /* compared with the hit's value only */
	return ARGS_LITERAL;
}

__attribute__((noinline)) void args_mem_rsp(int x)
{
	volatile int v = x * 3;
	volatile long w = -x;
	volatile int8_t b = (int8_t)-x;
	volatile uint16_t u = (uint16_t)(60000 + x);
	MARK(args_mem, "v=%d w=%ld b=%hhd u=%hu", v, w, b, u);
}

/* A variable-length array forces a frame pointer: locals at -N(%rbp). */
__attribute__((noinline)) void args_mem_rbp(int x, int n)
{
	volatile char vla[n];
	volatile int v = x * 5;
	volatile long w = (long)x << 40;
	vla[0] = 1;
	MARK(args_rbp, "v=%d w=%ld", v, w);
	(void)vla[0];
}

__attribute__((noinline)) void args_global_marker(void)
{
	MARK(args_glob, "g=%d", args_global);
}

static void kinds(void)
{
	struct djp_marker_list *l;
	char err[256];
	if (djp_markers_read_file("/proc/self/exe", DJP_READ_NO_DWARF, &l, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	for (size_t i = 0; i < l->count; i++)
		for (unsigned k = 0; k < l->v[i].nargs; k++) {
			const struct djp_argloc *a = &l->v[i].arg[k];
			if (strncmp(l->v[i].name, "args_", 5))
				continue;
			if (a->kind == DJP_LOC_REG)
				puts("reg");
			else if (a->kind == DJP_LOC_IMM)
				puts("imm");
			else if (a->kind == DJP_LOC_ABS)
				puts("abs");
			else if (a->kind == DJP_LOC_MEM && a->reg == DJP_REG_RSP)
				puts("mem-rsp");
			else if (a->kind == DJP_LOC_MEM && a->reg == DJP_REG_RBP)
				puts("mem-rbp");
			else if (a->kind == DJP_LOC_MEM)
				puts("mem-other");
			else
				puts("none");
		}
	djp_marker_list_free(l);
}

/* What the program's calls must give, in the order it makes them. */
struct call {
	const char *what;
	unsigned n;
	int64_t v[9];
	const char *str[9]; /* a %s: the text the recorder copies, not v */
};
#define MAX_CALLS 48
static struct call calls[MAX_CALLS];
static unsigned ncalls;
static int recording; /* recorder mode: the values are checked in the ring */

static void expect_call(const char *what, unsigned n, const int64_t *v)
{
	if (ncalls < MAX_CALLS) {
		calls[ncalls] = (struct call){ .what = what, .n = n };
		memcpy(calls[ncalls++].v, v, n * sizeof(*v));
	}
	if (!recording)
		expect(what, n, v);
}

static void run_calls(void)
{
	for (int round = 0; round < 3; round++) {
		int8_t a = (int8_t)(-100 + round);
		args_sizes(a, 200, -30000, 65000, -2000000000, 4000000000u, -9000000000000000000LL,
			   18000000000000000000ULL, (void *)0xdeadbeef);
		expect_call("sizes", 9,
			    (int64_t[]){ a, 200, -30000, 65000, -2000000000, 4000000000LL, -9000000000000000000LL,
					 (int64_t)18000000000000000000ULL, 0xdeadbeef });
		args_small(a, (uint8_t)(250 - round), (int16_t)(-32000 + round), (uint16_t)(65500 + round));
		expect_call("small", 4, (int64_t[]){ a, 250 - round, -32000 + round, 65500 + round });
		args_wide(-2000000000 + round, 4000000000u + round, -9000000000000000000LL + round, (void *)0xfeedface);
		expect_call("wide", 4,
			    (int64_t[]){ -2000000000 + round, 4000000000LL + round, -9000000000000000000LL + round,
					 0xfeedface });
		args_imm();
		expect_call("imm", 4, (int64_t[]){ -5, -1234567890123LL, 42, -3 });
		args_imm_unsigned();
		expect_call("imm_unsigned", 4,
			    (int64_t[]){ 200, 60000, 3000000000LL, (int64_t)18000000000000000000ULL });
		args_imm_negative();
		expect_call("imm_negative", 4,
			    (int64_t[]){ -100, -30000, -2000000000, -9000000000000000000LL });
		uintptr_t buf;
		const char *lit = args_array(&buf);
		expect_call("array", 2, (int64_t[]){ (int64_t)buf, (int64_t)(uintptr_t)lit });
		calls[ncalls - 1].str[0] = "buf";
		calls[ncalls - 1].str[1] = ARGS_LITERAL;
		args_mem_rsp(7 + round);
		expect_call("mem_rsp", 4, (int64_t[]){ 3 * (7 + round), -(7 + round), -(7 + round), 60007 + round });
		args_mem_rbp(11 + round, 3);
		expect_call("mem_rbp", 2, (int64_t[]){ 5 * (11 + round), (long)(11 + round) << 40 });
		args_global = -77 - round;
		args_global_marker();
		expect_call("global", 1, (int64_t[]){ -77 - round });
	}
}

/* ---- recorder mode ---- */

static unsigned nevents;

static int check_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	const struct call *c = &calls[nevents < ncalls ? nevents : ncalls - 1];
	(void)arg, (void)tid, (void)slot;
	if (nevents++ >= ncalls || ev->nargs != c->n) {
		fprintf(stderr, "event %u: %u args, expected %u (%s)\n", nevents - 1, ev->nargs, c->n, c->what);
		failures++;
		return 0;
	}
	for (unsigned i = 0; i < c->n; i++) {
		uint32_t len;
		const char *str = c->str[i] ? djp_event_str(ev, i, &len, NULL) : NULL;
		if (c->str[i] && (!str || strcmp(str, c->str[i]))) {
			fprintf(stderr, "%s (recorded): arg %u = \"%s\", expected \"%s\"\n", c->what, i,
				str ? str : "(none)", c->str[i]);
			failures++;
		} else if (!c->str[i] && (int64_t)ev->args[i] != c->v[i]) {
			fprintf(stderr, "%s (recorded): arg %u = %lld, expected %lld\n", c->what, i,
				(long long)ev->args[i], (long long)c->v[i]);
			failures++;
		}
	}
	return 0;
}

/* Every marker of at most four arguments must take the fast entry. */
static int check_fast(void *ctx, uint32_t id, const char *object, uintptr_t addr, const struct djp_marker_info *m)
{
	(void)ctx, (void)id, (void)object, (void)addr;
	if (!strncmp(m->name, "args_", 5) && m->nargs <= DJP_TRAMP_PREFETCH && !arch_tramp_prefetches(m->arg, m->nargs)) {
		fprintf(stderr, "%s: not prefetched (%s)\n", m->name, m->args);
		failures++;
	}
	return 0;
}

static int record_mode(void)
{
	struct djp_recorder *rec = djp_recorder_create(NULL);
	struct djp_consumer *cons = rec ? djp_consumer_open(djp_region_fd(rec->region)) : NULL;
	static const struct djp_drain_ops ops = { check_event, NULL };
	int id;
	if (!cons || (id = djp_recorder_connect(rec, "args_*", 0, NULL, NULL)) < 0) {
		fprintf(stderr, "recorder: cannot connect\n");
		return 1;
	}
	djp__sites_foreach(check_fast, NULL);
	recording = 1;
	run_calls();
	djp_disconnect(id);
	if (djp_consumer_drain(cons, &ops, NULL) < 0 || nevents != ncalls) {
		fprintf(stderr, "recorder: %u events, expected %u\n", nevents, ncalls);
		failures++;
	}
	djp_consumer_close(cons);
	djp_recorder_destroy(rec);
	return failures;
}

int main(int argc, char **argv)
{
	unsigned flags = argc > 1 && !strcmp(argv[1], "int3") ? DJP_FORCE_INT3 : 0;
	int id;
	if (argc > 1 && !strcmp(argv[1], "recorder")) {
		if (record_mode())
			return 1;
		kinds();
		return 0;
	}
	id = djp_connect("args_*", record, NULL, flags);
	if (id < 0) {
		fprintf(stderr, "connect: %d\n", id);
		return 1;
	}
	run_calls();
	djp_disconnect(id);
	kinds();
	return failures ? 1 : 0;
}
