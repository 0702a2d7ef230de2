/*
 * Functions whose parameters tools/djp/kfunc_dwarf.c names by register, as
 * it does a kernel module's: this file is compiled with -g into a
 * relocatable object (a .ko is one), and selftests/test_kfunc_dwarf.c
 * reads it.  Every width and sign of integer, a pointer, a bool, floats
 * (in SSE registers: no integer register), structs of 8 bytes (one
 * register), 16 (two) and 24 (in memory), a structure of floats (vector
 * registers), and a structure returned in memory (its hidden pointer
 * takes %rdi).
 */
#include <stdbool.h>

struct kp_pair {
	int a, b;
};
struct kp_wide {
	long a, b;
};
struct kp_big {
	long a, b, c;
};
struct kp_fpair {
	float x, y;
};

int kp_mixed(int neg, unsigned char small, short sh, const char *name, long big, bool flag);
long kp_float(double d, int after, struct kp_pair p, float f, struct kp_big b, unsigned long u);
void kp_wide(int x, struct kp_wide w, int y);
int kp_seven(long a1, long a2, long a3, long a4, long a5, long a6, long a7);
struct kp_big kp_retbig(int a, long b);
int kp_fpair(struct kp_fpair p, int after);

int kp_mixed(int neg, unsigned char small, short sh, const char *name, long big, bool flag)
{
	return neg + small + sh + name[0] + (int)big + flag;
}

long kp_float(double d, int after, struct kp_pair p, float f, struct kp_big b, unsigned long u)
{
	return (long)d + after + p.a + (long)f + b.c + (long)u;
}

void kp_wide(int x, struct kp_wide w, int y)
{
	__asm__ volatile("" : : "r"(x), "r"(w.a), "r"(y));
}

int kp_seven(long a1, long a2, long a3, long a4, long a5, long a6, long a7)
{
	return (int)(a1 + a2 + a3 + a4 + a5 + a6 + a7);
}

struct kp_big kp_retbig(int a, long b)
{
	return (struct kp_big){ a, b, a + b };
}

int kp_fpair(struct kp_fpair p, int after)
{
	return (int)(p.x + p.y) + after;
}
