/* Values as a user reads them: numbers as their C type says (signed and
 * unsigned decimal, pointers in hex), from DWARF for functions' parameters
 * and return values, from the SDT size and sign for probes without a
 * format; as bpftrace prints them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static struct tproc *trace_typed(bool json, long n)
{
	char cmd[4200];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %ld", tt_typed_target(false), n);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:tt_*%return", "func:tt_ptr", "typed:*",
				      json ? "--json" : NULL, NULL },
		     false, -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
	return p;
}

static void want(const char *out, const char *line)
{
	if (tt_count(out, line) != 1)
		djp_test_fail(__FILE__, __LINE__, "no line \"%s\" in:\n%s", line, out);
}

TEST_TIMEOUT(trace_numbers_print_as_their_c_type, 60)
{
	struct tproc *p = trace_typed(false, 3);
	char line[128];

	for (long i = 0; i < 3; i++) {
		snprintf(line, sizeof(line), " func:tt_neg%%return i=%ld return=%ld\n", i, -3 * i - 1);
		want(p->obuf, line);
		snprintf(line, sizeof(line), " func:tt_int%%return x=%ld return=%ld\n", i, i - 100);
		want(p->obuf, line);
		snprintf(line, sizeof(line), " func:tt_uns%%return u=%ld return=%u\n", i, (unsigned)i + 0xffff0000u);
		want(p->obuf, line);
		snprintf(line, sizeof(line), " typed:vals arg1=%ld arg2=%" PRIu64 "\n", -(i + 7), ~(uint64_t)0 - (uint64_t)i);
		want(p->obuf, line);
	}
	/* pointers in hex, the return one past the parameter */
	CHECK_EQ(tt_count(p->obuf, " func:tt_ptr p=0x"), 3);
	CHECK_EQ(tt_count(p->obuf, " func:tt_ptr%return p=0x"), 3);
	CHECK(strstr(p->obuf, " return=0x"));
	free(p);
	/* in JSON the numbers are numbers, a pointer a string */
	p = trace_typed(true, 1);
	want(p->obuf, "\"name\":\"func:tt_neg%return\",\"args\":{\"i\":0,\"return\":-1}}\n");
	want(p->obuf, "\"name\":\"typed:vals\",\"args\":{\"arg1\":-7,\"arg2\":18446744073709551615}}\n");
	want(p->obuf, "\"name\":\"func:tt_ptr\",\"args\":{\"p\":\"0x");
	free(p);
}

/* typed_target's typed:text, a 700-letter string, under `djp trace
 * [opt N] 'typed:text=s=%s len=%d'`: the s= value printed. */
static void text_under(const char *opt, const char *n, char *s, size_t sz)
{
	char cmd[4200];
	const char *at, *end;
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s 1", tt_typed_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "typed:text=s=%s len=%d", (char *)opt,
				      (char *)n, NULL },
		     false, -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !(at = strstr(p->obuf, " s=")) || !(end = strstr(at, " len=700\n")))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	snprintf(s, sz, "%.*s", (int)(end - at - 3), at + 3);
	free(p);
}

/* stap's MAXSTRINGLEN (512, NUL included) unless --max-string-len says
 * otherwise, in the copy the target makes; a string cut ends in "...". */
TEST_TIMEOUT(trace_strings_follow_maxstringlen, 60)
{
	char full[701], s[2048];

	for (int i = 0; i < 700; i++)
		full[i] = (char)('a' + i % 26);
	full[700] = 0;
	text_under(NULL, NULL, s, sizeof(s));
	CHECK_EQ(strlen(s), 511 + 3);
	CHECK(!strncmp(s, full, 511) && !strcmp(s + 511, "..."));
	text_under("--max-string-len", "1024", s, sizeof(s));
	CHECK_STR(s, full);
	text_under("--max-string-len", "16", s, sizeof(s));
	CHECK_STR(s, "abcdefghijklmno...");
}

/* A script's strings: -D MAXSTRINGLEN=N, 512 by default, a marker's %s
 * as the user_string() of an SDT probe's argument. */
TEST_TIMEOUT(script_strings_follow_maxstringlen, 60)
{
	static const char *const script[2] = {
		"probe process.provider(\"typed\").mark(\"text\") { printf(\"n=%d\\n\", strlen(user_string($arg1))) }",
		"probe process.mark(\"typed_text\") { printf(\"n=%d\\n\", strlen($s)) }",
	};
	char cmd[4200];
	struct tproc *p;

	for (int mark = 0; mark < 2; mark++) {
		snprintf(cmd, sizeof(cmd), "%s 1", tt_typed_target(mark));
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", (char *)script[mark], NULL }, false, -1);
		if (tt_finish(p, 60000) || !strstr(p->obuf, "n=511\n"))
			djp_test_fail(__FILE__, __LINE__, "%s: %s / %s", script[mark], p->obuf, p->ebuf);
		free(p);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "-D", "MAXSTRINGLEN=1024", "-c", cmd, "-e",
					      (char *)script[mark], NULL },
			     false, -1);
		if (tt_finish(p, 60000) || !strstr(p->obuf, "n=700\n"))
			djp_test_fail(__FILE__, __LINE__, "%s: %s / %s", script[mark], p->obuf, p->ebuf);
		free(p);
	}
}
