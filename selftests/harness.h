/*
 * The selftest harness, after the kernel's kselftest_harness.h: TEST(name)
 * defines a test; the runner (harness.c) forks each one into its own process
 * group with a timeout, prints TAP, and ends with "N passed, N failed".
 *
 * Inside a test: CHECK(cond), CHECK_EQ(a, b), CHECK_STR(a, b) stop the test
 * with a diagnostic; SKIP("why") ends it as skipped.  A test passes when it
 * returns.  TEST_TIMEOUT(name, seconds) sets a timeout other than 30 s.
 */
#ifndef DJP_SELFTEST_HARNESS_H
#define DJP_SELFTEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*djp_test_fn)(void);
void djp_test_register(const char *name, djp_test_fn fn, const char *file, int timeout);
__attribute__((noreturn, format(printf, 3, 4))) void djp_test_fail(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn)) void djp_test_skip(const char *why);

/* Path of a file built next to the selftest binary ("progs/args-O2"), in
 * a buffer the next call reuses; _dup: in memory of its own (malloc). */
const char *djp_test_path(const char *rel);
char *djp_test_path_dup(const char *rel);

#define TEST_TIMEOUT(name, seconds)                                                           \
	static void test_##name(void);                                                        \
	__attribute__((constructor)) static void test_register_##name(void)                   \
	{                                                                                     \
		djp_test_register(#name, test_##name, __FILE__, seconds);                     \
	}                                                                                     \
	static void test_##name(void)
#define TEST(name) TEST_TIMEOUT(name, 30)

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond))                                                                  \
			djp_test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);          \
	} while (0)
#define CHECK_EQ(a, b)                                                                        \
	do {                                                                                  \
		long long _a = (long long)(a), _b = (long long)(b);                           \
		if (_a != _b)                                                                 \
			djp_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, _a, _b); \
	} while (0)
#define CHECK_STR(a, b)                                                                       \
	do {                                                                                  \
		const char *_a = (a), *_b = (b);                                              \
		if (!_a || !_b || strcmp(_a, _b))                                             \
			djp_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,     \
				      _a ? _a : "(null)", _b ? _b : "(null)");               \
	} while (0)
#define SKIP(why) djp_test_skip(why)

#endif
