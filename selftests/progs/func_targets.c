/*
 * Functions for the function-symbol and line-table tests
 * (selftests/test_func_symbols.c): global and static ones, and a function
 * inlined into two callers.  The tests find source lines by the tags in
 * comments ("tag: NAME"), never by number, and the functions by the names
 * listed in the test; keep the two in step.  The bodies differ so that the
 * compiler cannot fold one function into another.
 *
 * Run without arguments, it calls each function once and prints the sum.
 */
#include <stdio.h>
#include <stdlib.h>

volatile int func_target_sink;

/* tag: comment-line */

__attribute__((noinline)) int func_target_add(int a, int b)
{
	int r = a * 3 + b; /* tag: add-body */
	func_target_sink = r;
	return r;
}

__attribute__((noinline)) long func_target_loop(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i ^ (s >> 3);
	func_target_sink = (int)s;
	return s;
}

__attribute__((noinline)) static int func_target_local(int x)
{
	func_target_sink = x;
	return x * 7 - 1; /* tag: local-body */
}

static inline __attribute__((always_inline)) int func_target_inl(int x)
{
	func_target_sink = x + 11; /* tag: inlined-body */
	return x - 5;
}

__attribute__((noinline)) int func_target_caller1(int x)
{
	return func_target_inl(x) * 2;
}

__attribute__((noinline)) int func_target_caller2(int x)
{
	return func_target_inl(x + 3) / 4 + func_target_sink;
}

int main(int argc, char **argv)
{
	int v = argc > 1 ? atoi(argv[1]) : 2;
	long s = func_target_add(v, 1) + func_target_loop(v * 10) + func_target_local(v) +
		 func_target_caller1(v) + func_target_caller2(v);
	printf("%ld\n", s);
	return 0;
}
