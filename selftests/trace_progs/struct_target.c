/*
 * The typed accesses' target: a structure with a member of each kind a
 * script reads by its type (integers of every size and sign, bool, an
 * enum, bitfields, a union, an anonymous structure, a nested structure
 * and a pointer to one, a typedef'd const volatile, char[] and char *, an
 * int array, a list through pointers), passed to functions whose calls
 * the scripts probe.  The program is its own oracle: before each call it
 * prints, on stdout, what the selftests' scripts print of the same
 * members (selftests/test_script_typed.c), so the two must be equal.
 * Built -O0 and -O2, and with DWARF 4 (the default is gcc's DWARF 5).
 *
 *   struct_target N [pretty | wait | fopen]
 *
 * calls visit() and make() N times with values from i = 0 .. N-1 (each
 * call's node is changed and freed right after: a value read later than
 * the hit would differ; with `pretty`, the lines of the pretty-printing
 * script instead, and no make() line; with `wait`, first "ready PID"
 * and a line read from stdin, for djp -x, and after "done" the rest of
 * stdin), then visit_bad() once with a node whose `pin`
 * is a page nobody may read and whose `next` is 16, then prints "done".
 * With `fopen`, only N fopen()s of /dev/null instead, each followed by
 * "fileno FD" and its fclose().
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum color { RED = -1, GREEN = 2, BLUE = 7 };
typedef unsigned long ulong_t;
typedef const volatile ulong_t cv_ulong;
typedef struct inner inner_t;

struct inner {
	short s;
	unsigned char uc;
	bool flag;
	enum color col;
};

struct node {
	int8_t i8;
	uint8_t u8;
	int16_t i16;
	uint16_t u16;
	int32_t i32;
	uint32_t u32;
	int64_t i64;
	uint64_t u64;
	bool b;
	enum color c;
	unsigned bf_u : 3;
	int bf_s : 5;
	unsigned bf_hi : 20;
	union {
		int ui;
		float uf;
	} un;
	struct {
		int ax;
		long ay;
	};
	inner_t in;
	struct inner *pin;
	cv_ulong cvu;
	char name[16];
	const char *str;
	int arr[4];
	struct node *next;
};

volatile long sink;
static bool pretty; /* argv[2] "pretty": the lines of the pretty-printing script */
/* Globals for @var("...")->member: the node being visited, and a
 * structure that holds its initializer's values. */
struct node *st_last;
struct inner st_inner = { -7, 9, true, GREEN };

static const char *color_name(enum color c)
{
	static char num[16];
	if (c == RED || c == GREEN || c == BLUE)
		return c == RED ? "RED" : c == GREEN ? "GREEN" : "BLUE";
	snprintf(num, sizeof(num), "%d", (int)c);
	return num;
}

/* What $n$, $n->in$$, $n->pin$ and $k$ print, as stap prints them. */
static void oracle_pretty(const struct node *n, int k)
{
	printf("{.i8=%d, .u8=%u, .i16=%d, .u16=%u, .i32=%d, .u32=%u, .i64=%lld, .u64=%llu, .b=%d, .c=%s, .bf_u=%u, "
	       ".bf_s=%d, .bf_hi=%u, .un={...}, {...}, .in={...}, .pin=%p, .cvu=%lu, .name=\"%s\", .str=\"%s\", "
	       ".arr=[%d, %d, %d, %d], .next=%p}\n",
	       n->i8, n->u8, n->i16, n->u16, n->i32, n->u32, (long long)n->i64, (unsigned long long)n->u64, n->b,
	       color_name(n->c), n->bf_u, n->bf_s, n->bf_hi, (void *)n->pin, (unsigned long)n->cvu, n->name, n->str,
	       n->arr[0], n->arr[1], n->arr[2], n->arr[3], (void *)n->next);
	printf("{.s=%d, .uc=%u, .flag=%d, .col=%s}\n", n->in.s, n->in.uc, n->in.flag, color_name(n->in.col));
	printf("{.s=%d, .uc=%u, .flag=%d, .col=%s}\n", n->pin->s, n->pin->uc, n->pin->flag, color_name(n->pin->col));
	printf("%d\n", k);
	fflush(stdout);
}

/* The lines the scripts print of n (test_script_typed.c's SCRIPT). */
static void oracle(const struct node *n)
{
	printf("%d %d %d %d %d %u %lld %lld\n", n->i8, n->u8, n->i16, n->u16, n->i32, n->u32, (long long)n->i64,
	       (long long)n->u64);
	printf("%d %d %d %d %d\n", n->b, n->c, n->bf_u, n->bf_s, n->bf_hi);
	printf("%d %d %ld %d %d %d %d\n", n->un.ui, n->ax, n->ay, n->in.s, n->in.col, n->pin->uc, n->pin->flag);
	printf("%lu %s %s %d %d\n", (unsigned long)n->cvu, n->name, n->str, n->arr[2], n->next->next->next->i32);
	printf("%ld %d\n", (long)((const char *)&n->arr[1] - (const char *)n), n->next->arr[3]);
	fflush(stdout);
}

__attribute__((noinline)) int visit(struct node *n, int k)
{
	sink += n->i32 + k;
	n->i32 = 12345; /* after the hit: a late read would see this */
	return k;
}

__attribute__((noinline)) struct node *make(int i)
{
	struct node *n = calloc(1, sizeof(*n));
	n->i32 = -i * 1000 - 1;
	n->in.s = (short)(i - 3);
	sink += i;
	return n;
}

__attribute__((noinline)) int visit_bad(struct node *n)
{
	sink += n->i32 + (long)n->pin + (long)n->next; /* else gcc drops their stores */
	return 0;
}

static void fill(struct node *n, struct node *chain, struct inner *pin, long i)
{
	static const char *const strs[] = { "alpha", "beta", "gamma" };
	n->i8 = (int8_t)(-100 + i);
	n->u8 = (uint8_t)(250 + i);
	n->i16 = (int16_t)(-30000 - i);
	n->u16 = (uint16_t)(65530 + i);
	n->i32 = (int32_t)(-2000000000 - i);
	n->u32 = 4000000000u + (uint32_t)i;
	n->i64 = -(1ll << 40) - i;
	n->u64 = (1ull << 63) + (uint64_t)i;
	n->b = i & 1;
	n->c = i % 3 == 0 ? RED : i % 3 == 1 ? GREEN : BLUE;
	n->bf_u = (unsigned)(i + 5) & 7;
	n->bf_s = (int)(-16 + i);
	n->bf_hi = 1000000 + (unsigned)i;
	n->un.ui = 0x7f000000 + (int)i;
	n->ax = (int)(-7 * i);
	n->ay = -(1l << 50) + i;
	n->in.s = (short)(-5 - i);
	n->in.col = BLUE;
	pin->uc = (unsigned char)(200 + i);
	pin->flag = !(i & 1);
	n->pin = pin;
	*(ulong_t *)&n->cvu = 0xfeedfacecafeull + (unsigned long)i;
	snprintf(n->name, sizeof(n->name), "node%d", (int)(i % 1000));
	n->str = strs[i % 3];
	for (int k = 0; k < 4; k++)
		n->arr[k] = (int)(k * 100 - i);
	/* n -> chain[0] -> chain[1] -> chain[2] */
	n->next = &chain[0];
	chain[0].next = &chain[1];
	chain[1].next = &chain[2];
	chain[2].i32 = (int32_t)(i * 11 - 50);
	chain[0].arr[3] = (int)(i + 3000);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1;
	bool wait;
	pretty = argc > 2 && !strcmp(argv[2], "pretty");
	if (argc > 2 && !strcmp(argv[2], "fopen")) { /* libc's FILE, through libc6-dbg */
		for (long i = 0; i < n; i++) {
			FILE *f = fopen("/dev/null", "r");
			printf("fileno %d\n", fileno(f));
			fclose(f);
		}
		printf("done\n");
		return 0;
	}
	wait = argc > 2 && !strcmp(argv[2], "wait");
	if (wait) { /* for djp -x: from a line on stdin */
		char line[64];
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	struct node *bad;
	void *noaccess;

	for (long i = 0; i < n; i++) {
		struct node *nd = calloc(1, sizeof(*nd)), *chain = calloc(3, sizeof(*chain)), *m;
		struct inner *pin = calloc(1, sizeof(*pin));
		fill(nd, chain, pin, i);
		if (pretty)
			oracle_pretty(nd, (int)i);
		else
			oracle(nd);
		st_last = nd;
		visit(nd, (int)i);
		memset(nd, 0xee, sizeof(*nd)); /* and gone: only the hit's values are right */
		free(nd);
		free(chain);
		free(pin);
		if (!pretty)
			printf("%d %d\n", (int)(-i * 1000 - 1), (int)(i - 3));
		fflush(stdout);
		m = make((int)i);
		memset(m, 0xee, sizeof(*m));
		free(m);
	}
	noaccess = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bad = calloc(1, sizeof(*bad));
	bad->pin = noaccess;
	bad->next = (struct node *)16;
	visit_bad(bad);
	printf("done\n");
	fflush(stdout);
	if (wait) { /* and to the end of stdin: the tool may still be talking to its agent */
		char line[64];
		while (fgets(line, sizeof(line), stdin))
			;
	}
	return 0;
}
