/* Function parameters end to end: a script's $$parms at the entry of every
 * function of selftests/progs/param_targets.c, at -O2 and -O0, against the
 * values the program prints before each call (every base type, pointers,
 * more arguments than registers, floating point and structures between
 * them, a parameter the optimizer drops).  Every value the tool shows is
 * the program's; the ones it leaves out are those no single location
 * holds (the program prints them as ~WHAT) and, at -O2, the dropped one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

struct tally {
	int values, shown, wrong, extra;
};

/* The script's line for function `name` (or a clone of it GCC named
 * NAME.constprop.0), the n-th (0-based) one. */
static const char *seen_line(const char *out, const char *name, int n)
{
	char pat[256];
	const char *s = out;
	snprintf(pat, sizeof(pat), "seen %s", name);
	while ((s = strstr(s, pat))) {
		const char *after = s + strlen(pat);
		if ((s == out || s[-1] == '\n') && (*after == ' ' || *after == '.') && n-- == 0)
			return strchr(after, ' ') + 1;
		s++;
	}
	return NULL;
}

/* The value of " key=..." in the line at `line` (signed or unsigned
 * decimal, or a pointer's 0x...: as its C type prints), as its 64 bits,
 * or false. */
static bool shown_value(const char *line, const char *key, unsigned long long *v)
{
	char pat[128];
	const char *eol = strchr(line, '\n'), *k;
	snprintf(pat, sizeof(pat), "%s=", key);
	for (k = line; (k = strstr(k, pat)) && (!eol || k < eol); k++)
		if (k == line || k[-1] == ' ') {
			const char *val = k + strlen(pat);
			*v = *val == '-' ? (unsigned long long)strtoll(val, NULL, 10) : strtoull(val, NULL, 0);
			return true;
		}
	return false;
}

static void compare(const char *calls, const char *seen, struct tally *t)
{
	char line[2048];
	const char *c = calls;
	int nth[64] = { 0 };
	char names[64][64];
	int nnames = 0;

	while (sscanf(c, "%2047[^\n]", line) == 1) {
		char name[64], *tok, *save;
		const char *at;
		int k;
		c = strchr(c, '\n') ? strchr(c, '\n') + 1 : c + strlen(c);
		if (strncmp(line, "call ", 5) || sscanf(line + 5, "%63s", name) != 1)
			continue;
		for (k = 0; k < nnames && strcmp(names[k], name); k++)
			;
		if (k == nnames && nnames < 64)
			snprintf(names[nnames++], sizeof(names[0]), "%s", name);
		at = seen_line(seen, name, k < 64 ? nth[k]++ : 0);
		if (!at) {
			djp_test_fail(__FILE__, __LINE__, "no probe line for %s", line);
		}
		strtok_r(line + 5, " ", &save); /* the name */
		while ((tok = strtok_r(NULL, " ", &save))) {
			char *eq = strchr(tok, '=');
			unsigned long long v;
			if (!eq || eq[1] == '~')
				continue; /* not an integer: the tool shows none */
			*eq = 0;
			t->values++;
			if (!shown_value(at, tok, &v))
				continue;
			t->shown++;
			if (v != (unsigned long long)strtoll(eq + 1, NULL, 10)) {
				t->wrong++;
				fprintf(stderr, "# %s %s: the program passed %s, the probe read %#llx\n", name, tok, eq + 1,
					v);
			}
		}
	}
}

static void params_of(const char *prog, struct tally *t)
{
	struct tproc *p;
	int st;
	setenv("PARAM_TARGETS_STDERR", "1", 1);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", (char *)djp_test_path(prog), "-e",
				     "probe process.function(\"pt_*\") { printf(\"seen %s %s\\n\", ppfunc(), $$parms) }",
				     NULL },
		     false, -1);
	st = tt_finish(p, 30000);
	unsetenv("PARAM_TARGETS_STDERR");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->ebuf, "call pt_chars ") != NULL);
	memset(t, 0, sizeof(*t));
	compare(p->ebuf, p->obuf, t);
	free(p);
}

/* Every integer argument of param_targets built at one optimisation level
 * shown right, and nearly all of them shown. */
static void parms_of_every_kind(const char *prog, const char *level)
{
	struct tally t;
	params_of(prog, &t);
	fprintf(stderr, "# %s: %d integer arguments passed, %d shown, %d wrong\n", level, t.values, t.shown, t.wrong);
	CHECK_EQ(t.wrong, 0);
	CHECK(t.values > 100);
	CHECK(t.shown >= t.values * 9 / 10);
}

TEST_TIMEOUT(script_parms_of_every_kind_O2, 60)
{
	parms_of_every_kind("progs/param_targets", "-O2");
}

TEST_TIMEOUT(script_parms_of_every_kind_O0, 60)
{
	parms_of_every_kind("progs/param_targets-O0", "-O0");
}
