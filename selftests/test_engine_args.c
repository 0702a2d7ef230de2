/* Argument decoding at -O2 and -O0, in jump and int3 mode and through the
 * recorder (whose fast entry takes the values the lean trampoline
 * prefetched): runs progs/engine_args{,-O0}, which check every value
 * themselves, and checks that the two builds together met every location
 * kind. */
#include <sys/wait.h>

#include "harness.h"
#include "lib/argloc.h"
#include "test_trace_util.h"

static void run(const char *prog, const char *mode, char *kinds, size_t kindsz)
{
	char cmd[4200], line[64];
	FILE *p;
	int st;
	snprintf(cmd, sizeof(cmd), "%s %s", djp_test_path(prog), mode);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	while (fgets(line, sizeof(line), p))
		if (!strstr(kinds, line) && strlen(kinds) + strlen(line) < kindsz)
			strcat(kinds, line);
	st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "%s %s: status %#x", prog, mode, st);
}

static void run_all(const char *mode)
{
	char kinds[256] = "";
	run("progs/engine_args", mode, kinds, sizeof(kinds));
	run("progs/engine_args-O0", mode, kinds, sizeof(kinds));
	CHECK(strstr(kinds, "reg\n"));
	CHECK(strstr(kinds, "imm\n"));
	CHECK(strstr(kinds, "mem-rsp\n"));
	CHECK(strstr(kinds, "mem-rbp\n"));
	CHECK(strstr(kinds, "abs\n"));
}

TEST(args_every_size_and_location_jump)
{
	run_all("jump");
}

TEST(args_every_size_and_location_int3)
{
	run_all("int3");
}

TEST(args_every_size_and_location_recorded)
{
	run_all("recorder");
}

/* An immediate is what its size prefix says: the low bytes, zero-extended
 * for an unsigned size, sign-extended for a signed one, however the number
 * was printed. */
TEST(args_immediate_follows_size_and_sign)
{
	static const struct {
		const char *in;
		int64_t want;
	} c[] = {
		{ "1@$-56", 200 },
		{ "1@$200", 200 },
		{ "1@$-1", 255 },
		{ "-1@$-56", -56 },
		{ "-1@$200", -56 },
		{ "2@$-5536", 60000 },
		{ "-2@$-30000", -30000 },
		{ "4@$-1294967296", 3000000000LL },
		{ "4@$-1", 4294967295LL },
		{ "-4@$-1294967296", -1294967296LL },
		{ "-4@$3000000000", -1294967296LL },
		{ "8@$-446744073709551616", (int64_t)18000000000000000000ULL },
		{ "-8@$-1", -1 },
		{ "$-1", -1 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct djp_argloc l;
		const char *why = NULL;
		CHECK_EQ(djp_argloc_parse(c[i].in, strlen(c[i].in), &l, NULL, NULL, &why), 0);
		CHECK_EQ(l.kind, DJP_LOC_IMM);
		if (l.disp != c[i].want)
			djp_test_fail(__FILE__, __LINE__, "%s: %lld, expected %lld", c[i].in, (long long)l.disp,
				      (long long)c[i].want);
	}
}

/* The same through `djp trace`: link/linked records unsigned constants of
 * each size with the top bit set, and prints %d for the small ones. */
TEST(args_unsigned_immediates_in_trace_output)
{
	char linked[4096];
	snprintf(linked, sizeof(linked), "%s", djp_test_path("link/linked"));
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", linked, "linked_*", NULL }, false,
				   -1);
	int st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %#x: %s", st, p->ebuf);
	CHECK(strstr(p->obuf, " linked_imm a=200 b=60000 c=3000000000 d=18000000000000000000 e=-5\n"));
	CHECK(strstr(p->obuf, " linked_work x=3000000000\n"));
	free(p);
}
