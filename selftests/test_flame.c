/*
 * Flame graphs: a script's print_folded() of ubacktrace()-keyed arrays,
 * against a target whose call chains and counts are known
 * (trace_progs/flame_target.c), and `djp flame`'s SVG, read back with
 * Python's XML parser: a box per frame of the folded stacks, as wide as
 * its share of the samples, callees in the order of their names over
 * their caller, titles and labels; and its one-line errors on bad input,
 * which leave the output file as it was.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define PYTHON "/usr/bin/python3"

/* The target's chains: A, B, C, D calls (flame_target.c). */
#define TARGET_ARGS "3 5 2 4"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s;
	long n;

	if (!f)
		djp_test_fail(__FILE__, __LINE__, "%s: cannot open", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	CHECK((s = calloc(1, (size_t)n + 1)) != NULL);
	CHECK(fread(s, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	return s;
}

static void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
}

static void tmp_path(char *buf, size_t sz, const char *what)
{
	snprintf(buf, sz, "/tmp/djp-flame-%d-%s", (int)getpid(), what);
}

/* djp -c 'flame_target ARGS' -o OUT -e SCRIPT: the script's output. */
static char *run_script(const char *script)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "%s " TARGET_ARGS, djp_test_path("trace_progs/flame_target"));
	return tt_script_output(cmd, script, NULL);
}

/* The count of the folded line whose frames end with ";main;SUFFIX"
 * (what comes before main is the C library's start), -1 when none;
 * every line of out must be such a line, with the same start. */
static long count_of(const char *out, const char *suffix)
{
	char tail[256];
	long found = -1;
	size_t n = snprintf(tail, sizeof(tail), ";main;%s ", suffix);

	for (const char *l = out; *l; l = strchr(l, '\n') + 1) {
		const char *nl = strchr(l, '\n'), *m;
		if (!nl)
			djp_test_fail(__FILE__, __LINE__, "an unterminated line in:\n%s", out);
		m = strstr(l, tail);
		if (m && m < nl && m + n + strspn(m + n, "0123456789") == nl) {
			if (found >= 0)
				djp_test_fail(__FILE__, __LINE__, "two lines for %s in:\n%s", suffix, out);
			found = atol(m + n);
		}
	}
	return found;
}

static void check_chains(const char *out, const char *prefix, long a, long b, long c)
{
	/* exactly three lines, each starting with prefix and through main */
	CHECK_EQ(tt_count(out, "\n"), 3);
	for (const char *l = out; *l; l = strchr(l, '\n') + 1)
		if (strncmp(l, prefix, strlen(prefix)) || !strstr(l, ";main;fl_"))
			djp_test_fail(__FILE__, __LINE__, "a line that is no chain of the target's: %.*s",
				      (int)strcspn(l, "\n"), l);
	CHECK_EQ(count_of(out, "fl_a;fl_leaf"), a);
	CHECK_EQ(count_of(out, "fl_b;fl_leaf"), b);
	CHECK_EQ(count_of(out, "fl_b;fl_c;fl_leaf"), c);
}

/* Every hit counted on its chain: fl_a's two call sites (two return
 * addresses) are one line, 3 + 4; statistics count, numbers add, and
 * other indexes are frames of their own, first. */
TEST_TIMEOUT(script_print_folded_counts_each_chain, 120)
{
	char *out = run_script("global s\n"
			       "probe process.mark(\"fl_mark\") { s[ubacktrace()] <<< 1 }\n"
			       "probe end { print_folded(s) }\n");
	check_chains(out, "", 7, 5, 2);
	free(out);

	out = run_script("global s\n"
			 "probe process.mark(\"fl_mark\") { s[execname(), ubacktrace()]++ }\n"
			 "probe end { print_folded(s) }\n");
	check_chains(out, "flame_target;", 7, 5, 2);
	free(out);

	/* a weight: the sum of $i on each chain (fl_a: 0+1+2 and
	 * 1000+1001+1002+1003; fl_b: 0..4; fl_c: 0+1) */
	out = run_script("global s\n"
			 "probe process.mark(\"fl_mark\") { s[ubacktrace()] += $i }\n"
			 "probe end { print_folded(s) }\n");
	check_chains(out, "", 3 + 4006, 10, 1);
	free(out);
}

TEST(script_print_folded_refuses_what_is_no_array)
{
	static const struct tt_bad_script bad[] = {
		{ "global n\nprobe begin { n = 1; print_folded(n) }",
		  "<input>:2:35: semantic error: print_folded: 'n' is a scalar, not an array" },
		{ "global t\nprobe begin { t[\"a\"] = \"x\"; print_folded(t) }",
		  "<input>:2:42: semantic error: print_folded: 't' holds strings, not numbers or statistics" },
		{ "probe begin { print_folded(x) }", "<input>:1:28: semantic error: print_folded: 'x' is not a global array" },
		{ "global s\nprobe begin { s[1]++; print_folded(s, 2) }",
		  "<input>:2:23: semantic error: print_folded takes one global array, as print_folded(s)" },
		{ "global s\nprobe begin { print_folded(s) }", "<input>:2:28: semantic error: print_folded: 's' is never indexed" },
	};
	tt_bad_scripts(bad, sizeof(bad) / sizeof(bad[0]));
}

/* Indexes that are no stacks are frames of their own, in order (numbers
 * in decimal, an empty string none); ';' in a name is '_'; lines of one
 * text add up, sorted; what is not positive is left out. */
TEST(script_print_folded_of_indexes_that_are_no_stacks)
{
	static const char script[] = "global s, st\n"
				     "probe begin {\n"
				     "  s[1, \"x;y\"] = 3; s[1, \"\"] = 2; s[-7, \"b\"] = 1; s[3, \"z\"] = 0; s[4, \"w\"] = -1\n"
				     "  s[-7, \"a\"] = 4\n"
				     "  st[\"q\"] <<< 10; st[\"q\"] <<< 20; st[\"p\"] <<< 5\n"
				     "  print_folded(s); println(\"--\"); print_folded(st); exit()\n"
				     "}\n";
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "-e", (char *)script, NULL }, false, -1);
	int st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
	CHECK_STR(p->obuf, "-7;a 4\n-7;b 1\n1 2\n1;x_y 3\n--\np 1\nq 2\n");
	free(p);
}

/* The SVG against the folded stacks it was drawn from (the oracle, read
 * by Python alone): every frame of every stack is one box, whose title
 * says its samples and share, as wide as that share of the 1180 pixels
 * between the margins, over its caller, after the callees of that caller
 * whose names sort before it; labels are the name or its start and "..";
 * the title is the one given.  Prints "ok N" (N frames). */
static const char svg_check[] =
	"import re, sys, xml.etree.ElementTree as ET\n"
	"svg, folded, title = sys.argv[1:4]\n"
	"NS = '{http://www.w3.org/2000/svg}'\n"
	"want, total = {}, 0\n"
	"for line in open(folded, encoding='utf-8'):\n"
	"    if not line.strip(): continue\n"
	"    stack, n = line.rstrip('\\n').rsplit(None, 1)\n"
	"    total += int(n)\n"
	"    f = stack.split(';')\n"
	"    for k in range(1, len(f) + 1): want[tuple(f[:k])] = want.get(tuple(f[:k]), 0) + int(n)\n"
	"want[()] = total\n"
	"root = ET.parse(svg).getroot()\n"
	"W = float(root.get('width'))\n"
	"t = [e for e in root.iter(NS + 'text') if e.get('id') == 'title']\n"
	"assert len(t) == 1 and t[0].text == title, 'title %r' % [e.text for e in t]\n"
	"scale = (W - 20) / total\n"
	"rows = {}\n"
	"group = [g for g in root.iter(NS + 'g') if g.get('id') == 'frames']\n"
	"assert len(group) == 1\n"
	"for g in group[0]:\n"
	"    kids = list(g)\n"
	"    assert [k.tag for k in kids] == [NS + 'title', NS + 'rect', NS + 'text'], kids\n"
	"    m = re.fullmatch(r'(.*) \\((\\d+) samples?, ([0-9.]+)%\\)', kids[0].text, re.S)\n"
	"    assert m, kids[0].text\n"
	"    name, n = m.group(1), int(m.group(2))\n"
	"    x, y, w = (float(kids[1].get(a)) for a in ('x', 'y', 'width'))\n"
	"    assert abs(w - n * scale) < 0.01, (name, n, w, n * scale)\n"
	"    assert abs(float(m.group(3)) - 100.0 * n / total) < 0.006, (name, m.group(3))\n"
	"    label = kids[2].text or ''\n"
	"    assert label in (name, '') or (label.endswith('..') and name.startswith(label[:-2])), (name, label)\n"
	"    rows.setdefault(y, []).append([x, w, name, n, None])\n"
	"levels = [sorted(rows[y]) for y in sorted(rows, reverse=True)]\n"
	"assert len(levels[0]) == 1 and levels[0][0][2] == 'all', levels[0]\n"
	"levels[0][0][4] = ()\n"
	"drawn = {(): levels[0][0][3]}\n"
	"for below, row in zip(levels, levels[1:]):\n"
	"    for r in row:\n"
	"        up = [q for q in below if q[0] - 0.01 <= r[0] and r[0] + r[1] <= q[0] + q[1] + 0.01]\n"
	"        assert len(up) == 1, (r, up)\n"
	"        r[4] = up[0][4] + (r[2],)\n"
	"        assert r[4] not in drawn, r[4]\n"
	"        drawn[r[4]] = r[3]\n"
	"    for q in below:\n"
	"        kids = [r for r in row if r[4][:-1] == q[4]]\n"
	"        x = q[0]\n"
	"        for k in kids:\n"
	"            assert abs(k[0] - x) < 0.01, ('callees not side by side from their caller', q[2], k[2])\n"
	"            x = k[0] + k[1]\n"
	"        assert [k[2] for k in kids] == sorted(k[2] for k in kids), [k[2] for k in kids]\n"
	"assert drawn == want, (sorted(set(drawn.items()) ^ set(want.items())))\n"
	"print('ok', len(drawn))\n";

/* The standard output of the last flame(). */
static char flame_out[sizeof(((struct tproc *)0)->obuf)];

/* `djp flame [OPTS] IN`, or stdin's `input` when IN is NULL: its status,
 * its stderr in err (static), its stdout in flame_out. */
static int flame(const char *in, const char *input, const char *const *opts, const char **err)
{
	char *argv[16];
	int n = 0, st;
	struct tproc *p;
	static char ebuf[sizeof(p->ebuf)];

	argv[n++] = (char *)tt_djp();
	argv[n++] = "flame";
	for (; opts && *opts; opts++)
		argv[n++] = (char *)*opts;
	if (in)
		argv[n++] = (char *)in;
	argv[n] = NULL;
	p = tt_spawn(argv, false, -1);
	if (input)
		CHECK(write(p->in, input, strlen(input)) == (ssize_t)strlen(input));
	st = tt_finish(p, 20000);
	memcpy(ebuf, p->ebuf, sizeof(ebuf));
	memcpy(flame_out, p->obuf, sizeof(flame_out));
	*err = ebuf;
	free(p);
	CHECK(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* folded -> djp flame -o SVG --title TITLE -> the Python check: the
 * frames it counted. */
static int check_svg(const char *folded, const char *title)
{
	char svg[256];
	const char *err;
	struct tproc *p;
	int st, frames = -1;

	tmp_path(svg, sizeof(svg), "out.svg");
	if (flame(folded, NULL, (const char *const[]){ "-o", svg, "--title", title, NULL }, &err))
		djp_test_fail(__FILE__, __LINE__, "djp flame %s: %s", folded, err);
	if (access(PYTHON, X_OK))
		djp_test_fail(__FILE__, __LINE__, "no %s: make check installs python3", PYTHON);
	p = tt_spawn((char *const[]){ PYTHON, "-c", (char *)svg_check, svg, (char *)folded, (char *)title, NULL }, false, -1);
	st = tt_finish(p, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || sscanf(p->obuf, "ok %d", &frames) != 1)
		djp_test_fail(__FILE__, __LINE__, "the SVG of %s does not check out (%#x): %s%s", folded, st, p->obuf, p->ebuf);
	free(p);
	unlink(svg);
	return frames;
}

/* Stacks of names XML must escape, a name too long for its box, lines
 * of one stack to add up, a stack that ends where another goes on, and
 * callees given out of order. */
TEST(flame_svg_has_a_box_per_frame_as_wide_as_its_samples)
{
	char in[256];
	static const char text[] = "main;parse <T>&\"q\";lex 3\n"
				   "main;parse <T>&\"q\" 2\n"
				   "zeta;b 5\n"
				   "main;\xc3\xbcn\xc3\xaf" "code 1\n"
				   "\n"
				   "main;parse <T>&\"q\";lex 4\r\n"
				   "main;a_function_whose_name_is_far_too_long_for_the_box_it_gets 2\n"
				   "zeta;a 1\n"
				   "alpha 1\n";
	const char *title = "Flame <djp> & \"its\" test", *err;
	char *svg;

	tmp_path(in, sizeof(in), "in.folded");
	spit(in, text);
	/* all, main, parse, lex, ünïcode, a_function.., zeta, b, a, alpha */
	CHECK_EQ(check_svg(in, title), 10);
	/* the same from stdin to stdout */
	CHECK_EQ(flame(NULL, text, (const char *const[]){ "--title", title, "-o", in, NULL }, &err), 0);
	svg = slurp(in);
	CHECK_EQ(flame(NULL, text, (const char *const[]){ "--title", title, NULL }, &err), 0);
	CHECK_STR(flame_out, svg);
	CHECK(strstr(svg, "<title>lex (7 samples, 36.84%)</title>"));
	free(svg);
	unlink(in);
}

/* The round trip: the script's folded stacks of the target, drawn. */
TEST_TIMEOUT(flame_svg_of_a_scripts_folded_stacks, 120)
{
	char in[256];
	char *out = run_script("global s\n"
			       "probe process.mark(\"fl_mark\") { s[ubacktrace()] <<< 1 }\n"
			       "probe end { print_folded(s) }\n");
	check_chains(out, "", 7, 5, 2);
	tmp_path(in, sizeof(in), "script.folded");
	spit(in, out);
	/* all, the C library's start up to main, fl_a, fl_b, fl_c and fl_leaf
	 * three times: as many as the lines' frames but the shared ones */
	CHECK(check_svg(in, "Flame Graph") > 6);
	unlink(in);
	free(out);
}

/* Bad input: one line naming the file and line, status 1, and -o's file
 * as it was (here: absent, or an old graph). */
TEST(flame_bad_input_is_one_line_naming_the_line)
{
	static const struct {
		const char *input, *error; /* error after "djp: FILE" */
	} bad[] = {
		{ "main;a 1\nmain;b\n", ":2: no count at the end of the line (expected 'FRAME;FRAME... COUNT')" },
		{ "main;a 1\nmain;b 2\nmain;c x3\n", ":3: the count at the end of the line is not a whole number" },
		{ "main;a -1\n", ":1: the count at the end of the line is not a whole number" },
		{ "main;a 1.5\n", ":1: the count at the end of the line is not a whole number" },
		{ "main;;a 1\n", ":1: an empty frame name (two ';' in a row, or one at an end)" },
		{ "\n\nmain;a; 1\n", ":3: an empty frame name (two ';' in a row, or one at an end)" },
		{ "main;a 1\n 7\n", ":2: no frames before the count" },
		{ "main;a 99999999999999999999\n", ":1: the count at the end of the line is too large" },
		{ "main;a 18446744073709551615\nmain;b 1\n", ": the counts add up to more than 18446744073709551615" },
		{ "", ": no stacks (an empty input)" },
		{ "main;a 0\n", ": no samples (every count is 0)" },
	};
	char in[256], svg[256], want[512];
	const char *err;

	tmp_path(in, sizeof(in), "bad.folded");
	tmp_path(svg, sizeof(svg), "bad.svg");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		spit(in, bad[i].input);
		unlink(svg);
		snprintf(want, sizeof(want), "djp: %s%s\n", in, bad[i].error);
		CHECK_EQ(flame(in, NULL, (const char *const[]){ "-o", svg, NULL }, &err), 1);
		CHECK_STR(err, want);
		CHECK(access(svg, F_OK) != 0);
		/* from stdin, over an old graph, which stays */
		spit(svg, "old");
		snprintf(want, sizeof(want), "djp: stdin%s\n", bad[i].error);
		CHECK_EQ(flame(NULL, bad[i].input, (const char *const[]){ "-o", svg, NULL }, &err), 1);
		CHECK_STR(err, want);
		char *old = slurp(svg);
		CHECK_STR(old, "old");
		free(old);
	}
	unlink(svg);
	/* no such file; two files; an unknown option */
	snprintf(want, sizeof(want), "djp: %s: No such file or directory\n", in);
	unlink(in);
	CHECK_EQ(flame(in, NULL, NULL, &err), 1);
	CHECK_STR(err, want);
	CHECK_EQ(flame("a", NULL, (const char *const[]){ "b", NULL }, &err), 2);
	CHECK_STR(err, "djp flame: one input file at most, not 2 (djp flame --help)\n");
	CHECK_EQ(flame(NULL, "", (const char *const[]){ "--colour", NULL }, &err), 2);
	CHECK_STR(err, "djp flame: unknown option '--colour' (djp flame --help)\n");
}
