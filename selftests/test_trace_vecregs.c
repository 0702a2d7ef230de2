/*
 * A probe served by the lean trampoline, which saves the general registers
 * only, gives back every vector register of the program it observes: djp
 * trace's recorder and a script's aggregation in the target, on the first
 * hit of each marker id (when their cold paths run: a marker's string
 * arguments worked out from the patterns, a plan's names found in a
 * site's format) and after.  The target (trace_progs/vecregs_target.c)
 * keeps known values in the widest vector state the machine has (xmm0-15,
 * ymm0-15, or zmm0-31 and k0-7) across each jump-armed marker, and
 * doubles in xmm0-7 across a function point, and says which came back.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *target(void)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s", djp_test_path("trace_progs/vecregs_target"));
	return path;
}

/* What the target printed for one run: each marker armed with a jump, two
 * runs of each with every register back, and the function's result right
 * (the function point a jump too when `func_armed`). */
static void check_run(const char *out, bool func_armed)
{
	static const char *const names[] = { "vr_a", "vr_b", "vr_c", "vr_d" };
	char line[64];

	if (strstr(out, " corrupt "))
		djp_test_fail(__FILE__, __LINE__, "vector registers changed by a probe:\n%s", out);
	for (unsigned i = 0; i < 4; i++) {
		snprintf(line, sizeof(line), "site %s 0xe9\n", names[i]);
		CHECK(strstr(out, line) != NULL);
		snprintf(line, sizeof(line), "\n%s ok\n", names[i]);
		CHECK_EQ(tt_count(out, line), 2);
	}
	if (func_armed)
		CHECK(strstr(out, "site vr_func 0xe9\n") != NULL);
	CHECK_EQ(tt_count(out, "func ok\n"), 2);
}

/* djp trace -c: every marker recorded, its %s copied. */
TEST_TIMEOUT(trace_vecregs_trace_c, 60)
{
	struct tproc *p;
	int st;

	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", (char *)target(), "vr_[a-d]", NULL }, false,
		     -1);
	CHECK(tt_wait_out(p, "ready ", 20000));
	tt_send(p, "go\n");
	CHECK(tt_wait_out(p, "\ndone\n", 20000));
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %#x: %s", st, p->ebuf);
	check_run(p->obuf, false);
	CHECK_EQ(tt_count(p->obuf, " vr_a s=alpha p="), 2);
	CHECK_EQ(tt_count(p->obuf, " vr_d s=delta p="), 2);
	free(p);
}

/* djp trace -x on the running program (which made `keys` pthread keys
 * first), once every site is a jump. */
static void trace_x(const char *keys)
{
	static const char *const sites[] = { "vr_a_site", "vr_b_site", "vr_c_site", "vr_d_site" };
	struct tproc *t, *d;
	char pid[32];
	int st;

	t = tt_spawn((char *const[]){ (char *)target(), "-k", (char *)keys, NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready ", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "vr_[a-d]", NULL }, false, -1);
	for (unsigned i = 0; i < 4; i++)
		tt_wait_byte(t->pid, tt_func_addr(t->pid, target(), sites[i]), 0xe9, 20000);
	tt_send(t, "go\n");
	CHECK(tt_wait_out(t, "\ndone\n", 20000));
	/* the eight events, then stop */
	for (int i = 0; i < 1000 && tt_count(d->obuf, " vr_") < 8; i++)
		tt_wait_out(d, "\n\n", 20);
	CHECK_EQ(tt_count(d->obuf, " vr_"), 8);
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	check_run(t->obuf, false);
	tt_end(t);
	free(d);
}

TEST_TIMEOUT(trace_vecregs_trace_x, 60)
{
	trace_x("0");
}

/* The library, loaded into a program that made 40 keys, gets keys past
 * glibc's first 32, for which pthread_setspecific allocates (calloc, and
 * libc's vector memset) at a thread's first record. */
TEST_TIMEOUT(trace_vecregs_trace_x_after_40_keys, 60)
{
	trace_x("40");
}

/* Strings a script asks for (user_string of a %p): each pattern connected
 * bumps the recorder's generation of string patterns, so the markers of
 * the patterns before it work out their strings again at their first
 * hit, matching every pattern then. */
static void script_strings(void)
{
	struct tproc *p = tt_run_worker(target(), NULL,
					"probe process.mark(\"vr_a\") { printf(\"a %d\\n\", $arg3) }\n"
					"probe process.mark(\"vr_b\") { printf(\"b %s\\n\", user_string($arg2)) }\n"
					"probe process.mark(\"vr_c\") { printf(\"c %s\\n\", user_string($arg2)) }\n"
					"probe process.mark(\"vr_d\") { printf(\"d %s\\n\", user_string($arg2)) }",
					false, false);
	check_run(p->obuf, false);
	CHECK_EQ(tt_count(p->obuf, "\na 0\n"), 2);
	CHECK_EQ(tt_count(p->obuf, "\nb beta\n"), 2);
	CHECK_EQ(tt_count(p->obuf, "\nd delta\n"), 2);
	free(p);
}

TEST_TIMEOUT(trace_vecregs_script_strings, 60)
{
	script_strings();
}

/* The same with libc's AVX2 string functions (vzeroupper, ymm0-15) where
 * it would pick its EVEX ones (ymm16-31, k0-7): both kinds of machine in
 * one. */
TEST_TIMEOUT(trace_vecregs_script_strings_avx2_libc, 60)
{
	setenv("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ", 1);
	script_strings();
	unsetenv("GLIBC_TUNABLES");
}

/* A script run in the target: a plan at the markers, and one with a named
 * variable at a function point (its index found from the site's format at
 * its first hit). */
TEST_TIMEOUT(trace_vecregs_script_in_target, 60)
{
	struct tproc *p = tt_run_worker(target(), NULL,
					"global c, f\n"
					"probe process.mark(\"vr_[a-d]\") { c[$arg3]++ }\n"
					"probe process.function(\"vr_func\") { f[$v] <<< $v }\n"
					"probe end { foreach (k in c+) printf(\"c %d %d\\n\", k, c[k])\n"
					"  foreach (k in f+) printf(\"f %d %d\\n\", k, @count(f[k])) }",
					false, false);
	check_run(p->obuf, true);
	CHECK_EQ(tt_count(p->obuf, "\nc 0 2\n"), 1);
	CHECK_EQ(tt_count(p->obuf, "\nc 3 2\n"), 1);
	CHECK_EQ(tt_count(p->obuf, "\nf 0 1\n"), 1);
	CHECK_EQ(tt_count(p->obuf, "\nf 1 1\n"), 1);
	free(p);
}
