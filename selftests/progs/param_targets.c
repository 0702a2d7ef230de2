/*
 * Functions for the parameter tests (selftests/test_func_params.c): every
 * base type, pointers, enumerations, more integer arguments than there are
 * registers, floating point between integers, structures by value, a
 * returned structure, __int128 and long double, a static function, a
 * parameter the optimizer drops and a function GCC clones at -O2.
 *
 * Before each call main prints "call NAME", then " name=value" for each
 * argument in order: an integer as its 64-bit two's-complement pattern
 * (%lld of the value converted to long long, pointers through uintptr_t),
 * anything else as "~WHAT": ~vec for a floating-point argument the
 * calling convention puts in a vector register, ~float for one it puts in
 * memory, ~struct for a structure, ~wide for a 128-bit integer.  The test
 * reads the expected values there, never from its own source.
 *
 * Tags in comments, after "tag:": "types NAME: T1|T2|..." the parameter
 * types as SystemTap spells them; "body NAME" a line after a call inside
 * the function, where the parameters live in callee-saved registers or the
 * frame, and where the test probes too.  The arguments are not changed by
 * the functions, so a probe anywhere in them sees the values printed.
 * noipa keeps GCC from changing how the functions are called, except
 * pt_clone, which is meant to be cloned.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum color { RED = 1, GREEN = 2, BLUE = 7 };
enum sign { NEG = -3, POS = 3 };
struct node {
	int id;
	struct node *next;
};
struct point { /* two INTEGER eightbytes: two registers */
	long x, y;
};
struct mix { /* SSE, INTEGER: a vector register and a general one */
	double d;
	long l;
};
struct big { /* more than 16 bytes: memory */
	long v[5];
};
typedef unsigned long ulong_t;
/* Small aggregates, classified by their members (one or two eightbytes). */
struct f2 { /* SSE: one vector register */
	float a, b;
};
struct ifl { /* INTEGER and SSE in one eightbyte: INTEGER */
	int i;
	float f;
};
struct c3 { /* INTEGER */
	char c[3];
};
struct __attribute__((packed)) pk { /* a misaligned member: memory */
	char c;
	long l;
};
union ud { /* INTEGER */
	double d;
	long l;
};
struct ld1 { /* X87: memory as an argument, %st0 as a return value */
	long double x;
};
struct d2 { /* SSE SSE: two vector registers */
	double a, b;
};
struct bits { /* bit-fields: INTEGER */
	unsigned a : 3, b : 20;
	int c;
};
struct fa { /* SSE, then SSE merged with INTEGER: INTEGER */
	float f[3];
	int i;
};

volatile long pt_sink;
volatile long pt_global = 77;

#define NOIPA __attribute__((noipa))

/* A call inside each function: the argument registers are gone after it. */
NOIPA void pt_touch(long x)
{
	pt_sink += x;
}

NOIPA int pt_cb(int x, const char *s)
{
	return x + s[0];
}

/* tag: types pt_chars: char|signed char|unsigned char|_Bool */
NOIPA int pt_chars(char c, signed char sc, unsigned char uc, _Bool b)
{
	pt_touch(1);
	return c + sc + uc + b; /* tag: body pt_chars */
}

/* tag: types pt_ints: short int|short unsigned int|int|unsigned int|long int|long unsigned int */
NOIPA long pt_ints(short s, unsigned short us, int i, unsigned u, long l, unsigned long ul)
{
	pt_touch(2);
	return s + us + i + (long)u + l + (long)ul; /* tag: body pt_ints */
}

/* tag: types pt_longs: long long int|long long unsigned int|ulong_t|enum color|enum sign|char const* */
NOIPA long pt_longs(long long ll, unsigned long long ull, ulong_t t, enum color col, enum sign sg, const char *cs)
{
	pt_touch(3);
	return (long)(ll + (long long)ull + (long long)t + col + sg + cs[0]); /* tag: body pt_longs */
}

/* tag: types pt_ptrs: char*|char const*|struct node*|void*|int*|long int volatile const* */
NOIPA long pt_ptrs(char *str, const char *cstr, struct node *n, void *v, int *ip, const volatile long *gp)
{
	pt_touch(4);
	return str[0] + cstr[1] + n->id + (v != NULL) + *ip + *gp; /* tag: body pt_ptrs */
}

/* Eleven integers: the last five on the stack.
 * tag: types pt_many: int|long int|short int|char|unsigned int|long int|int|long int|short int|unsigned char|long long int */
NOIPA long pt_many(int a1, long a2, short a3, char a4, unsigned a5, long a6, int a7, long a8, short a9,
		   unsigned char a10, long long a11)
{
	pt_touch(5);
	return a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11; /* tag: body pt_many */
}

/* Floating point between integers takes no general register.
 * tag: types pt_mixed: int|double|long int|float|int|char* */
NOIPA long pt_mixed(int a, double d, long b, float f, int c, char *s)
{
	pt_touch(6);
	return a + (long)d + b + (long)f + c + s[0]; /* tag: body pt_mixed */
}

/* A structure of two eightbytes before integers takes two registers.
 * tag: types pt_struct_first: struct point|int|long int */
NOIPA long pt_struct_first(struct point p, int a, long b)
{
	pt_touch(7);
	return p.x + p.y + a + b; /* tag: body pt_struct_first */
}

/* An SSE+INTEGER structure, then one in memory, then integers.
 * tag: types pt_structs: struct mix|struct big|int|long int */
NOIPA long pt_structs(struct mix m, struct big s, int a, long b)
{
	pt_touch(8);
	return (long)m.d + m.l + s.v[0] + s.v[4] + a + b; /* tag: body pt_structs */
}

/* Returned in memory: a hidden pointer comes first.
 * tag: types pt_ret_big: int|long int */
NOIPA struct big pt_ret_big(int a, long b)
{
	struct big r = { { a, b, a + b, a - b, 0 } };
	pt_touch(9);
	r.v[4] = a * b; /* tag: body pt_ret_big */
	return r;
}

/* tag: types pt_static: int|long int */
NOIPA static int pt_static(int a, long b)
{
	pt_touch(10);
	return (int)(a * b); /* tag: body pt_static */
}

/* `dropped` is never read: at -O2 its register is gone after the call.
 * tag: types pt_unused: int|int */
NOIPA int pt_unused(int used, int dropped)
{
	pt_touch(11);
	return used * 3; /* tag: body pt_unused */
}

/* __int128 takes two registers when two are left.
 * tag: types pt_wide: int|__int128|int */
NOIPA long pt_wide(int a, __int128 w, int b)
{
	pt_touch(12);
	return a + (long)w + b; /* tag: body pt_wide */
}

/* With one register left, __int128 goes to the stack and the register
 * goes to the next integer.
 * tag: types pt_wide_split: long int|long int|long int|long int|long int|__int128|long int */
NOIPA long pt_wide_split(long a1, long a2, long a3, long a4, long a5, __int128 w, long b)
{
	pt_touch(13);
	return a1 + a2 + a3 + a4 + a5 + (long)w + b; /* tag: body pt_wide_split */
}

/* Stack slots aligned for long double and __int128.
 * tag: types pt_stack_mix: long int|long int|long int|long int|long int|long int|long double|int|__int128|char */
NOIPA long pt_stack_mix(long a1, long a2, long a3, long a4, long a5, long a6, long double ld, int s1, __int128 w,
			char s2)
{
	pt_touch(14);
	return a1 + a2 + a3 + a4 + a5 + a6 + (long)ld + s1 + (long)w + s2; /* tag: body pt_stack_mix */
}

/* The ninth double goes to the stack, before the seventh integer.
 * tag: types pt_many_floats: double|double|double|double|double|double|double|double|double|long int|long int|long int|long int|long int|long int|long int */
NOIPA long pt_many_floats(double f1, double f2, double f3, double f4, double f5, double f6, double f7, double f8,
			  double f9, long a1, long a2, long a3, long a4, long a5, long a6, long s1)
{
	pt_touch(15);
	long sum = a1 + a2 + a3 + a4 + a5 + a6 + s1; /* tag: body pt_many_floats */
	return (long)(f1 + f2 + f3 + f4 + f5 + f6 + f7 + f8 + f9) + sum;
}

/* A typedef and a function pointer, spelled.
 * tag: types pt_fnptr: int (*)(int, char const*)|ulong_t|struct node const* */
NOIPA long pt_fnptr(int (*cb)(int, const char *), ulong_t t, const struct node *n)
{
	pt_touch(16);
	return cb(1, "x") + (long)t + n->id; /* tag: body pt_fnptr */
}

/* The '...' is not a parameter.
 * tag: types pt_variadic: int|char const* */
NOIPA int pt_variadic(int n, const char *fmt, ...)
{
	pt_touch(17);
	return n + fmt[0]; /* tag: body pt_variadic */
}

/* Aggregates of one or two eightbytes, each before two integers whose
 * registers show what the aggregate took.
 * tag: types pt_agg1: struct f2|int|long int|struct ifl|int|struct c3|long int */
NOIPA long pt_agg1(struct f2 s, int a, long b, struct ifl t, int c, struct c3 u, long d)
{
	pt_touch(19);
	return (long)s.a + a + b + t.i + c + u.c[0] + d; /* tag: body pt_agg1 */
}

/* tag: types pt_agg2: struct pk|int|union ud|long int|struct ld1|int|struct d2|long int */
NOIPA long pt_agg2(struct pk s, int a, union ud t, long b, struct ld1 u, int c, struct d2 v, long d)
{
	pt_touch(20);
	return s.l + a + t.l + b + (long)u.x + c + (long)v.a + d; /* tag: body pt_agg2 */
}

/* tag: types pt_agg3: struct bits|int|struct fa|long int|complex double|int */
NOIPA long pt_agg3(struct bits s, int a, struct fa t, long b, _Complex double z, int c)
{
	pt_touch(21);
	return s.b + a + t.i + b + (long)__real__ z + c; /* tag: body pt_agg3 */
}

/* A structure needing two registers when one is left goes to the stack;
 * the register goes to the next integer.
 * tag: types pt_regs_full: long int|long int|long int|long int|long int|struct point|long int|struct point|int */
NOIPA long pt_regs_full(long a1, long a2, long a3, long a4, long a5, struct point p, long b, struct point q, int s)
{
	pt_touch(22);
	return a1 + a2 + a3 + a4 + a5 + p.x + b + q.y + s; /* tag: body pt_regs_full */
}

/* _Complex long double: 32 bytes of memory, aligned to 16.
 * tag: types pt_cld: long int|long int|long int|long int|long int|long int|int|complex long double|int */
NOIPA long pt_cld(long a1, long a2, long a3, long a4, long a5, long a6, int s1, _Complex long double z, int s2)
{
	pt_touch(23);
	return a1 + a2 + a3 + a4 + a5 + a6 + s1 + (long)__real__ z + s2; /* tag: body pt_cld */
}

/* Returned in %rax:%rdx and in %st0: no hidden pointer.
 * tag: types pt_ret_point: int|long int */
NOIPA struct point pt_ret_point(int a, long b)
{
	struct point r = { a, b };
	pt_touch(24);
	r.y += a; /* tag: body pt_ret_point */
	return r;
}

/* tag: types pt_ret_ld1: int|long int */
NOIPA struct ld1 pt_ret_ld1(int a, long b)
{
	struct ld1 r = { a };
	pt_touch(25);
	r.x += (long double)b; /* tag: body pt_ret_ld1 */
	return r;
}

/* At -O2 GCC clones this for the constant k (pt_clone.constprop.0): the
 * clone's registers are not the declaration's.
 * tag: types pt_clone: long int|int|long int */
static __attribute__((noinline)) long pt_clone(long a, int spare, long k)
{
	pt_touch(18);
	return a * k + spare; /* tag: body pt_clone */
}

/* The lines go to stdout, or with PARAM_TARGETS_STDERR set to stderr: a
 * tool that traces the program prints to the same stdout. */
static FILE *out;
#define I(x) fprintf(out, " %s=%lld", #x, (long long)(x))
#define P(x) fprintf(out, " %s=%lld", #x, (long long)(uintptr_t)(x))
#define NOT(x, what) fprintf(out, " %s=~%s", #x, what)
#define CALL(name) fprintf(out, "call %s", name)
#define END() (fprintf(out, "\n"), fflush(out))

/* Values from the command line where a constant would do, so that the
 * compiler cannot know them (argv[1] shifts them all; default 0). */
static long k0;

int main(int argc, char **argv)
{
	long r = 0;
	k0 = argc > 1 ? atol(argv[1]) : 0;
	out = getenv("PARAM_TARGETS_STDERR") ? stderr : stdout;

	{
		char c = (char)(65 + k0);
		signed char sc = (signed char)(-100 - k0);
		unsigned char uc = (unsigned char)(200 + k0);
		_Bool b = k0 == 0;
		CALL("pt_chars"), I(c), I(sc), I(uc), I(b), END();
		r += pt_chars(c, sc, uc, b);
	}
	{
		short s = (short)(-30000 - k0);
		unsigned short us = (unsigned short)(60000 + k0);
		int i = (int)(-2000000000 - k0);
		unsigned u = 4000000000u + (unsigned)k0;
		long l = -5000000000L - k0;
		unsigned long ul = 0xfedcba9876543210UL + (unsigned long)k0;
		CALL("pt_ints"), I(s), I(us), I(i), I(u), I(l), I(ul), END();
		r += pt_ints(s, us, i, u, l, ul);
	}
	{
		long long ll = -9000000000000000000LL - k0;
		unsigned long long ull = 18000000000000000000ULL + (unsigned long long)k0;
		ulong_t t = 123456789UL + (ulong_t)k0;
		enum color col = k0 ? GREEN : BLUE;
		enum sign sg = k0 ? POS : NEG;
		const char *cs = "const";
		CALL("pt_longs"), I(ll), I(ull), I(t), I(col), I(sg), P(cs), END();
		r += pt_longs(ll, ull, t, col, sg, cs);
	}
	{
		static char buf[] = "buffer";
		static int x = 31;
		struct node second = { 2, NULL }, first = { 1, &second };
		char *str = buf;
		const char *cstr = "literal";
		struct node *n = &first;
		void *v = &second;
		int *ip = &x;
		const volatile long *gp = &pt_global;
		CALL("pt_ptrs"), P(str), P(cstr), P(n), P(v), P(ip), P(gp), END();
		r += pt_ptrs(str, cstr, n, v, ip, gp);
	}
	{
		int a1 = (int)(-1 - k0), a7 = (int)(-7 - k0);
		long a2 = 2000000002L + k0, a6 = -6000000006L - k0, a8 = 8000000008L + k0;
		short a3 = (short)(-3 - k0), a9 = (short)(-9999 - k0);
		char a4 = (char)(4 + k0);
		unsigned a5 = 3000000005u + (unsigned)k0;
		unsigned char a10 = (unsigned char)(250 + k0);
		long long a11 = -1100000000011LL - k0;
		CALL("pt_many"), I(a1), I(a2), I(a3), I(a4), I(a5), I(a6), I(a7), I(a8), I(a9), I(a10), I(a11), END();
		r += pt_many(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);
	}
	{
		int a = (int)(-11 - k0), c = (int)(33 + k0);
		double d = 2.5 + (double)k0;
		long b = 22000000000L + k0;
		float f = 1.25f + (float)k0;
		char *s = "s";
		CALL("pt_mixed"), I(a), NOT(d, "vec"), I(b), NOT(f, "vec"), I(c), P(s), END();
		r += pt_mixed(a, d, b, f, c, s);
	}
	{
		struct point p = { 5 + k0, 6 + k0 };
		int a = (int)(-77 - k0);
		long b = 78000000000L + k0;
		CALL("pt_struct_first"), NOT(p, "struct"), I(a), I(b), END();
		r += pt_struct_first(p, a, b);
	}
	{
		struct mix m = { 1.5 + (double)k0, 9 + k0 };
		struct big s = { { 1 + k0, 2, 3, 4, 5 } };
		int a = (int)(-88 - k0);
		long b = -89000000000L - k0;
		CALL("pt_structs"), NOT(m, "struct"), NOT(s, "struct"), I(a), I(b), END();
		r += pt_structs(m, s, a, b);
	}
	{
		int a = (int)(-99 - k0);
		long b = 100000000000L + k0;
		CALL("pt_ret_big"), I(a), I(b), END();
		r += pt_ret_big(a, b).v[2];
	}
	{
		int a = (int)(123 + k0);
		long b = -124000000000L - k0;
		CALL("pt_static"), I(a), I(b), END();
		r += pt_static(a, b);
	}
	{
		int used = (int)(55 + k0), dropped = (int)(-56 - k0);
		CALL("pt_unused"), I(used), I(dropped), END();
		r += pt_unused(used, dropped);
	}
	{
		int a = (int)(-1 - k0), b = (int)(3 + k0);
		__int128 w = (__int128)k0 << 70;
		CALL("pt_wide"), I(a), NOT(w, "wide"), I(b), END();
		r += pt_wide(a, w, b);
	}
	{
		long a1 = 1 + k0, a2 = -2 - k0, a3 = 3 + k0, a4 = -4 - k0, a5 = 5 + k0, b = -6000000000L - k0;
		__int128 w = (__int128)(k0 + 1) << 65;
		CALL("pt_wide_split"), I(a1), I(a2), I(a3), I(a4), I(a5), NOT(w, "wide"), I(b), END();
		r += pt_wide_split(a1, a2, a3, a4, a5, w, b);
	}
	{
		long a1 = 11 + k0, a2 = 12 + k0, a3 = 13 + k0, a4 = 14 + k0, a5 = 15 + k0, a6 = 16 + k0;
		long double ld = 0.5L + (long double)k0;
		int s1 = (int)(-17000 - k0);
		__int128 w = (__int128)(k0 + 3) << 64;
		char s2 = (char)(-18 - k0);
		CALL("pt_stack_mix"), I(a1), I(a2), I(a3), I(a4), I(a5), I(a6), NOT(ld, "float"), I(s1), NOT(w, "wide"),
			I(s2), END();
		r += pt_stack_mix(a1, a2, a3, a4, a5, a6, ld, s1, w, s2);
	}
	{
		double f1 = 1 + (double)k0, f2 = 2, f3 = 3, f4 = 4, f5 = 5, f6 = 6, f7 = 7, f8 = 8, f9 = 9;
		long a1 = -21 - k0, a2 = 22, a3 = -23, a4 = 24, a5 = -25, a6 = 26, s1 = -27000000000L - k0;
		CALL("pt_many_floats"), NOT(f1, "vec"), NOT(f2, "vec"), NOT(f3, "vec"), NOT(f4, "vec"), NOT(f5, "vec"),
			NOT(f6, "vec"), NOT(f7, "vec"), NOT(f8, "vec"), NOT(f9, "float"), I(a1), I(a2), I(a3), I(a4),
			I(a5), I(a6), I(s1), END();
		r += pt_many_floats(f1, f2, f3, f4, f5, f6, f7, f8, f9, a1, a2, a3, a4, a5, a6, s1);
	}
	{
		int (*cb)(int, const char *) = pt_cb;
		ulong_t t = 4242 + (ulong_t)k0;
		struct node one = { 3, NULL };
		const struct node *n = &one;
		CALL("pt_fnptr"), P(cb), I(t), P(n), END();
		r += pt_fnptr(cb, t, n);
	}
	{
		int n = (int)(7 + k0);
		const char *fmt = "%d";
		CALL("pt_variadic"), I(n), P(fmt), END();
		r += pt_variadic(n, fmt, 1, 2);
	}
	{
		struct f2 s = { 1.5f, 2.5f };
		struct ifl t = { (int)(3 + k0), 4.5f };
		struct c3 u = { { 'x', 'y', 'z' } };
		int a = (int)(-191 - k0), c = (int)(193 + k0);
		long b = 192000000000L + k0, d = -194000000000L - k0;
		CALL("pt_agg1"), NOT(s, "struct"), I(a), I(b), NOT(t, "struct"), I(c), NOT(u, "struct"), I(d), END();
		r += pt_agg1(s, a, b, t, c, u, d);
	}
	{
		struct pk s = { 'p', 5 + k0 };
		union ud t = { .l = 6 + k0 };
		struct ld1 u = { 7.5L };
		struct d2 v = { 8.5, 9.5 };
		int a = (int)(-201 - k0), c = (int)(203 + k0);
		long b = 202000000000L + k0, d = -204000000000L - k0;
		CALL("pt_agg2"), NOT(s, "struct"), I(a), NOT(t, "struct"), I(b), NOT(u, "struct"), I(c), NOT(v, "struct"),
			I(d), END();
		r += pt_agg2(s, a, t, b, u, c, v, d);
	}
	{
		struct bits s = { 5, 1000 + (unsigned)k0, -7 };
		struct fa t = { { 1.0f, 2.0f, 3.0f }, (int)(11 + k0) };
		_Complex double z = 1.0 + 2.0 * __extension__ 1.0i;
		int a = (int)(-211 - k0), c = (int)(213 + k0);
		long b = 212000000000L + k0;
		CALL("pt_agg3"), NOT(s, "struct"), I(a), NOT(t, "struct"), I(b), NOT(z, "vec"), I(c), END();
		r += pt_agg3(s, a, t, b, z, c);
	}
	{
		long a1 = 221 + k0, a2 = 222, a3 = 223, a4 = 224, a5 = 225, b = -226000000000L - k0;
		struct point p = { 1, 2 }, q = { 3, 4 };
		int s = (int)(-227 - k0);
		CALL("pt_regs_full"), I(a1), I(a2), I(a3), I(a4), I(a5), NOT(p, "struct"), I(b), NOT(q, "struct"), I(s),
			END();
		r += pt_regs_full(a1, a2, a3, a4, a5, p, b, q, s);
	}
	{
		long a1 = 231 + k0, a2 = 232, a3 = 233, a4 = 234, a5 = 235, a6 = 236;
		int s1 = (int)(-237 - k0), s2 = (int)(238 + k0);
		_Complex long double z = 1.0L;
		CALL("pt_cld"), I(a1), I(a2), I(a3), I(a4), I(a5), I(a6), I(s1), NOT(z, "float"), I(s2), END();
		r += pt_cld(a1, a2, a3, a4, a5, a6, s1, z, s2);
	}
	{
		int a = (int)(-241 - k0);
		long b = 242000000000L + k0;
		CALL("pt_ret_point"), I(a), I(b), END();
		r += pt_ret_point(a, b).y;
	}
	{
		int a = (int)(-251 - k0);
		long b = 252000000000L + k0;
		CALL("pt_ret_ld1"), I(a), I(b), END();
		r += (long)pt_ret_ld1(a, b).x;
	}
	{
		long a = 606 + k0;
		int spare = (int)(-607 - k0);
		CALL("pt_clone"), I(a), I(spare), fprintf(out, " k=4"), END();
		r += pt_clone(a, spare, 4);
		r += pt_clone(a + 1, spare, 4);
	}
	printf("done %ld\n", r);
	return 0;
}
