/*
 * Typed accesses (issue: "'->' not supported yet"): `$n->member` through
 * any depth, on pointers and structure members alike, `$n->arr[i]`,
 * `&$n->member`, `$return->member`, user_string() of a char[] and of a
 * char * member, read in the target at the hit by load programs the tool
 * compiles from DWARF.  struct_target is the oracle: it prints what the
 * script prints of each node before the call, and changes and frees the
 * node right after it, so that only values read at the hit are right.
 * At -O2 and -O0 with DWARF 5, and -O2 with DWARF 4.  A load that faults
 * is stap's run-time error and the target runs on; a member or a
 * parameter that does not exist is a semantic error that names the type
 * and its members, at the line and column of the access.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

static const char script[] =
	"probe process.function(\"visit\") {\n"
	"  printf(\"%d %d %d %d %d %d %d %d\\n\", $n->i8, $n->u8, $n->i16, $n->u16, $n->i32, $n->u32, $n->i64,\n"
	"         $n->u64)\n"
	"  printf(\"%d %d %d %d %d\\n\", $n->b, $n->c, $n->bf_u, $n->bf_s, $n->bf_hi)\n"
	"  printf(\"%d %d %d %d %d %d %d\\n\", $n->un->ui, $n->ax, $n->ay, $n->in->s, $n->in->col, $n->pin->uc,\n"
	"         $n->pin->flag)\n"
	"  printf(\"%d %s %s %d %d\\n\", $n->cvu, user_string($n->name), user_string($n->str), $n->arr[2],\n"
	"         $n->next->next->next->i32)\n"
	"  printf(\"%d %d\\n\", &$n->arr[1] - $n, $n->next->arr[3])\n"
	"}\n"
	"probe process.function(\"make\").return { printf(\"%d %d\\n\", $return->i32, $return->in->s) }\n";

/* djp -c "TARGET ARG" -e text, its output in a file: the finished tool,
 * with what the script printed in *out (malloc'd). */
static struct tproc *run_script(const char *target, const char *arg, const char *text, int want_status, char **out)
{
	char cmd[4200], path[] = "/tmp/djp-typed-XXXXXX";
	int fd = mkstemp(path), st;
	struct tproc *p;
	FILE *f;
	long n;

	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s %s", djp_test_path(target), arg);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-o", path, "-e", (char *)text, NULL }, false, -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != want_status)
		djp_test_fail(__FILE__, __LINE__, "%s: status %#x: %s / %s", target, st, p->obuf, p->ebuf);
	CHECK((f = fopen(path, "r")) != NULL);
	CHECK((*out = calloc(1, 1 << 16)) != NULL);
	n = (long)fread(*out, 1, (1 << 16) - 1, f);
	(*out)[n > 0 ? n : 0] = 0;
	fclose(f);
	unlink(path);
	return p;
}

/* A script the tool refuses before the target runs (exit 1, nothing
 * printed), with msg in what it says. */
static void refused_with(const char *target, const char *arg, const char *text, const char *msg)
{
	char *got;
	struct tproc *p = run_script(target, arg, text, 1, &got);

	if (!strstr(p->ebuf, msg) || got[0])
		djp_test_fail(__FILE__, __LINE__, "%s: no \"%s\" in: %s (stdout '%s')", text, msg, p->ebuf, got);
	free(got);
	free(p);
}

static const char pretty_script[] = "probe process.function(\"visit\") {\n"
				    "  println($n$)\n  println($n->in$$)\n  println($n->pin$)\n  println($k$)\n}\n";

static void members_match_as(const char *target, const char *arg, const char *text, int lines)
{
	char *out, *oracle;
	struct tproc *p = run_script(target, arg, text, 0, &out);

	/* the target's own lines, less its last */
	oracle = p->obuf;
	CHECK(strstr(oracle, "done\n") != NULL);
	*strstr(oracle, "done\n") = 0;
	if (strcmp(out, oracle) || tt_lines(out) != lines)
		djp_test_fail(__FILE__, __LINE__, "%s: the script printed\n%s\nthe target\n%s\nstderr: %s", target, out,
			      oracle, p->ebuf);
	free(out);
	free(p);
}

static void members_match(const char *target)
{
	members_match_as(target, "5", script, 5 * 6);
}

TEST_TIMEOUT(script_typed_members_are_the_programs_own_values, 120)
{
	members_match("trace_progs/struct_target");
}

TEST_TIMEOUT(script_typed_members_are_the_programs_own_values_O0, 120)
{
	members_match("trace_progs/struct_target-O0");
}

TEST_TIMEOUT(script_typed_members_are_the_programs_own_values_dwarf4, 120)
{
	members_match("trace_progs/struct_target-dwarf4");
}

/* A chain through a bad pointer (16) and one into a page nobody may read:
 * stap's error at the operator, status 1, and the target ends as it
 * would have ("done"). */
TEST_TIMEOUT(script_typed_fault_is_an_error_and_the_target_runs_on, 120)
{
	char *out;
	struct tproc *p = run_script("trace_progs/struct_target", "0",
				     "probe process.function(\"visit_bad\") { println($n->next->i32) }", 1, &out);
	if (!strstr(p->ebuf, "ERROR: user memory copy fault at 0x18 near operator '->' at <input>:1:49 in probe"))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	CHECK(strstr(p->obuf, "done\n") != NULL);
	free(out);
	free(p);
	p = run_script("trace_progs/struct_target", "0",
		       "probe process.function(\"visit_bad\") { printf(\"%x\\n\", $n->pin) println($n->pin->uc) }", 1,
		       &out);
	/* the PROT_NONE page's address, as the script printed it, + 2 */
	{
		unsigned long long page = strtoull(out, NULL, 16);
		char want[128];
		CHECK(page >= 4096);
		snprintf(want, sizeof(want), "ERROR: user memory copy fault at 0x%llx near operator '->'", page + 2);
		if (!strstr(p->ebuf, want))
			djp_test_fail(__FILE__, __LINE__, "want %s; stderr: %s", want, p->ebuf);
	}
	CHECK(strstr(p->obuf, "done\n") != NULL);
	free(out);
	free(p);
}

/* What does not exist is said before the run: the type and its members,
 * the function and its parameters, at line:column; @defined folds. */
TEST_TIMEOUT(script_typed_errors_name_the_type_and_its_members, 120)
{
	char *out;
	struct tproc *p = run_script("trace_progs/struct_target", "0",
				     "probe process.function(\"visit\") {\n  println($n->pin->nope)\n}", 1, &out);
	if (!strstr(p->ebuf, "<input>:2:13: semantic error: $n->pin->nope: unknown member 'nope' of struct inner "
			     "(members: s, uc, flag, col), in function visit\n"))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	CHECK_EQ(tt_count(p->ebuf, "semantic error"), 1);
	free(out);
	free(p);
	refused_with("trace_progs/struct_target", "0", "probe process.function(\"visit\") { println($m->i8) }", "semantic error: $m->i8: no parameter $m in visit (parameters: $n $k)");
	refused_with("trace_progs/struct_target", "0", "probe process.function(\"visit\") { println($k->x) }", "semantic error: $k->x: '->x' on a int, which is no struct, union or pointer to one");
	p = run_script("trace_progs/struct_target", "1",
		       "probe process.function(\"visit\") {\n"
		       "  printf(\"%d %d %d\\n\", @defined($n->nope), @defined($n->in->col),\n"
		       "         @defined($n->x) ? $n->x : $n->in->s)\n"
		       "}",
		       0, &out);
	CHECK_STR(out, "0 1 -5\n");
	free(out);
	free(p);
}

/* $n$ (nested structures as {...}, enums by name, char arrays and char *
 * as strings, pointers in hex, arrays in brackets), $n->in$$, $n->pin$
 * (a pointer to a structure: the structure) and $k$, as struct_target
 * prints them. */
TEST_TIMEOUT(script_typed_pretty_printing_is_stap_s, 120)
{
	members_match_as("trace_progs/struct_target", "3 pretty", pretty_script, 3 * 4);
	members_match_as("trace_progs/struct_target-O0", "3 pretty", pretty_script, 3 * 4);
	members_match_as("trace_progs/struct_target-dwarf4", "3 pretty", pretty_script, 3 * 4);
}

/* @cast($n, "struct T"[, "PATH"])->member: $n's value as the address of a
 * T named in the object's DWARF (a struct inner over a node's first two
 * bytes: u8 << 8 | i8 as a short), a type that does not exist names the
 * object searched. */
TEST_TIMEOUT(script_typed_cast_reads_as_the_type_named, 120)
{
	char text[1024], *out;
	struct tproc *p;

	snprintf(text, sizeof(text),
		 "probe process.function(\"visit_bad\") { println(@cast($n, \"struct node\")->i32) }\n"
		 "probe process.function(\"visit\") {\n"
		 "  printf(\"%%d %%d %%s\\n\", @cast($n, \"struct inner\")->s,\n"
		 "         @cast($n, \"struct node\", \"%s\")->in->col, user_string(@cast($n, \"struct node\")->str))\n"
		 "}\n",
		 djp_test_path("trace_progs/struct_target"));
	p = run_script("trace_progs/struct_target", "2", text, 0, &out);
	CHECK_STR(out, "-1380 7 alpha\n-1123 7 beta\n0\n");
	free(out);
	free(p);
	refused_with("trace_progs/struct_target", "0", "probe process.function(\"visit\") { println(@cast($n, \"struct nosuch\")->i32) }", "<input>:1:69: semantic error: @cast($n, \"struct nosuch\")->i32: @cast: no type 'struct "
			     "nosuch' in the DWARF of ");
}

/* @cast(pointer_arg(1), "struct T", "PATH") and its kin: the address an
 * argument register holds, typed from another object's DWARF, in a
 * program built without any (stap's idiom for stripped code): the same
 * values as $n's in the program with DWARF, which the other tests hold
 * to the program's own output; what cannot be read, said. */
TEST_TIMEOUT(script_typed_cast_of_an_argument_register_without_dwarf, 120)
{
	char typed[512], text[4096], *want, *got;
	struct tproc *p;

	snprintf(typed, sizeof(typed), "%s", djp_test_path("trace_progs/struct_target"));

	p = run_script("trace_progs/struct_target", "3",
		       "probe process.function(\"visit\") { printf(\"%d %d %s %d\\n\", $n->i32, $n->in->col, "
		       "user_string($n->str), $n->arr[2]) }", 0, &want);
	free(p);
	snprintf(text, sizeof(text),
		 "probe process.function(\"visit\") { printf(\"%%d %%d %%s %%d\\n\", "
		 "@cast(pointer_arg(1), \"struct node\", \"%s\")->i32, @cast(register(\"rdi\"), \"struct node\", "
		 "\"%s\")->in->col, user_string(@cast(ulong_arg(1), \"struct node\", \"%s\")->str), "
		 "@cast(u_register(\"rdi\"), \"struct node\", \"%s\")->arr[2]) }",
		 typed, typed, typed, typed);
	p = run_script("trace_progs/struct_target-nodebug", "3", text, 0, &got);
	{
		int lines = 0;
		for (const char *c = want; *c; c++)
			lines += *c == '\n';
		CHECK_EQ(lines, 3);
	}
	CHECK_STR(got, want);
	free(got);
	free(want);
	free(p);
	refused_with("trace_progs/struct_target-nodebug", "0", "probe process.function(\"visit\") { println(@cast(pointer_arg(1), \"struct node\")->i32) }", "has no debug information: give @cast the path of an object whose DWARF has the type");
	p = run_script("trace_progs/struct_target-nodebug", "0",
		       "probe process.function(\"visit\") { println(@cast(pointer_arg(7), \"struct node\", \"x\")->i32) }",
		       1, &got);
	if (!strstr(p->ebuf, "<input>:1:84: semantic error: @cast(pointer_arg(7), \"struct node\", \"x\")->i32: not "
			     "supported yet: @cast of pointer_arg(7) (only the six arguments in registers)"))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	free(got);
	free(p);
}

/* @cast(p, "T") of a local the probe sets to a context variable (or an
 * argument register) once, before, in its own statements: read at the hit
 * as @cast($n, "T") is, so the same values as $n's, which the other tests
 * hold to the program's own output.  A local set any other way, a global,
 * or arithmetic is refused before the target runs: by the time the script
 * runs, the program has freed and overwritten the node (struct_target
 * does, after each visit), and a read then would give a wrong value. */
TEST_TIMEOUT(script_typed_cast_of_a_local_holding_a_context_variable, 120)
{
	static const char *const refused[] = {
		"global q; probe process.function(\"visit\") { q = $n; println(@cast(q, \"struct node\")->i32) }",
		"probe process.function(\"visit\") { println(@cast($n + 8, \"struct node\")->i32) }",
		"probe process.function(\"visit\") { if ($k) p = $n; println(@cast(p, \"struct node\")->i32) }",
		"probe process.function(\"visit\") { println(@cast(p, \"struct node\")->i32); p = $n }",
		"probe process.function(\"visit\") { p = $n; p += 0; println(@cast(p, \"struct node\")->i32) }",
		"probe process.function(\"visit\") { p = $n; foreach (p in a) {} a[1] = 1; println(@cast(p, \"struct node\")->i32) }",
	};
	char typed[512], text[4096], *want, *got;
	struct tproc *p;

	snprintf(typed, sizeof(typed), "%s", djp_test_path("trace_progs/struct_target"));
	p = run_script("trace_progs/struct_target", "3",
		       "probe process.function(\"visit\") { printf(\"%d %d %s %d\\n\", $n->i32, $n->in->col, "
		       "user_string($n->str), $n->next->next->next->i32) }", 0, &want);
	free(p);
	p = run_script("trace_progs/struct_target", "3",
		       "probe process.function(\"visit\") { p = $n; x = 1; printf(\"%d %d %s %d\\n\", "
		       "@cast(p, \"struct node\")->i32, @cast(p, \"struct node\")->in->col, "
		       "user_string(@cast(p, \"struct node\")->str), @cast(p, \"struct node\")->next->next->next->i32) }",
		       0, &got);
	CHECK_STR(got, want);
	free(got);
	free(p);
	/* and p->member itself, as stap types such a local */
	p = run_script("trace_progs/struct_target", "3",
		       "probe process.function(\"visit\") { p = $n; printf(\"%d %d %s %d\\n\", p->i32, p->in->col, "
		       "user_string(p->str), p->next->next->next->i32) }",
		       0, &got);
	CHECK_STR(got, want);
	free(got);
	free(p);
	refused_with("trace_progs/struct_target", "1", "probe process.function(\"visit\") { p = $n; p++; println(p->i32) }", "p->i32: not supported yet: '->' on a value the script computes");
	snprintf(text, sizeof(text),
		 "probe process.function(\"visit\") { a = pointer_arg(1); printf(\"%%d %%d %%s %%d\\n\", "
		 "@cast(a, \"struct node\", \"%s\")->i32, @cast(a, \"struct node\", \"%s\")->in->col, "
		 "user_string(@cast(a, \"struct node\", \"%s\")->str), "
		 "@cast(a, \"struct node\", \"%s\")->next->next->next->i32) }",
		 typed, typed, typed, typed);
	p = run_script("trace_progs/struct_target-nodebug", "3", text, 0, &got);
	CHECK_STR(got, want);
	free(got);
	free(want);
	free(p);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		p = run_script("trace_progs/struct_target", "1", refused[i], 1, &got);
		if (!strstr(p->ebuf, "semantic error: @cast(") ||
		    !strstr(p->ebuf, "not supported yet: @cast of a value the script computes") || got[0])
			djp_test_fail(__FILE__, __LINE__, "%s: stdout '%s', stderr: %s", refused[i], got, p->ebuf);
		free(got);
		free(p);
	}
}

/* @entry(EXPR) of context variables, numbers and operators at a return:
 * its value at the entry (visit returns its k, and the engine keeps the
 * entry's arguments for the return); @entry of an expression outside a
 * return probe is refused (members: the next test; calls:
 * script_entry_of_any_expression_through_recursion). */
TEST_TIMEOUT(script_entry_of_an_expression_of_parameters, 60)
{
	char *got;
	struct tproc *p = run_script("trace_progs/struct_target", "3",
				     "probe process.function(\"visit\").return { printf(\"%d %d %d %d\\n\", "
				     "@entry($k * 2 + 1), @entry($k > 0 ? -$k : 7), @entry(!$k || $k == 2), $return) }",
				     0, &got);
	CHECK_STR(got, "1 7 1 0\n3 -1 0 1\n5 -2 1 2\n");
	free(got);
	free(p);
	refused_with("trace_progs/struct_target", "1", "probe process.function(\"visit\") { println(@entry(tid())) }", "@entry of an expression is only in a probe whose points are all function returns");
}

/* At markers: @cast($argN or $NAME, "T")->member, the address being the
 * site's argument wherever its record places it.  At a .markers marker of
 * corpus_target (config's hdr=%p, a static header), the values of its
 * initializer in the program's source; at an SDT probe (sdt_target's
 * strs, the query string as its first argument), the bytes user_string()
 * reads.
 * Without @cast, or with an argument the marker has not, an error that
 * says so, before the target runs. */
TEST_TIMEOUT(script_typed_cast_at_markers, 120)
{
	char *got, want[256], line[256];
	unsigned magic = 0, version = 0;
	char tag[16] = "";
	struct tproc *p;
	FILE *f;

	/* the oracle: the header's initializer in the program's source */
	CHECK((f = fopen(djp_test_path("../../selftests/trace_progs/corpus_target.c"), "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " static struct header hdr = { %x, %u, \"%15[^\\\"]", &magic, &version, tag) == 3)
			break;
	fclose(f);
	CHECK(magic && version && tag[0]);
	p = run_script("trace_progs/corpus_target", "",
		       "probe process.mark(\"config\") { printf(\"%x %d %s\\n\", @cast($hdr, \"struct header\")->magic, "
		       "@cast($arg1, \"struct header\")->version, @cast($hdr, \"struct header\")->tag$) }",
		       0, &got);
	snprintf(want, sizeof(want), "%x %u \"%s\\n\"\n", magic, version, tag);
	CHECK_STR(got, want);
	free(got);
	free(p);
	{
		int st;
		const char *text = "probe process.provider(\"sdt_target\").mark(\"strs\") { printf(\"%d %d %d|%d %d %d\\n\", "
				   "@cast($arg1, \"struct sdt_text\")->c[0], @cast($arg1, \"struct sdt_text\")->c[7], "
				   "@cast($arg1, \"struct sdt_text\")->c[52], stringat(user_string($arg1), 0), "
				   "stringat(user_string($arg1), 7), stringat(user_string($arg1), 52)) }";
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", (char *)tt_sdt_target(), "-e", (char *)text, NULL },
			     false, -1);
		CHECK(tt_wait_out(p, "ready", 10000));
		tt_send(p, "strings 2\n");
		CHECK(tt_wait_out(p, "strings done", 10000));
		close(p->in);
		p->in = -1;
		st = tt_finish(p, 10000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		snprintf(want, sizeof(want), "83 97 59|83 97 59\n83 97 59|83 97 59\n");
		if (!strstr(p->obuf, want))
			djp_test_fail(__FILE__, __LINE__, "no %s in: %s / %s", want, p->obuf, p->ebuf);
		free(p);
	}
	refused_with("trace_progs/corpus_target", "", "probe process.mark(\"config\") { println($hdr->magic) }", "$hdr has no C type at a marker: @cast it");
	refused_with("trace_progs/corpus_target", "", "probe process.mark(\"config\") { println(@cast($nope, \"struct header\")->magic) }", "marker config has no argument $nope");
}

/* @var("name@file.c")->member: a typed access from a global, read at the
 * hit where the function's object has it: struct_target's st_last (the
 * node being visited: the same values as $n's) and st_inner (a structure:
 * its initializer in the program's source). */
TEST_TIMEOUT(script_typed_member_of_a_global, 120)
{
	char *got, want[512], line[256];
	int s = 0, uc = 0, flag = 0;
	char col[16] = "", flagtext[8] = "";
	struct tproc *p;
	FILE *f;
	unsigned lines = 0;

	CHECK((f = fopen(djp_test_path("../../selftests/trace_progs/struct_target.c"), "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "struct inner st_inner = { %d, %d, %7[a-z], %15[A-Z] }", &s, &uc, flagtext, col) == 4)
			break;
	flag = !strcmp(flagtext, "true");
	fclose(f);
	CHECK(col[0] != 0);
	p = run_script("trace_progs/struct_target", "3",
		       "probe process.function(\"visit\") { printf(\"%d %s %d|%d %s %d|%d %d %d\\n\", "
		       "@var(\"st_last@struct_target.c\")->i32, user_string(@var(\"st_last\")->str), "
		       "@var(\"st_last\")->next->next->next->i32, $n->i32, user_string($n->str), "
		       "$n->next->next->next->i32, @var(\"st_inner\")->s, @var(\"st_inner\")->uc, "
		       "@var(\"st_inner\")->flag) }",
		       0, &got);
	for (char *l = got, *nl; (nl = strchr(l, '\n')); l = nl + 1, lines++) {
		char *a = l, *b = strchr(l, '|'), *c = b ? strchr(b + 1, '|') : NULL;
		*nl = 0;
		CHECK(b && c);
		*b = *c = 0;
		CHECK_STR(a, b + 1);
		snprintf(want, sizeof(want), "%d %d %d", s, uc, flag);
		CHECK_STR(c + 1, want);
	}
	CHECK_EQ(lines, 3);
	free(got);
	free(p);
	refused_with("trace_progs/struct_target", "1", "probe process.function(\"visit\") { println(@var(\"nosuch@struct_target.c\")->x) }", "no variable 'nosuch' at the top of a unit named struct_target.c");
}

/* $p->arr[$i]: an index that is a context variable, read at the hit with
 * the rest: the same values as the literal index that equals it (visit's
 * k is the loop's i, 0 to 3), through a pointer too; a pointer, or a name
 * that is no parameter, as the index is refused before the run. */
TEST_TIMEOUT(script_typed_index_by_a_context_variable, 120)
{
	char *got, *want;
	struct tproc *p;

	p = run_script("trace_progs/struct_target", "4",
		       "probe process.function(\"visit\") { printf(\"%d %d\\n\", $n->arr[$k], $n->next->arr[$k]) }", 0,
		       &got);
	free(p);
	p = run_script("trace_progs/struct_target", "4",
		       "probe process.function(\"visit\") { printf(\"%d %d\\n\", "
		       "$k == 0 ? $n->arr[0] : $k == 1 ? $n->arr[1] : $k == 2 ? $n->arr[2] : $n->arr[3], "
		       "$k == 0 ? $n->next->arr[0] : $k == 1 ? $n->next->arr[1] : $k == 2 ? $n->next->arr[2] : "
		       "$n->next->arr[3]) }",
		       0, &want);
	CHECK_STR(got, want);
	CHECK(strchr(want, '\n') && strlen(want) > 12);
	free(got);
	free(want);
	free(p);
	refused_with("trace_progs/struct_target", "1", "probe process.function(\"visit\") { println($n->arr[$n]) }", "$n->arr[$n]: the index $n of visit cannot be read at its entry: a pointer");
	p = run_script("trace_progs/struct_target", "1", "probe process.function(\"visit\") { println($n->arr[$zz]) }",
		       1, &got);
	CHECK(strstr(p->ebuf, "no parameter $zz for the index in visit") != NULL);
	free(got);
	free(p);
}

/* A parameter's member at a .return, and @entry of one, are read at the
 * call's entry, as stap reads them: visit() overwrites n->i32 with 12345
 * before it returns, and the return still sees the entry's value; the
 * same for a pretty-printed parameter and a string member.  Each return
 * line equals the entry line before it. */
TEST_TIMEOUT(script_typed_member_at_a_return_is_read_at_the_entry, 120)
{
	char *got;
	struct tproc *p = run_script(
		"trace_progs/struct_target", "3",
		"probe process.function(\"visit\") { printf(\"%d %d %s %s\\n\", $n->i32, $n->i32 + 1, "
		"user_string($n->str), $n$) }\n"
		"probe process.function(\"visit\").return { printf(\"%d %d %s %s\\n\", $n->i32, @entry($n->i32 + 1), "
		"user_string($n->str), $n$) }",
		0, &got);
	char *l = got;
	int pairs = 0;

	for (char *a, *b; (a = l) && (b = strchr(a, '\n')) && b[1]; pairs++) {
		char *c = strchr(b + 1, '\n');
		CHECK(c != NULL);
		*b = *c = 0;
		CHECK_STR(b + 1, a);
		CHECK(strstr(a, "12345") == NULL);
		l = c + 1;
	}
	CHECK_EQ(pairs, 3);
	free(got);
	free(p);
}

/* C++ types: `->` through a reference parameter (Cart &c) as through a
 * pointer, members of a class with a vtable, @cast to a type in a
 * namespace by its qualified name and by its own, and the class pretty-
 * printed; a method named as stap names it, by its own name or its
 * qualified one (its symbol is mangled: lib/cxx_name.c), with `this`:
 * the values the program prints itself. */
TEST_TIMEOUT(script_typed_cxx_references_classes_namespaces, 120)
{
	char *got, *want, *p1, *p2;
	struct tproc *p = run_script("trace_progs/typed_cxx", "3",
				     "probe process.function(\"checkout\") { printf(\"%d %d %ld %s %d\\n\", $c->count, "
				     "$c->first->id, @cast($it, \"shop::Item\")->price, "
				     "user_string(@cast($it, \"Item\")->name), $k) }",
				     0, &got);

	/* the program's checkout lines, in its stdout */
	CHECK((want = calloc(1, strlen(p->obuf) + 1)) != NULL);
	for (char *l = p->obuf, *nl; (nl = strchr(l, '\n')); l = nl + 1)
		if (strncmp(l, "total ", 6))
			strncat(want, l, (size_t)(nl + 1 - l));
	CHECK(strlen(want) > 20);
	CHECK_STR(got, want);
	free(got);
	free(p);
	free(want);
	p = run_script("trace_progs/typed_cxx", "1", "probe process.function(\"checkout\") { println($c$) }", 0, &got);
	CHECK((p1 = strstr(got, "{._vptr.Cart=0x")) == got);
	CHECK((p2 = strstr(got, ", .count=3, .first={...}}\n")) != NULL);
	free(got);
	free(p);
	/* a method by its own name and by its qualified one, with `this`:
	 * the program's "total COUNT K" lines, and its return value */
	p = run_script("trace_progs/typed_cxx", "3",
		       "probe process.function(\"total\") { printf(\"total %d %d\\n\", $this->count, $k) }\n"
		       "probe process.function(\"shop::Cart::total\").return { printf(\"%s %d\\n\", probefunc(), $return) }",
		       0, &got);
	{
		char want[512] = "", line[64];
		for (const char *l = p->obuf; (l = strstr(l, "total ")); l++) {
			int count, k;
			if (sscanf(l, "total %d %d", &count, &k) != 2)
				continue;
			snprintf(line, sizeof(line), "total %d %d\ntotal %d\n", count, k, count * 10 + k);
			strcat(want, line);
		}
		CHECK(strlen(want) > 20);
		CHECK_STR(got, want);
	}
	free(got);
	free(p);
}

/* A real program's own structures, through its separate debug file:
 * python3.11 with python3.11-dbg's DWARF (found by build-id).  A program
 * calls getattr() on an instance of its class 3000 times; the probe on
 * PyObject_GetAttr counts the calls whose object's type is that class by
 * $v->ob_type->tp_name, read at the hit: the program's own count. */
TEST_TIMEOUT(script_typed_python_through_its_debug_file, 120)
{
	char script[] = "/tmp/djp-typed-py-XXXXXX", cmd[256];
	struct tproc *p;
	FILE *f;
	int fd = mkstemp(script);

	if (access("/usr/bin/python3.11", X_OK))
		djp_test_fail(__FILE__, __LINE__, "no /usr/bin/python3.11: make check installs python3");
	CHECK(fd >= 0);
	CHECK((f = fdopen(fd, "w")) != NULL);
	fputs("class DjpProbeFoo:\n    pass\nf = DjpProbeFoo()\nf.x = 1\ns = 0\n"
	      "for i in range(3000):\n    s += getattr(f, 'x')\nprint('calls', s)\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3.11 %s", script);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				     "global n; probe process(\"/usr/bin/python3.11\").function(\"PyObject_GetAttr\") { "
				     "if (user_string($v->ob_type->tp_name) == \"DjpProbeFoo\") n++ } "
				     "probe end { printf(\"n=%d\\n\", n) }",
				     NULL },
		     false, -1);
	int st = tt_finish(p, 100000);
	unlink(script);
	if (strstr(p->ebuf, "no debug information"))
		djp_test_fail(__FILE__, __LINE__, "python3.11 without its DWARF: make check installs python3.11-dbg: %s",
			      p->ebuf);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!strstr(p->obuf, "calls 3000\n") || !strstr(p->obuf, "n=3000\n"))
		djp_test_fail(__FILE__, __LINE__, "%s / %s", p->obuf, p->ebuf);
	free(p);
}

/* A local set once to a typed access (p = $n->next) or to a global
 * (q = @var("st_last")) goes on as one (p->arr[3]); and the address of
 * @var and @cast accesses (&@var("g"), &@var("g")->m, &@cast(p, T)->m):
 * each line's halves, one through the local or the address and one
 * written out, are equal. */
TEST_TIMEOUT(script_typed_locals_from_accesses_and_addresses, 120)
{
	char *got;
	struct tproc *p = run_script(
		"trace_progs/struct_target", "4",
		"probe process.function(\"visit\") { p = $n->next; q = @var(\"st_last\");"
		" printf(\"%d %d %d %x %d|%d %d %d %x %d\\n\", p->next->next->i32, p->arr[3], q->i32,"
		" &@cast($n, \"struct node\")->next, &@var(\"st_inner\")->uc - &@var(\"st_inner\"),"
		" $n->next->next->next->i32, $n->next->arr[3], $n->i32, &$n->next, &$n->in->uc - &$n->in) }",
		0, &got);
	int lines = 0;

	for (char *l = got, *nl; (nl = strchr(l, '\n')); l = nl + 1, lines++) {
		char *bar = strchr(l, '|');
		*nl = 0;
		CHECK(bar != NULL && bar < nl);
		*bar = 0;
		CHECK_STR(l, bar + 1);
	}
	CHECK_EQ(lines, 4);
	free(got);
	free(p);
}

/* &$var of a variable in memory: main's loop counter i at -O0, in a
 * stack slot, is at the same offset from %rbp at each hit, inside the
 * stack, and that offset is one the compiler's own code increments by 1
 * (objdump: addq $0x1,-0xN(%rbp) in main); a parameter a register holds
 * has no address, said before the run. */
TEST_TIMEOUT(script_typed_address_of_a_variable_in_memory, 120)
{
	char o0[PATH_MAX], line[512], text[1024], cmd[2 * PATH_MAX], *got, want[64];
	int at = 0, no = tt_source_line("struct_target.c", "visit(nd, (int)i);"), off = 0, lines = 0;
	struct tproc *p;
	FILE *f;

	snprintf(o0, sizeof(o0), "%s", djp_test_path("trace_progs/struct_target-O0"));
	snprintf(text, sizeof(text),
		 "probe process.statement(\"main@struct_target.c:%d\") { a = &$i; "
		 "printf(\"%%d %%d\\n\", a >= register(\"rsp\") && a < register(\"rsp\") + 65536, a - register(\"rbp\")) }",
		 no);
	p = run_script("trace_progs/struct_target-O0", "3", text, 0, &got);
	for (char *l = got, *nl; (nl = strchr(l, '\n')); l = nl + 1, lines++) {
		int in, o;
		CHECK(sscanf(l, "%d %d", &in, &o) == 2);
		CHECK_EQ(in, 1);
		CHECK(!lines || o == off);
		off = o;
	}
	CHECK_EQ(lines, 3);
	free(got);
	free(p);
	CHECK(off < 0);
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn %s | awk '/<main>:/,/^$/'", o0);
	CHECK((f = popen(cmd, "r")) != NULL);
	snprintf(want, sizeof(want), "addq   $0x1,-0x%x(%%rbp)", -off);
	at = 0;
	while (fgets(line, sizeof(line), f))
		at += strstr(line, want) != NULL;
	pclose(f);
	if (!at)
		djp_test_fail(__FILE__, __LINE__, "no \"%s\" in main's code", want);
	refused_with("trace_progs/struct_target", "1", "probe process.function(\"visit\") { println(&$k) }", "'&$k': $k is not in memory at the entry (a register holds it)");
}

/* One line of a command's output, "" when it printed none. */
static void first_line_of(const char *cmd, char *out, size_t sz)
{
	FILE *f = popen(cmd, "r");

	out[0] = 0;
	if (f && fgets(out, (int)sz, f))
		out[strcspn(out, "\n")] = 0;
	if (f)
		pclose(f);
}

/* usymfileline(), usymfile(), usymline(): a function's first address
 * where addr2line (binutils, the oracle) puts it; an address of no
 * object, or of an object without DWARF, in hex. */
TEST_TIMEOUT(script_usymfileline_is_addr2line_s, 120)
{
	char prog[512], cmd[1200], visit[600], make[600], want[4096], *got;
	struct tproc *p;

	snprintf(prog, sizeof(prog), "%s", djp_test_path("trace_progs/struct_target"));
	snprintf(cmd, sizeof(cmd), "addr2line -e %s 0x$(nm %s | awk '$3 == \"visit\" { print $1 }')", prog, prog);
	first_line_of(cmd, visit, sizeof(visit));
	snprintf(cmd, sizeof(cmd), "addr2line -e %s 0x$(nm %s | awk '$3 == \"make\" { print $1 }')", prog, prog);
	first_line_of(cmd, make, sizeof(make));
	CHECK(strchr(visit, ':') && strchr(make, ':') && strcmp(visit, make));
	p = run_script("trace_progs/struct_target", "2",
		       "probe process.function(\"visit\") { printf(\"V %s %s %s %s\\n\", usymfileline(uaddr()), "
		       "usymfile(uaddr()), usymline(uaddr()), usymfileline(4096)) }\n"
		       "probe process.function(\"make\") { printf(\"M %s\\n\", usymfileline(uaddr())) }",
		       0, &got);
	snprintf(want, sizeof(want), "V %s %.*s %s 0x1000\nM %s\nV %s %.*s %s 0x1000\nM %s\n", visit,
		 (int)(strrchr(visit, ':') - visit), visit, strrchr(visit, ':') + 1, make, visit,
		 (int)(strrchr(visit, ':') - visit), visit, strrchr(visit, ':') + 1, make);
	CHECK_STR(got, want);
	free(got);
	free(p);
	p = run_script("trace_progs/struct_target-nodebug", "1",
		       "probe process.function(\"visit\") { println(usymfileline(uaddr()) == sprintf(\"0x%x\", uaddr())) }",
		       0, &got);
	CHECK_STR(got, "1\n");
	free(got);
	free(p);
}

/* user_string2(addr, err) and user_string_n2(addr, n, err): the error
 * string where the address cannot be read; user_string_warn(addr): ""
 * and a warning, and the run goes on; each the string where it can. */
TEST_TIMEOUT(script_user_string_warn_and_2, 60)
{
	char *got;
	struct tproc *p = run_script("trace_progs/struct_target", "1",
				     "probe process.function(\"visit\") { printf(\"[%s] [%s] [%s] [%s] [%s]\\n\", "
				     "user_string_warn(0), user_string2(16, \"bad\"), user_string_n2(16, 3, \"bad2\"), "
				     "user_string_warn($n->str), user_string_n2($n->str, 3, \"x\")) }",
				     0, &got);
	CHECK_STR(got, "[] [bad] [bad2] [alpha] [alp]\n");
	if (!strstr(p->ebuf, "WARNING: user string copy fault -14 at 0x0"))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	free(got);
	free(p);
}

/* Under -x, into a program that never heard of djprobe (the injected
 * agent: no fast copy, its loads by process_vm_readv): the same values. */
TEST_TIMEOUT(script_typed_members_under_x, 120)
{
	char *argv[] = { (char *)djp_test_path("trace_progs/struct_target"), "4", "wait", NULL };
	struct tproc *t = tt_spawn(argv, false, -1), *d;
	char pid[32], *oracle, *ready;
	int st;

	CHECK(tt_wait_out(t, "ready ", 20000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", pid, "-e",
				      "probe begin { println(\"armed\") }\n"
				      "probe process.function(\"visit\") {\n"
				      "  printf(\"%d %d %d %d %d %d %d %d\\n\", $n->i8, $n->u8, $n->i16, $n->u16, $n->i32,\n"
				      "         $n->u32, $n->i64, $n->u64)\n"
				      "  printf(\"%d %d %d %d %d\\n\", $n->b, $n->c, $n->bf_u, $n->bf_s, $n->bf_hi)\n"
				      "  printf(\"%d %d %d %d %d %d %d\\n\", $n->un->ui, $n->ax, $n->ay, $n->in->s,\n"
				      "         $n->in->col, $n->pin->uc, $n->pin->flag)\n"
				      "  printf(\"%d %s %s %d %d\\n\", $n->cvu, user_string($n->name), user_string($n->str),\n"
				      "         $n->arr[2], $n->next->next->next->i32)\n"
				      "  printf(\"%d %d\\n\", &$n->arr[1] - $n, $n->next->arr[3])\n"
				      "}\n"
				      "probe process.function(\"make\").return { printf(\"%d %d\\n\", $return->i32,\n"
				      "  $return->in->s) }\n"
				      "probe process.function(\"visit_bad\") { exit() }\n",
				      NULL },
		     false, -1);
	/* armed: the first byte of each function probed is a jump (0xe9) or
	 * an int3 (0xcc); the tool connects its points one at a time */
	for (int k = 0; k < 3; k++) {
		static const char *const fn[] = { "visit", "make", "visit_bad" };
		uintptr_t at = tt_func_addr(t->pid, djp_test_path("trace_progs/struct_target"), fn[k]);
		int b = tt_byte_at(t->pid, at);
		for (int i = 0; i < 6000 && b != 0xe9 && b != 0xcc; i++) {
			usleep(10000);
			b = tt_byte_at(t->pid, at);
		}
		if (b != 0xe9 && b != 0xcc) {
			tt_read_now(d);
			djp_test_fail(__FILE__, __LINE__, "%s not armed (%#x): %s / %s", fn[k], b, d->obuf, d->ebuf);
		}
	}
	tt_send(t, "go\n");
	CHECK(tt_wait_out(t, "done\n", 30000));
	st = tt_finish(d, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "djp -x: status %#x: %s / %s", st, d->obuf, d->ebuf);
	oracle = strstr(t->obuf, "\n") + 1; /* after "ready PID" */
	*strstr(oracle, "done\n") = 0;
	ready = strstr(d->obuf, "armed\n") + 6;
	if (strcmp(ready, oracle))
		djp_test_fail(__FILE__, __LINE__, "the script printed\n%s\nthe target\n%s\nstderr: %s", ready, oracle,
			      d->ebuf);
	tt_end(t);
	free(d);
}

/* The issue's own example: libc's FILE through libc6-dbg's DWARF (a
 * separate debug file by build-id), $return->_fileno at fopen's return
 * and $fp->_fileno at fclose. */
TEST_TIMEOUT(script_typed_libc_file_through_its_debug_file, 120)
{
	char *out, want[256];
	struct tproc *p = run_script(
		"trace_progs/struct_target", "2 fopen",
		"probe process(\"/lib/x86_64-linux-gnu/libc.so.6\").function(\"fopen\").return {\n"
		"  printf(\"fopen %d\\n\", $return->_fileno)\n}\n"
		"probe process(\"/lib/x86_64-linux-gnu/libc.so.6\").function(\"fclose\") {\n"
		"  printf(\"fclose %d\\n\", $fp->_fileno)\n}\n",
		0, &out);
	int fd1 = -1, fd2 = -1;
	CHECK(sscanf(p->obuf, "fileno %d\nfileno %d\n", &fd1, &fd2) == 2);
	snprintf(want, sizeof(want), "fopen %d\nfclose %d\nfopen %d\nfclose %d\n", fd1, fd1, fd2, fd2);
	if (strcmp(out, want))
		djp_test_fail(__FILE__, __LINE__, "the script printed\n%s\nwant\n%s\nstderr: %s", out, want, p->ebuf);
	free(out);
	free(p);
}

/* $$parms$: each parameter pretty-printed, "n={...} k=0", as $n$ and $k$
 * print them (the target's lines 1 and 4 of each call); $$locals$ is
 * empty at an entry. */
TEST_TIMEOUT(script_typed_parms_pretty_printed, 120)
{
	char *out, want[8192], *line[4], *save = NULL, *o;
	size_t len = 0;
	struct tproc *p = run_script("trace_progs/struct_target", "2 pretty",
				     "probe process.function(\"visit\") { println($$parms$, \"|\", $$locals$, \"|\") }",
				     0, &out);

	o = p->obuf;
	for (int call = 0; call < 2; call++) {
		for (int i = 0; i < 4; i++)
			CHECK((line[i] = strtok_r(call || i ? NULL : o, "\n", &save)) != NULL);
		len += (size_t)snprintf(want + len, sizeof(want) - len, "n=%s k=%s||\n", line[0], line[3]);
	}
	if (strcmp(out, want))
		djp_test_fail(__FILE__, __LINE__, "the script printed\n%s\nwant\n%s\nstderr: %s", out, want, p->ebuf);
	free(out);
	free(p);
}

/* At a statement point: the variable where the DWARF places it there (at
 * -O0 the stack slot the prologue filled, past the entry), $n$ and $k
 * as the target prints them (its lines 1 and 4 of each call). */
static void statement_match(const char *target)
{
	char text[512], *out, want[8192], *line[4], *save = NULL;
	size_t len = 0;
	struct tproc *p;

	snprintf(text, sizeof(text),
		 "probe process.statement(\"visit@struct_target.c:%d\") { println($n$) println($k) }",
		 tt_source_line("struct_target.c", "sink += n->i32 + k;"));
	p = run_script(target, "2 pretty", text, 0, &out);
	for (int call = 0; call < 2; call++) {
		for (int i = 0; i < 4; i++)
			CHECK((line[i] = strtok_r(call || i ? NULL : p->obuf, "\n", &save)) != NULL);
		len += (size_t)snprintf(want + len, sizeof(want) - len, "%s\n%s\n", line[0], line[3]);
	}
	if (strcmp(out, want))
		djp_test_fail(__FILE__, __LINE__, "%s: the script printed\n%s\nwant\n%s\nstderr: %s", target, out, want,
			      p->ebuf);
	free(out);
	free(p);
}

TEST_TIMEOUT(script_typed_at_a_statement, 120)
{
	statement_match("trace_progs/struct_target");
	statement_match("trace_progs/struct_target-O0");
}

/* One event carrying a probe's typed results, its registers (a script's
 * register()) and its user stack: each block read where the others leave
 * it (lib/ring.h's layout), the member the program's own, the register
 * the pointer it was passed. */
TEST_TIMEOUT(script_typed_beside_registers_and_the_stack, 120)
{
	char *out, *line, want[64];
	int n = 0;
	struct tproc *p =
		run_script("trace_progs/struct_target", "5",
			   "probe process.function(\"visit\") { printf(\"%d %d %d\\n\", $n->i32, register(\"rdi\") == $n, "
			   "strlen(sprint_ubacktrace()) > 0) }",
			   0, &out);
	/* the target's first line of each visit: i8 u8 i16 u16 i32 ... */
	for (line = p->obuf; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
		char one[256];
		long v[9];
		snprintf(one, sizeof(one), "%.*s", (int)strcspn(line, "\n"), line);
		if (sscanf(one, "%ld %ld %ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7], &v[8]) != 8)
			continue;
		snprintf(want, sizeof(want), "%ld 1 1\n", v[4]);
		if (!strstr(out, want))
			djp_test_fail(__FILE__, __LINE__, "no '%.*s' in\n%s\nthe target\n%s", (int)strlen(want) - 1,
				      want, out, p->obuf);
		n++;
	}
	CHECK(n >= 5);
	CHECK_EQ(tt_lines(out), 5);
	free(out);
	free(p);
}

/* Two static functions named show(), in two files, each with its own
 * structure: `$p->x` at each is its own layout's, at the entry, at the
 * return (read at the entry) and at a statement of each (the programs
 * are the site's, by its address, not by the function's name): the
 * values the program prints itself. */
TEST_TIMEOUT(script_typed_functions_of_one_name_each_with_its_own_layout, 120)
{
	static const char *const scripts[] = {
		"probe process.function(\"show\") { printf(\"x %d\\n\", $p->x) }",
		"probe process.function(\"show\").return { printf(\"x %d\\n\", $p->x) }",
		"probe process.statement(\"*@samename_target.c:24\"), process.statement(\"*@samename_target.c:42\") "
		"{ printf(\"x %d\\n\", $p->x) }",
	};

	for (unsigned i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		char *out, *oracle;
		struct tproc *p = run_script("trace_progs/samename_target", "4", scripts[i], 0, &out);

		oracle = p->obuf;
		CHECK(strstr(oracle, "done ") != NULL);
		*strstr(oracle, "done ") = 0;
		if (strcmp(out, oracle) || tt_lines(out) != 8)
			djp_test_fail(__FILE__, __LINE__, "%s: the script printed\n%s\nthe target\n%s\nstderr: %s",
				      scripts[i], out, oracle, p->ebuf);
		free(out);
		free(p);
	}
}

/* `$n->arr[2]$`: a pretty-printed element, as stap writes `$var[i]$`
 * (the '$' after a ']'), the same number as `$n->arr[2]`; a bare '$'
 * anywhere else is still a parse error. */
TEST_TIMEOUT(script_typed_pretty_printed_element, 60)
{
	char *out;
	struct tproc *p = run_script("trace_progs/struct_target", "3",
				     "probe process.function(\"visit\") { printf(\"%d %s %s\\n\", $n->arr[2], "
				     "$n->arr[2]$, $n->arr[$k]$$) }",
				     0, &out);
	int lines = 0;

	for (char *l = out, *e; (e = strchr(l, '\n')); l = e + 1, lines++) {
		long a, b;
		*e = 0;
		if (sscanf(l, "%ld %ld", &a, &b) != 2 || a != b)
			djp_test_fail(__FILE__, __LINE__, "'%s': the element and its pretty-printing differ", l);
	}
	CHECK_EQ(lines, 3);
	free(out);
	free(p);
	refused_with("trace_progs/struct_target", "1", "probe process.function(\"visit\") { x = $ }",
		     "expected a name after '$'");
}

/* Structures passed and returned by value (byval_target): members read
 * from the registers the calling convention puts them in (one register,
 * two, an int beside a double in a vector register), from the stack
 * above the return address, through a pointer they hold, and from a
 * structure returned in registers or in the caller's space; read at the
 * return too (at the entry); the values the program prints itself. */
static const char byval_script[] =
	"probe process.function(\"byval\") { printf(\"byval %d %d %d\\n\", $p->x, $p->y, $k) }\n"
	"probe process.function(\"two\") { printf(\"two %d %d %d %d\\n\", $z, $t->a, $t->b, $t->c) }\n"
	"probe process.function(\"mix\") { printf(\"mix %d\\n\", $m->n) }\n"
	"probe process.function(\"big\") { printf(\"big %d %d %d %d %d\\n\", $z, $b->a, $b->c, $b->d, $after) }\n"
	"probe process.function(\"hasp\") { printf(\"hasp %s %d\\n\", user_string($h->name), $h->p->y) }\n"
	"probe process.function(\"retpt\").return { printf(\"retpt %d %d\\n\", $return->x, $return->y) }\n"
	"probe process.function(\"retbig\").return { printf(\"retbig %d %d\\n\", $return->c, $return->d) }\n"
	"probe process.function(\"nullp\") { printf(\"nullp %d %d\\n\", -1, $q->x + $k + 2) }\n";

static void byval_match(const char *target)
{
	char *out, *oracle;
	struct tproc *p = run_script(target, "3", byval_script, 0, &out);

	oracle = p->obuf;
	CHECK(strstr(oracle, "done ") != NULL);
	*strstr(oracle, "done ") = 0;
	if (strcmp(out, oracle) || tt_lines(out) != 3 * 7 + 3)
		djp_test_fail(__FILE__, __LINE__, "%s: the script printed\n%s\nthe target\n%s\nstderr: %s", target, out,
			      oracle, p->ebuf);
	free(out);
	free(p);
}

TEST_TIMEOUT(script_typed_structures_by_value, 120)
{
	char *out;
	struct tproc *p;

	byval_match("trace_progs/byval_target");
	byval_match("trace_progs/byval_target-O0");
	/* pretty-printed, $$parms$ and $$return$ among them, and a member
	 * read at the return (at the call's entry) */
	p = run_script("trace_progs/byval_target", "1",
		       "probe process.function(\"byval\") { println($$parms$) }\n"
		       "probe process.function(\"big\") { println($b$) }\n"
		       "probe process.function(\"two\").return { println($t$) }\n"
		       "probe process.function(\"mix\") { println($m$) }\n"
		       "probe process.function(\"retbig\").return { println($$return$) }\n",
		       0, &out);
	CHECK_STR(out, "p={.x=3, .y=-4} k=9\n"
		       "{.a=1000, .b=-7, .c=200}\n"
		       "{.n=42}\n"
		       "{.a=10, .b=20, .c=30, .d=-40}\n"
		       "return={.a=7, .b=14, .c=21, .d=-7}\n");
	free(out);
	free(p);
	/* what cannot be read says why */
	refused_with("trace_progs/byval_target", "1", "probe process.function(\"mix\") { println($m->d) }",
		     "'double' is a floating-point value");
	refused_with("trace_progs/byval_target", "1", "probe process.function(\"byval\") { println(&$p->x) }",
		     "'&' of a value that is not in memory");
}

/* Pretty printing as stap's: each function of a probe prints its own
 * parameters' layout ($$parms$ where their types differ), a function
 * without DWARF of its own prints none, and a value one of whose loads
 * faults prints "ERROR" (stap's try around each pretty-printed value),
 * that value alone: the others, and the script, go on. */
TEST_TIMEOUT(script_typed_pretty_printing_per_function_and_faults, 120)
{
	char *out;
	struct tproc *p = run_script("trace_progs/byval_target", "1",
				     "probe process.function(\"byval\"), process.function(\"big\"), "
				     "process.function(\"mix\"), process.function(\"_start\") { println($$parms$) }\n",
				     0, &out);

	CHECK_STR(out, "\n" /* _start */
		       "p={.x=3, .y=-4} k=9\n"
		       "m={.n=42}\n"
		       "z=6 b={.a=10, .b=20, .c=30, .d=-40} after=77\n");
	free(out);
	free(p);
	p = run_script("trace_progs/struct_target", "1",
		       "probe process.function(\"visit_bad\") { println($n->pin$) println($n->next$) "
		       "println($n->in$) printf(\"%s|%s\\n\", $n->pin$, $n->in->s$) }\n",
		       0, &out);
	CHECK_STR(out, "ERROR\nERROR\n{.s=0, .uc=0, .flag=0, .col=0}\nERROR|0\n");
	free(out);
	free(p);
	/* in $$parms$, the parameter that faulted alone; "?" for one with no
	 * location (a double) */
	p = run_script("trace_progs/byval_target", "1", "probe process.function(\"nullp\") { println($$parms$) }\n",
		       0, &out);
	CHECK_STR(out, "p=ERROR d=? q={.x=3, .y=-4} k=7\n");
	free(out);
	free(p);
	/* not pretty-printed, stap's placeholders: {...} for a structure,
	 * ? for what cannot be read, in the parameters' order */
	p = run_script("trace_progs/byval_target", "1",
		       "probe process.function(\"byval\"), process.function(\"big\"), process.function(\"nullp\") "
		       "{ println($$parms) }\n",
		       0, &out);
	static const char parms[] = "p={...} k=0x9\nz=0x6 b={...} after=0x4d\np=0x0 d=? q=0x";
	if (strncmp(out, parms, sizeof(parms) - 1))
		djp_test_fail(__FILE__, __LINE__, "$$parms printed:\n%s", out);
	CHECK(strstr(out, " k=0x7\n") != NULL);
	free(out);
	free(p);
}
