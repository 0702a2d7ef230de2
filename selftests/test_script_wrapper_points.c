/*
 * Function and statement points of a script through a -c wrapper (env,
 * sh -c 'exec ...'): a point the wrapper does not have is said at once,
 * in the script's words (the point as written, the program that was
 * run), and kept for the programs it execs; one that matched in none of
 * them by the end is an error naming the point and the programs, status
 * 1, as a mark point's is and as `djp trace` says it of a pattern.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static struct tproc *script_under(const char *cmd, const char *script, int *st)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", (char *)cmd, "-e", (char *)script, NULL },
				   false, -1);
	*st = tt_finish(p, 60000);
	return p;
}

static void want_err(const struct tproc *p, int st, int status, const char *line)
{
	if (!WIFEXITED(st) || WEXITSTATUS(st) != status || !strstr(p->ebuf, line))
		djp_test_fail(__FILE__, __LINE__, "status %#x, want %d and \"%s\": %s / %s", st, status, line, p->obuf,
			      p->ebuf);
}

/* sh -c 'exec PROGRAM': the point waits in the shell, in the script's
 * words, and counts in the program the shell execs. */
TEST_TIMEOUT(script_function_point_waits_for_the_program_a_shell_execs, 60)
{
	char cmd[4200];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "sh -c 'exec %s 7'", tt_func_target());
	p = script_under(cmd, "global n; probe process.function(\"ft_work\") { n++ } probe end { printf(\"n=%d\\n\", n) }",
			 &st);
	want_err(p, st, 0, "djp: process.function(\"ft_work\") matches nothing in ");
	want_err(p, st, 0, ", the program the command ran; waiting for a program it execs\n");
	if (!strstr(p->obuf, "n=7\n") || strstr(p->ebuf, "matched nothing"))
		djp_test_fail(__FILE__, __LINE__, "%s / %s", p->obuf, p->ebuf);
	free(p);
}

/* env PROGRAM where neither has the function: an error at the end naming
 * the point, the wrapper and the program it exec'd. */
TEST_TIMEOUT(script_function_point_matched_nowhere_is_an_error, 60)
{
	char cmd[4200], line[8500], real[4096];
	struct tproc *p;
	int st;

	CHECK(realpath(tt_func_target(), real) != NULL);
	snprintf(cmd, sizeof(cmd), "env %s 3", tt_func_target());
	p = script_under(cmd, "global n; probe process.function(\"no_such_function\") { n++ } "
			      "probe end { printf(\"n=%d\\n\", n) }",
			 &st);
	snprintf(line, sizeof(line),
		 "djp: process.function(\"no_such_function\") matched nothing in /usr/bin/env, the program the "
		 "command ran, nor in the programs it exec'd (the last: %s)\n",
		 real);
	want_err(p, st, 1, line);
	CHECK(strstr(p->obuf, "sum ")); /* the command ran to its end */
	CHECK_EQ(tt_count(p->ebuf, "matched nothing"), 1);
	free(p);

	/* a return probe, through env to a program that execs nothing */
	p = script_under("env true", "probe process.function(\"ft_work\").return { }", &st);
	want_err(p, st, 1,
		 "djp: process.function(\"ft_work\").return matched nothing in /usr/bin/env, the program the command "
		 "ran, nor in the programs it exec'd (the last: /usr/bin/true)\n");
	free(p);

	/* optional: no error */
	p = script_under("env true", "probe process.function(\"ft_work\")? { }", &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || strstr(p->ebuf, "matched nothing"))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
	free(p);
}

/* A statement point of a named program (its lines read from the file)
 * that the wrapper never runs: the same error. */
TEST_TIMEOUT(script_statement_point_matched_nowhere_is_an_error, 60)
{
	char script[4400], real[4096], line[4400];
	int n = tt_source_line("func_target.c", "ft_sink += r;"), st;
	struct tproc *p;

	CHECK(realpath(tt_func_target(), real) != NULL);
	snprintf(script, sizeof(script), "probe process(\"%s\").statement(\"ft_work@func_target.c:%d\") { }", real,
		 n);
	p = script_under("env true", script, &st);
	snprintf(line, sizeof(line), "process(\"%s\").statement(\"ft_work@func_target.c:%d\") matched nothing in "
				     "/usr/bin/env, the program the command ran, nor in the programs it exec'd (the last: "
				     "/usr/bin/true)\n",
		 real, n);
	want_err(p, st, 1, line);
	free(p);
}
