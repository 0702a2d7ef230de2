/*
 * Argument decoding, checked from inside the instrumented program: every
 * size and signedness, and every location kind the compiler chooses
 * (register, %rsp- and %rbp-relative memory, immediate, a global).  Built at
 * -O2 and at -O0 (engine_args and engine_args-O0).  Prints the location
 * kinds it met, one per line ("reg", "mem-rsp", "mem-rbp", "imm", "abs"),
 * so the selftest can check that both builds together cover all of them;
 * exits 1 on any wrong value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
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

__attribute__((noinline)) void args_imm(void)
{
	MARK(args_imm, "x=%d y=%ld z=%u c=%hhd", -5, (long)-1234567890123, 42u, (int8_t)-3);
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

int main(int argc, char **argv)
{
	unsigned flags = argc > 1 && !strcmp(argv[1], "int3") ? DJP_FORCE_INT3 : 0;
	int id = djp_connect("args_*", record, NULL, flags);
	if (id < 0) {
		fprintf(stderr, "connect: %d\n", id);
		return 1;
	}
	for (int round = 0; round < 3; round++) {
		int8_t a = (int8_t)(-100 + round);
		args_sizes(a, 200, -30000, 65000, -2000000000, 4000000000u, -9000000000000000000LL,
			   18000000000000000000ULL, (void *)0xdeadbeef);
		expect("sizes",
		       9, (int64_t[]){ a, 200, -30000, 65000, -2000000000, 4000000000LL, -9000000000000000000LL,
				      (int64_t)18000000000000000000ULL, 0xdeadbeef });
		args_imm();
		expect("imm", 4, (int64_t[]){ -5, -1234567890123LL, 42, -3 });
		args_mem_rsp(7 + round);
		expect("mem_rsp", 4, (int64_t[]){ 3 * (7 + round), -(7 + round), -(7 + round), 60007 + round });
		args_mem_rbp(11 + round, 3);
		expect("mem_rbp", 2, (int64_t[]){ 5 * (11 + round), (long)(11 + round) << 40 });
		args_global = -77 - round;
		args_global_marker();
		expect("global", 1, (int64_t[]){ -77 - round });
	}
	djp_disconnect(id);
	kinds();
	return failures ? 1 : 0;
}
