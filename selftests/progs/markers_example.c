/*
 * A program with many markers, for the marker reader and `djp list` tests:
 * every argument size and signedness, and every kind of location the
 * compiler may choose (register, memory with base, index and scale, an
 * immediate, a global reached through %rip).  The tests hold the expected
 * names, formats and argument types; keep the two in step.
 *
 * Run with "wait" to print "ready" and block until stdin closes (the PID
 * listing test); without arguments it passes every marker once and exits.
 */
#include <djprobe/marker.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum colour { RED, GREEN = 5 };
enum sign { MINUS = -1, PLUS = 1 };

struct req {
	long id;
	unsigned len;
	char tag;
};

int32_t ex_counter = -7;
static uint64_t ex_total = 42;
volatile int8_t ex_small = -3;

__attribute__((noinline)) void ex_sizes(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f,
					int64_t g, uint64_t h)
{
	MARK(ex_sizes, "a=%hhd b=%hhu c=%hd d=%hu e=%d f=%u g=%ld h=%lu", a, b, c, d, e, f, g, h);
}

__attribute__((noinline)) void ex_types(bool flag, char ch, enum colour col, enum sign sg, const char *s,
					void *p)
{
	MARK(ex_types, "flag=%d ch=%c col=%u sg=%d s=%s p=%p", flag, ch, col, sg, s, p);
}

__attribute__((noinline)) void ex_immediates(void)
{
	MARK(ex_immediates, "five=%d minus=%d big=%lu", 5, -5, 0x123456789UL);
}

__attribute__((noinline)) void ex_globals(void)
{
	MARK(ex_globals, "counter=%d total=%lu small=%hhd", ex_counter, ex_total, ex_small);
	ex_total++;
}

__attribute__((noinline)) int ex_memory(const struct req *r, const int *v, long i)
{
	MARK(ex_memory, "id=%ld len=%u tag=%c v=%d", r->id, r->len, r->tag, v[i]);
	return v[i] + 1;
}

__attribute__((noinline)) void ex_empty(void)
{
	MARK(ex_empty);
	MARK(ex_format_only, "a format without arguments");
}

__attribute__((noinline)) long ex_twelve(long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8,
					 long a9, long a10, long a11, long a12)
{
	MARK(ex_twelve, "%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld", a1, a2, a3, a4, a5, a6, a7, a8, a9, a10,
	     a11, a12);
	return a1 + a12;
}

static inline __attribute__((always_inline)) void ex_inlined(int x)
{
	MARK(ex_inlined, "x=%d", x);
}

int main(int argc, char **argv)
{
	struct req r = { 11, 22, 'q' };
	int v[4] = { 1, 2, 3, 4 };
	char buf[64];

	ex_sizes(-1, 2, -3, 4, -5, 6, -7, 8);
	ex_types(true, 'c', GREEN, MINUS, "str", &r);
	ex_immediates();
	ex_globals();
	ex_memory(&r, v, argc);
	ex_empty();
	ex_twelve(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
	ex_inlined(argc);
	if (argc > 1 && !strcmp(argv[1], "wait")) {
		printf("ready\n");
		fflush(stdout);
		while (read(0, buf, sizeof(buf)) > 0)
			;
	}
	return 0;
}
