/* python3.11's `line` probe sits in the computed-goto dispatch of
 * _PyEval_EvalFrameDefault: a jump once indirect jumps' targets are
 * proven (arch/x86/indirect_targets.c); function__entry and
 * function__return are jumps once a stripped function's bounds are its
 * FDE's.  Their counts and values are bpftrace's. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

static const char python[] = "/usr/bin/python3.11";

static struct tproc *run(char *const argv[], int *st)
{
	struct tproc *p = tt_spawn(argv, false, -1);
	*st = tt_finish(p, 60000);
	return p;
}

/* Every one of its SDT probes: line, and function__entry and
 * function__return, whose nops come just before an epilogue of pops that
 * the call-frame information's rows end at, but not the function. */
TEST_TIMEOUT(python_sdt_probes_are_jumps, 60)
{
	const char *names[] = { "\"line\"", "\"function__entry\"", "\"function__return\"" };
	struct tproc *p;
	char *line;
	int st;

	CHECK(access(python, X_OK) == 0);
	p = run((char *const[]){ (char *)tt_djp(), "list", "--json", (char *)python, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(tt_count(p->obuf, "\"arming\":\"jump\"") >= 8);
	for (line = strtok(p->obuf, "\n"); line; line = strtok(NULL, "\n")) {
		bool named = false;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			named |= strstr(line, names[i]) != NULL;
		if (strstr(line, "\"arming\":\"int3\"") || (named && !strstr(line, "\"arming\":\"jump\"")))
			djp_test_fail(__FILE__, __LINE__, "%s", line);
	}
	free(p);
}

/* A program whose calls and lines are known: f is called 5000 times. */
static const char prog[] = "def f(i):\n"
			   "    x = i * 2\n"
			   "    return x + 1\n"
			   "t = 0\n"
			   "for i in range(5000):\n"
			   "    t += f(i)\n"
			   "print('t', t)\n";

TEST_TIMEOUT(python_line_and_entry_counts_equal_bpftrace, 120)
{
	long n[2], sum[2], fe[2];
	char cmd[256], *at;
	struct tproc *p;
	int st;

	CHECK(access(python, X_OK) == 0);
	CHECK(access("/usr/bin/bpftrace", X_OK) == 0);
	/* the same program, from a file both tools start */
	{
		char path[] = "/tmp/djp-pyjumps-XXXXXX";
		int fd = mkstemp(path);
		CHECK(fd >= 0);
		CHECK(write(fd, prog, sizeof(prog) - 1) == (ssize_t)(sizeof(prog) - 1));
		close(fd);
		snprintf(cmd, sizeof(cmd), "%s %s", python, path);
		p = run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
					 "global n, s, fe\n"
					 "probe process.provider(\"python\").mark(\"line\") { n++; s += $arg3 }\n"
					 "probe process.provider(\"python\").mark(\"function__entry\") {\n"
					 "  if (user_string($arg2) == \"f\") fe++\n"
					 "}\n"
					 "probe end { printf(\"lines=%d sum=%d f=%d\\n\", n, s, fe) }",
					 NULL },
			&st);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s", st, p->ebuf);
		CHECK(strstr(p->obuf, "t 25000000\n") != NULL);
		CHECK((at = strstr(p->obuf, "lines=")) != NULL);
		CHECK(sscanf(at, "lines=%ld sum=%ld f=%ld", &n[0], &sum[0], &fe[0]) == 3);
		CHECK(strstr(p->ebuf, "lost") == NULL);
		free(p);
		p = run((char *const[]){ "/usr/bin/bpftrace", "-e",
					 "BEGIN { @n = 0; @s = 0; @fe = 0; }\n"
					 /* the probes are on the file: other pythons of the machine fire them too */
					 "usdt:/usr/bin/python3.11:python:line /pid == cpid/ { @n = @n + 1; @s = @s + arg2; }\n"
					 "usdt:/usr/bin/python3.11:python:function__entry /pid == cpid && str(arg1) == \"f\"/ "
					 "{ @fe = @fe + 1; }\n"
					 "END { printf(\"lines=%d sum=%d f=%d\\n\", @n, @s, @fe); clear(@n); clear(@s); clear(@fe); }",
					 "-c", cmd, NULL },
			&st);
		unlink(path);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "bpftrace: status %#x: %s", st, p->ebuf);
	CHECK((at = strstr(p->obuf, "lines=")) != NULL);
	CHECK(sscanf(at, "lines=%ld sum=%ld f=%ld", &n[1], &sum[1], &fe[1]) == 3);
	free(p);
	printf("# djp lines=%ld sum=%ld f=%ld, bpftrace lines=%ld sum=%ld f=%ld\n", n[0], sum[0], fe[0], n[1], sum[1],
	       fe[1]);
	CHECK_EQ(fe[0], 5000);
	CHECK_EQ(n[0], n[1]);
	CHECK_EQ(sum[0], sum[1]);
	CHECK_EQ(fe[0], fe[1]);
}
