/*
 * Scripts nested deeper than the parser's limit (parser.c, "Nesting") are a
 * parse error at line:column, never a stack overflow in djp: before the
 * limit, each of these crashed the parser or a later recursive pass.
 */
#include <stdio.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

/* Write prefix, then `unit` n times, then middle, then `closer` n times,
 * then suffix, to a temporary script; run djp on it. */
static void expect_too_deep(const char *prefix, const char *unit, const char *middle, const char *closer,
			    const char *suffix, int n)
{
	char path[] = "/tmp/djp-nest-XXXXXX", cmd[512], err[] = "/tmp/djp-nest-err-XXXXXX", text[512];
	int fd = mkstemp(path), efd = mkstemp(err), st;
	FILE *f;
	ssize_t k;

	CHECK(fd >= 0 && efd >= 0);
	CHECK((f = fdopen(fd, "w")) != NULL);
	fputs(prefix, f);
	for (int i = 0; i < n; i++)
		fputs(unit, f);
	fputs(middle, f);
	for (int i = 0; closer && i < n; i++)
		fputs(closer, f);
	fputs(suffix, f);
	CHECK(fclose(f) == 0);
	snprintf(cmd, sizeof(cmd), "%s %s 2>%s", tt_djp(), path, err);
	st = system(cmd);
	k = read(efd, text, sizeof(text) - 1);
	text[k > 0 ? k : 0] = 0;
	close(efd);
	unlink(path);
	unlink(err);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 1 || !strstr(text, ": parse error: nesting too deep") ||
	    !strstr(text, path))
		djp_test_fail(__FILE__, __LINE__, "%s x%d: status %d, stderr: %.200s", unit, n, st, text);
}

TEST(script_nesting_limit_parentheses)
{
	expect_too_deep("probe begin { x = ", "(", "1", ")", " }\n", 7000);
}

TEST(script_nesting_limit_braces)
{
	expect_too_deep("probe begin ", "{", "", "}", "\n", 30000);
}

TEST(script_nesting_limit_chained_plus)
{
	expect_too_deep("probe begin { x = 1", " + 1", "", NULL, " }\n", 100000);
}

TEST(script_nesting_limit_unary_and_ternary)
{
	expect_too_deep("probe begin { x = ", "-", "1", NULL, " }\n", 50000);
	expect_too_deep("probe begin { x = ", "1 ? 2 : ", "3", NULL, " }\n", 50000);
	expect_too_deep("probe begin { ", "if (1) ", "x = 1", NULL, " }\n", 50000);
}
