/*
 * Arguments without debug information (tools/djp/script/run/builtins/
 * dwarfless.c): register(), u_register(), int_arg(n) and its kin and
 * returnval(), read in the target at the hit, checked against what the
 * probed program itself prints of each call (trace_progs/dwarfless_target.c,
 * built without DWARF) and against bpftrace's argN and retval on a real
 * stripped program, bash; and $argN where a function has no DWARF, a
 * compile-time error that names what to use instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *target(void)
{
	static char p[4096];
	if (!p[0])
		snprintf(p, sizeof(p), "%s", djp_test_path("trace_progs/dwarfless_target"));
	return p;
}

/* djp [opt] -c "dwarfless_target N" -e script: finished, exit 0. */
static struct tproc *run(const char *opt, long n, const char *script)
{
	char cmd[4200];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %ld", target(), n);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", (char *)script, (char *)opt, NULL }, false,
		     -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	return p;
}

#define ARGS_SCRIPT                                                                                               \
	"probe process.function(\"dl_six\") { printf(\"S six %d %u %d %#x %d %d\\n\", int_arg(1), uint_arg(2), "   \
	"long_arg(3), pointer_arg(4), s32_arg(5), longlong_arg(6)) }\n"                                            \
	"probe process.function(\"dl_eight\") { printf(\"S eight %d %d %d\\n\", ulong_arg(1), s64_arg(7), "        \
	"int_arg(8)) }\n"                                                                                          \
	"probe process.function(\"dl_regs\") { printf(\"S regs %d %d %d %d\\n\", register(\"edi\"), "               \
	"u_register(\"si\"), register(\"dl\"), register(\"rcx\")) }\n"                                             \
	"probe process.function(\"dl_ret\").return { printf(\"S ret %d\\n\", returnval()) }\n"                   \
	"probe process.mark(\"dl_mark\") { printf(\"S mark %d %d\\n\", long_arg(1), register(\"rsi\")) }\n"

/* The arguments of each call as the program passed them, through jumps:
 * the six registers cut and extended as each function says, two words
 * from the stack, registers by their 32-, 16- and 8-bit names, the
 * return value, and the registers at a marker. */
TEST_TIMEOUT(script_dwarfless_args_are_the_programs, 60)
{
	static const char *const kinds[] = { "six ", "eight ", "regs ", "ret ", "mark " };
	struct tproc *p = run(NULL, 5, ARGS_SCRIPT);
	CHECK_EQ(tt_twinned(p, kinds, 5), 5 * 5);
	free(p);
}

/* The same as int3 breakpoints, and the callee-saved registers, which
 * only an int3's view holds (so a script that reads one is armed so). */
TEST_TIMEOUT(script_dwarfless_callee_saved_and_int3, 60)
{
	static const char *const kinds[] = { "six ", "eight ", "regs ", "ret ", "mark ", "callee " };
	struct tproc *p = run(NULL, 4,
			      ARGS_SCRIPT "probe process.function(\"dl_callee\") { printf(\"S callee %d %d\\n\", "
					  "register(\"rbx\"), register(\"r12\")) }\n");
	CHECK_EQ(tt_twinned(p, kinds, 6), 6 * 4);
	free(p);
	p = run("--int3", 3, ARGS_SCRIPT);
	CHECK_EQ(tt_twinned(p, kinds, 5), 5 * 3);
	free(p);
}

/* At a statement point (of a program with DWARF): the registers there,
 * the argument still in %edi as its DWARF says, the pc the probe's
 * address. */
TEST_TIMEOUT(script_dwarfless_registers_at_a_statement, 60)
{
	char cmd[4200], script[512];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s 3", tt_typed_target(false));
	snprintf(script, sizeof(script),
		 "probe process.statement(\"tt_int@typed_target.c:%d\") { printf(\"S %%d %%d %%d\\n\", $x, int_arg(1), "
		 "register(\"rip\") == uaddr()) }",
		 tt_source_line("typed_target.c", "tt_sink += x;"));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, false, -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	for (int i = 0; i < 3; i++) {
		char want[64];
		snprintf(want, sizeof(want), "S %d %d 1\n", i, i);
		if (tt_count(p->obuf, want) != 1)
			djp_test_fail(__FILE__, __LINE__, "no \"%.*s\" in:\n%s\n%s", (int)strlen(want) - 1, want, p->obuf,
				      p->ebuf);
	}
	free(p);
}

/* A site two of the script's points match, one with register(), one
 * with the user stack: each hit records both (the agent runs one handler
 * of a session per hit). */
TEST_TIMEOUT(script_dwarfless_registers_beside_ubacktrace, 60)
{
	struct tproc *p = run(NULL, 3,
			      "probe process.function(\"dl_*\") { if (ppfunc() == \"dl_six\") printf(\"S %d\\n\", "
			      "int_arg(1)) }\n"
			      "probe process.function(\"dl_six\") { printf(\"U %s\\n\", usymname(ustack(1))) }");
	CHECK_EQ(tt_count(p->obuf, "S -5\n"), 1);
	CHECK_EQ(tt_count(p->obuf, "S -7\n"), 1);
	if (tt_count(p->obuf, "U main\n") != 3)
		djp_test_fail(__FILE__, __LINE__, "not three stacks from main:\n%s\n%s", p->obuf, p->ebuf);
	free(p);
}

/* Where there is no hit, and names and numbers that never work: stap's
 * run-time error, and compile-time errors with line:column. */
TEST_TIMEOUT(script_dwarfless_errors, 60)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "-e", "probe begin { print(int_arg(1)) }", NULL },
				   false, -1);
	int st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(strstr(p->ebuf, "ERROR: cannot access function args in this context near identifier 'int_arg' at "
			      "<input>:1:21 in probe begin\n"));
	free(p);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-p2", "-e",
				      "probe begin { print(register(\"eflags\")) print(int_arg(0)) print(u_register(\"foo\")) }",
				      NULL },
		     false, -1);
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(strstr(p->ebuf, "<input>:1:30: semantic error: register 'eflags' is not recorded at a probe: the "
			      "general registers and rip are\n"));
	CHECK(strstr(p->ebuf, "<input>:1:55: semantic error: cannot access arg(0): djp reads arguments 1 to 14\n"));
	CHECK(strstr(p->ebuf, "<input>:1:76: semantic error: Unknown register: foo\n"));
	free(p);
}

/* $arg1 and $name where the function has no DWARF: refused at compile
 * time, before anything is armed, naming what works there. */
TEST_TIMEOUT(script_dwarfless_context_variable_is_a_compile_error, 60)
{
	char cmd[4200], want[8192];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s 3", target());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				      "probe process.function(\"dl_six\") {\n  printf(\"%d\\n\", $arg2)\n}", NULL },
		     false, -1);
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	snprintf(want, sizeof(want),
		 "<input>:2:18: semantic error: '$arg2' in probe point process.function(\"dl_six\"): no debug "
		 "information for 'dl_six' in %s: use int_arg(2) or pointer_arg(2)\n",
		 target());
	if (!strstr(p->ebuf, want))
		djp_test_fail(__FILE__, __LINE__, "no \"%s\" in:\n%s", want, p->ebuf);
	free(p);
	/* a real stripped program, named by its path */
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", "/usr/bin/bash -c 'echo ran'", "-e",
				      "probe process(\"/usr/bin/bash\").function(\"itos\").return { print($i + $return) }",
				      NULL },
		     false, -1);
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(strstr(p->ebuf, "<input>:1:64: semantic error: '$i' in probe point "
			      "process(\"/usr/bin/bash\").function(\"itos\").return: no debug information for 'itos' in "
			      "/usr/bin/bash: use int_arg(N) or pointer_arg(N), N its position among the arguments, in a "
			      "probe of the function's entry\n"));
	free(p);
	/* stap's idiom for code with and without DWARF */
	p = run(NULL, 2,
		"probe process.function(\"dl_six\") { printf(\"S %d\\n\", @defined($arg1) ? $arg1 : int_arg(1)) "
		"if (!@defined($a)) printf(\"S no a\\n\") else printf(\"%d\\n\", $a) }");
	CHECK_EQ(tt_count(p->obuf, "S -5\n"), 1);
	CHECK_EQ(tt_count(p->obuf, "S -6\n"), 1);
	CHECK_EQ(tt_count(p->obuf, "S no a\n"), 2);
	free(p);
		/* $return alone is there at a return, DWARF or not */
	p = run(NULL, 2, "probe process.function(\"dl_ret\").return { printf(\"S ret %d\\n\", $return) }");
	CHECK_EQ(tt_count(p->obuf, "S ret -880\n"), 1);
	CHECK_EQ(tt_count(p->obuf, "S ret -877\n"), 1);
	free(p);
}

/* qsort's comparison of two line pointers */
static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of out that start with prefix, sorted, in buf. */
static void sorted_lines(const char *out, const char *prefix, char *buf, size_t sz)
{
	char *v[512];
	unsigned n = 0;
	size_t len = 0;
	char *copy = strdup(out), *save = NULL;

	for (char *l = strtok_r(copy, "\n", &save); l && n < 512; l = strtok_r(NULL, "\n", &save))
		if (!strncmp(l, prefix, strlen(prefix)))
			v[n++] = l;
	qsort(v, n, sizeof(*v), cmp_lines);
	buf[0] = 0;
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sz - len, "%s\n", v[i]);
	free(copy);
}

/* A real program without DWARF, bash: its arithmetic's results as
 * itos() gets them (long_arg(1)) and evalexp() returns them
 * (returnval()), and the expressions evalexp() is given
 * (user_string(pointer_arg(1)), copied at the hit), against bpftrace's
 * arg0, retval and str(arg0) on the same workload, and against what bash
 * itself printed. */
TEST_TIMEOUT(script_dwarfless_bash_matches_bpftrace, 120)
{
	char dir[] = "/tmp/djp-dwarfless-XXXXXX", sh[256], djp_lines[16384], bt_lines[16384], prog[16384];
	char *v[64];
	struct tproc *p;
	FILE *f;
	int st;

	if (geteuid() != 0)
		SKIP("needs root, for bpftrace");
	CHECK(mkdtemp(dir));
	snprintf(sh, sizeof(sh), "%s/work.sh", dir);
	CHECK((f = fopen(sh, "w")));
	fputs("for ((i = 1; i <= 20; i++)); do x=$(( -1000003 * i )); echo \"bash itos $x\"; done\n", f);
	fclose(f);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "/usr/bin/bash %s", sh);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
					      "probe process(\"/usr/bin/bash\").function(\"itos\") { if (long_arg(1) < 0) "
					      "printf(\"itos %d\\n\", long_arg(1)) }\n"
					      "probe process(\"/usr/bin/bash\").function(\"evalexp\").return { if "
					      "(returnval() < 0) printf(\"evalexp %d\\n\", returnval()) }\n"
					      "probe process(\"/usr/bin/bash\").function(\"evalexp\") { "
					      "printf(\"evalexp [%s]\\n\", user_string(pointer_arg(1))) }",
					      NULL },
			     false, -1);
		st = tt_finish(p, 60000);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s / %s", st, p->obuf, p->ebuf);
		sorted_lines(p->obuf, "itos ", djp_lines, sizeof(djp_lines));
		sorted_lines(p->obuf, "evalexp ", djp_lines + strlen(djp_lines), sizeof(djp_lines) - strlen(djp_lines));
		sorted_lines(p->obuf, "bash itos ", prog, sizeof(prog));
		free(p);
		p = tt_spawn((char *const[]){ "/usr/bin/bpftrace", "-e",
					      "uprobe:/usr/bin/bash:itos /pid == cpid && (int64)arg0 < 0/ { printf(\"itos "
					      "%lld\\n\", (int64)arg0); }\n"
					      "uretprobe:/usr/bin/bash:evalexp /pid == cpid && (int64)retval < 0/ { "
					      "printf(\"evalexp %lld\\n\", (int64)retval); }\n"
					      /* the probes are on the file: other bashes of the machine fire them too */
					      "uprobe:/usr/bin/bash:evalexp /pid == cpid/ { printf(\"evalexp [%s]\\n\", "
					      "str(arg0)); }",
					      "-c", cmd, NULL },
			     false, -1);
		st = tt_finish(p, 90000);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			djp_test_fail(__FILE__, __LINE__, "bpftrace: status %#x: %s / %s", st, p->obuf, p->ebuf);
		sorted_lines(p->obuf, "itos ", bt_lines, sizeof(bt_lines));
		sorted_lines(p->obuf, "evalexp ", bt_lines + strlen(bt_lines), sizeof(bt_lines) - strlen(bt_lines));
		free(p);
	}
	unlink(sh);
	rmdir(dir);
	if (strcmp(djp_lines, bt_lines))
		djp_test_fail(__FILE__, __LINE__, "djp:\n%s\nbpftrace:\n%s", djp_lines, bt_lines);
	/* and the values are bash's own: each it printed, itos'd */
	{
		unsigned n = 0;
		char *save = NULL;
		for (char *l = strtok_r(prog, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save))
			v[n++] = l + 5; /* "itos -1000003" */
		CHECK_EQ(n, 20);
		qsort(v, n, sizeof(*v), cmp_lines);
		for (unsigned i = 0; i < n; i++) {
			char want[64];
			snprintf(want, sizeof(want), "%s\n", v[i]);
			if (!strstr(djp_lines, want))
				djp_test_fail(__FILE__, __LINE__, "bash printed \"%s\", djp's itos() did not see it:\n%s",
					      v[i], djp_lines);
		}
	}
}
