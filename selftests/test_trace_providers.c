/*
 * SDT providers in patterns (lib/marker_match.h), on libstdc++'s own
 * probes: `djp trace` with `libstdcxx:*`, a script with SystemTap's
 * `process("libstdc++.so.6").provider("libstdcxx").mark("throw")` and a
 * bare `.mark("catch")`, counted exactly against the exceptions the target
 * threw (selftests/trace_progs/trace_cxx.cc).  And patterns that overlap:
 * a site two patterns of one session match records one event per hit.
 * And `-c` of a program that has SDT probes only, directly and through a
 * shell (where the program itself must dial in, not the shell).
 */
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"
#include "kernel/engine.h"
#include "lib/marker_match.h"
#include "test_trace_util.h"

TEST(marker_patterns_with_providers)
{
	char buf[64];
	CHECK(djp_marker_match("throw", "libstdcxx", "throw"));
	CHECK(djp_marker_match("throw", NULL, "throw"));
	CHECK(djp_marker_match("libstdcxx:*", "libstdcxx", "throw"));
	CHECK(djp_marker_match("lib*:th*", "libstdcxx", "throw"));
	CHECK(!djp_marker_match("libstdcxx:*", NULL, "throw"));	 /* a .markers record has no provider */
	CHECK(!djp_marker_match("python:*", "libstdcxx", "throw"));
	CHECK(!djp_marker_match("libstdcxx:catch", "libstdcxx", "throw"));
	CHECK(djp_marker_match("[[:alpha:]]*:throw", "libstdcxx", "throw")); /* colons of a class */
	CHECK(djp_marker_match("t[:]x", NULL, "t:x"));			  /* a bracketed ':' */
	/* full names, as the agent sends them */
	{
		static const char sdt[] = "libstdcxx:throw", plain[] = "tt_tick";
		size_t plen;
		const char *n = djp_marker_split(sdt, &plen);
		CHECK_STR(n, "throw");
		CHECK_EQ(plen, 9);
		CHECK(djp_marker_match_n("libstdcxx:*", sdt, plen, n));
		CHECK(djp_marker_match_n("throw", sdt, plen, n));
		CHECK(!djp_marker_match_n("libstdcxx:*", sdt, 0, n));
		n = djp_marker_split(plain, &plen);
		CHECK_STR(n, "tt_tick");
		CHECK_EQ(plen, 0);
		CHECK(djp_marker_match_n("tt_*", plain, plen, n));
		CHECK(!djp_marker_match_n("x:tt_*", plain, plen, n));
	}
	CHECK_STR(djp_marker_full_name(buf, sizeof(buf), "libstdcxx", "throw"), "libstdcxx:throw");
	CHECK_STR(djp_marker_full_name(buf, sizeof(buf), NULL, "tt_tick"), "tt_tick");
}

/* Launch `djp ARGS... -c trace_cxx`, make it throw n exceptions, end its
 * input; the finished tool. */
static struct tproc *throw_under(char *const argv[], long n)
{
	struct tproc *p = tt_spawn(argv, false, -1);
	char line[64];
	int st;
	CHECK(tt_wait_out(p, "ready ", 10000));
	snprintf(line, sizeof(line), "throw %ld\n", n);
	tt_send(p, line);
	snprintf(line, sizeof(line), "thrown %ld", n);
	CHECK(tt_wait_out(p, line, 10000));
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s", st, p->ebuf);
	return p;
}

TEST_TIMEOUT(trace_provider_pattern_counts_libstdcxx_exactly, 60)
{
	unsigned long long ev, lost;
	/* two patterns, both matching libstdcxx:throw: one event a hit */
	struct tproc *p = throw_under(
		(char *const[]){ (char *)tt_djp(), "trace", "-c", (char *)tt_cxx(false), "libstdcxx:*", "throw", NULL }, 500);
	if (!tt_summary_row(p->ebuf, "libstdcxx:throw", &ev, &lost) || ev != 500 || lost)
		djp_test_fail(__FILE__, __LINE__, "throw: %s", p->ebuf);
	if (!tt_summary_row(p->ebuf, "libstdcxx:catch", &ev, &lost) || ev != 500 || lost)
		djp_test_fail(__FILE__, __LINE__, "catch: %s", p->ebuf);
	CHECK(!tt_summary_row(p->ebuf, "cxx_ready", &ev, &lost));
	free(p);
}

TEST_TIMEOUT(script_provider_points_count_libstdcxx_exactly, 60)
{
	struct tproc *p = throw_under(
		(char *const[]){ (char *)tt_djp(), "-c", (char *)tt_cxx(false), "-e",
				 "global t, c, where\n"
				 "probe process(\"libstdc++.so.6\").provider(\"libstdcxx\").mark(\"throw\") { t++; where = pp() }\n"
				 "probe process.mark(\"catch\"), process.provider(\"libstdcxx\").mark(\"cat*\") { c++ }\n"
				 "probe end { printf(\"t=%d c=%d %s\\n\", t, c, where) }",
				 NULL },
		300);
	/* the catch probe names its marker twice: one binding, one event a hit */
	if (!strstr(p->obuf, "t=300 c=300 process(\"") || !strstr(p->obuf, "\").provider(\"libstdcxx\").mark(\"throw\")"))
		djp_test_fail(__FILE__, __LINE__, "output: %s / %s", p->obuf, p->ebuf);
	free(p);
}

TEST_TIMEOUT(script_provider_point_matching_nothing_is_an_error, 30)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", (char *)tt_cxx(false), "-e",
						    "probe process.provider(\"nosuch\").mark(\"*\") { }", NULL },
				   false, -1);
	int st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	CHECK(strstr(p->ebuf, "nosuch") != NULL);
	free(p);
}

/* The engine: probes of one client with DJP__ONCE and the same handler
 * and data run once a hit; other probes (the public API) each run. */
static atomic_long calls;

static void count(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&calls, 1);
}

__attribute__((noinline)) static void once_site(void)
{
	MARK(once_site_a);
}

TEST(overlapping_probes_of_one_client_run_once)
{
	struct djp_connect_opts o = { .once = true };
	static int data;
	int a = djp__connect("once_site_*", count, &data, DJP_GPR_ONLY, &o);
	int b = djp__connect("once_site_a", count, &data, DJP_GPR_ONLY, &o);
	int c;
	CHECK(a >= 0 && b >= 0);
	atomic_store(&calls, 0);
	once_site();
	CHECK_EQ(atomic_load(&calls), 1);
	CHECK_EQ(djp_disconnect(a), 0); /* the one that ran goes: the other takes over */
	once_site();
	CHECK_EQ(atomic_load(&calls), 2);
	c = djp_connect("once_site_a", count, &data, DJP_GPR_ONLY); /* not once: runs as well */
	CHECK(c >= 0);
	once_site();
	CHECK_EQ(atomic_load(&calls), 4);
	CHECK_EQ(djp_disconnect(b), 0);
	CHECK_EQ(djp_disconnect(c), 0);
	once_site();
	CHECK_EQ(atomic_load(&calls), 4);
}

/* Of one client's DJP__ONCE probes (same data), the one that walks the
 * stack runs, whichever came first: it does all the others do. */
static atomic_long stack_calls;

static void count_stack(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&stack_calls, 1);
}

TEST(overlapping_probes_of_one_client_run_the_stack_one)
{
	struct djp_connect_opts o = { .once = true }, s = { .once = true, .stack = true };
	static int data;
	int a = djp__connect("once_site_*", count, &data, DJP_GPR_ONLY, &o);
	int b = djp__connect("once_site_a", count_stack, &data, DJP_GPR_ONLY, &s);
	CHECK(a >= 0 && b >= 0);
	atomic_store(&calls, 0);
	once_site();
	CHECK_EQ(atomic_load(&calls), 0);
	CHECK_EQ(atomic_load(&stack_calls), 1);
	CHECK_EQ(djp_disconnect(b), 0);
	once_site();
	CHECK_EQ(atomic_load(&calls), 1);
	CHECK_EQ(atomic_load(&stack_calls), 1);
	CHECK_EQ(djp_disconnect(a), 0);
}

/* A program with no marker of its own, run by -c: traced all the same. */
TEST_TIMEOUT(trace_c_of_a_program_with_sdt_probes_only, 60)
{
	unsigned long long ev, lost;
	struct tproc *p = throw_under(
		(char *const[]){ (char *)tt_djp(), "trace", "-c", (char *)tt_cxx(true), "libstdcxx:throw", NULL }, 200);
	if (!tt_summary_row(p->ebuf, "libstdcxx:throw", &ev, &lost) || ev != 200 || lost)
		djp_test_fail(__FILE__, __LINE__, "throw: %s", p->ebuf);
	free(p);
}

/* Through a shell: the shell has no probes of its own and lets the
 * command it starts dial in; here none has any, so nobody dials, and the
 * command, which outlives the tool's dial-in wait (10 s), is left to
 * finish, not killed. */
TEST_TIMEOUT(trace_c_through_a_shell_never_kills_the_command, 60)
{
	char cmd[4200];
	struct tproc *p;
	int st;
	snprintf(cmd, sizeof(cmd), "sleep 11; exit 3");
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "x*", NULL }, false, -1);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	if (!strstr(p->ebuf, "exited with status 3 before its agent connected") || !strstr(p->ebuf, "waiting for it"))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	free(p);
}
