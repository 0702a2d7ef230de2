/*
 * @var("name@file.c"[, "PATH"]) (tools/djp/script/run/builtins/
 * dwarfless.c): globals and file statics of a program with DWARF, read in
 * the target at the hit, checked against what the program itself prints
 * of them (trace_progs/globals_target.c); the errors said at compile time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *target(void)
{
	static char p[4096];
	if (!p[0])
		snprintf(p, sizeof(p), "%s", djp_test_path("trace_progs/globals_target"));
	return p;
}

/* djp -c "globals_target N" -e script: status and output. */
static struct tproc *run(long n, const char *script, int *st)
{
	char cmd[4200];
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "%s %ld", target(), n);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", (char *)script, NULL }, false, -1);
	*st = tt_finish(p, 60000);
	return p;
}

/* Integers of every width and sign, a bool, an enum, a pointer, a global
 * and a file static, with and without the unit, as the program set them
 * before each call; and a variable's initial value in a begin probe. */
TEST_TIMEOUT(script_var_globals_are_the_programs, 60)
{
	int st;
	struct tproc *p = run(4,
			      "probe begin { printf(\"S init %d\\n\", @var(\"gl_init@globals_target.c\")) }\n"
			      "probe process.function(\"gl_tick\") { printf(\"S vars %d %d %u %d %d %#x %d\\n\", "
			      "@var(\"gl_int@globals_target.c\"), @var(\"gl_long@globals_target.c\"), @var(\"gl_u16\"), "
			      "@var(\"gl_s8@globals_target.c\"), @var(\"gl_flag\"), @var(\"gl_text@globals_target.c\"), "
			      "@var(\"gl_color\")) }",
			      &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	CHECK_EQ(tt_twinned(p, (const char *const[]){ "vars " }, 1), 4);
	CHECK_EQ(tt_count(p->obuf, "S init 424242\n"), 1);
	free(p);
}

/* user_string(@var(p)): the string p points to at the hit, copied there
 * (the program overwrites it after the call, and exits at once). */
TEST_TIMEOUT(script_var_string_copied_at_the_hit, 60)
{
	int st;
	struct tproc *p = run(3,
			      "probe process.function(\"gl_tick\") { printf(\"S text %s\\n\", "
			      "user_string(@var(\"gl_text@globals_target.c\"))) }",
			      &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	CHECK_EQ(tt_twinned(p, (const char *const[]){ "text " }, 1), 3);
	free(p);
}

/* What cannot be read, said at compile time with line:column. */
TEST_TIMEOUT(script_var_errors, 60)
{
	char want[8192];
	int st;
	struct tproc *p = run(1,
			      "probe begin {\n print(@var(\"nosuch@globals_target.c\"))\n print(@var(\"gl_int@other.c\"))\n"
			      " print(@var(\"texts@globals_target.c\"))\n print(@var(\"gl_int\", \"/nonexistent\"))\n}",
			      &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	snprintf(want, sizeof(want),
		 "<input>:2:13: semantic error: @var(\"nosuch@globals_target.c\"): %s: no variable 'nosuch' at the top "
		 "of a unit named globals_target.c\n",
		 target());
	if (!strstr(p->ebuf, want))
		djp_test_fail(__FILE__, __LINE__, "no \"%s\" in:\n%s", want, p->ebuf);
	snprintf(want, sizeof(want),
		 "<input>:3:13: semantic error: @var(\"gl_int@other.c\"): %s: no variable 'gl_int' at the top of a "
		 "unit named other.c\n",
		 target());
	CHECK(strstr(p->ebuf, want));
	snprintf(want, sizeof(want), "<input>:4:13: semantic error: @var(\"texts@globals_target.c\"): %s: 'texts' is a ",
		 target());
	CHECK(strstr(p->ebuf, want));
	CHECK(strstr(p->ebuf, ": @var reads integers, enums and pointers\n"));
	CHECK(strstr(p->ebuf, "<input>:5:23: semantic error: @var(\"gl_int\"): /nonexistent: No such file or directory\n"));
	free(p);
}
