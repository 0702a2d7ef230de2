/* Instruction probes from the tool: `djp trace func:NAME` and scripts'
 * process.function(), on a program with no marker and nothing of djprobe,
 * launched and attached to; their libc's functions; errors that leave the
 * target alone. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lib/func_symbols.h"
#include "test_trace_util.h"

/* `djp ARGS` to its end; its stdout and stderr in p. */
static struct tproc *djp_run(char *const argv[], int *st)
{
	struct tproc *p = tt_spawn(argv, false, -1);
	*st = tt_finish(p, 30000);
	return p;
}

TEST_TIMEOUT(trace_func_points_count_exactly, 60)
{
	char cmd[4096];
	int st;
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "%s 1000", tt_func_target());
	p = djp_run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:ft_work", NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(tt_count(p->obuf, " func:ft_work i="), 1000);
	free(p);
	/* a glob, and libc's getpid through the object's file name */
	p = djp_run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:ft_*", "func:getpid@libc.so*", NULL },
		    &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(tt_count(p->obuf, " func:ft_work i="), 1000);
	CHECK_EQ(tt_count(p->obuf, " func:ft_other i="), 500);
	CHECK(tt_count(p->obuf, " func:getpid\n") >= 1000); /* and the loader's, the tool's own */
	free(p);
}

/* Counts the lines of `out` that are events ("TIME PID TID " and then
 * `event` and one word) and the command's own (`other` and one word,
 * besides its last, "sum N"); returns how many lines are none of these,
 * printing the first few. */
static int torn_lines(const char *out, const char *event, const char *other, int *nev, int *nother)
{
	int torn = 0;
	*nev = *nother = 0;
	for (const char *l = out; *l;) {
		const char *e = strchr(l, '\n');
		char line[256], rest[256];
		snprintf(line, sizeof(line), "%.*s", (int)(e ? e - l : (long)strlen(l)), l);
		l = e ? e + 1 : l + strlen(l);
		if (!strncmp(line, other, strlen(other)) && !strchr(line + strlen(other), ' '))
			++*nother;
		else if (!strncmp(line, "sum ", 4) && !strchr(line + 4, ' '))
			continue;
		else if (sscanf(line, "%*s %*s %*s %255[^\n]", rest) == 1 && !strncmp(rest, event, strlen(event)) &&
			 !strchr(rest + strlen(event), ' '))
			++*nev;
		else if (torn++ < 3)
			printf("# not an event nor the command's: \"%s\"\n", line);
	}
	return torn;
}

/* The command shares djp's output and writes to it as fast as djp writes
 * the events: every line stays whole (tools/djp/line_out.c). */
TEST_TIMEOUT(trace_lines_stay_whole_beside_the_commands_output, 60)
{
	char cmd[4096];
	int st, nev, ntick;
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "%s -p 8000", tt_func_target());
	p = djp_run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:ft_work", NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(torn_lines(p->obuf, "func:ft_work i=", "tick ", &nev, &ntick), 0);
	CHECK_EQ(nev, 8000);
	CHECK_EQ(ntick, 8000);
	free(p);
	/* a script's printf */
	p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				     "probe process.function(\"ft_work\") { printf(\"0 0 0 ev %d\\n\", $i) }", NULL },
		    &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(torn_lines(p->obuf, "ev ", "tick ", &nev, &ntick), 0);
	CHECK_EQ(nev, 8000);
	CHECK_EQ(ntick, 8000);
	free(p);
}

TEST_TIMEOUT(trace_func_point_errors_say_what_and_leave_the_target, 60)
{
	static const struct {
		const char *pattern, *says;
	} bad[] = {
		{ "func:ft_no_such_function", "matches no function" },
		{ "func:ft_work+1", "not an instruction boundary" },
		{ "func:ft_no_such_function%return", "matches no function" },
		{ "func:_start%return", "not entered by a call" },
		{ "func:ft_work+x", "not a point" },
	};
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "%s 10", tt_func_target());
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int st;
		struct tproc *p = djp_run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, (char *)bad[i].pattern, NULL },
					  &st);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
		if (!strstr(p->ebuf, bad[i].says))
			djp_test_fail(__FILE__, __LINE__, "%s: stderr \"%s\" does not say \"%s\"", bad[i].pattern,
				      p->ebuf, bad[i].says);
		CHECK(strstr(p->ebuf, bad[i].pattern) != NULL);
		free(p);
	}
}

/* func_target.c as its DWARF names it (the path it was compiled from),
 * and the line of its first line holding `text`. */
static const char *ft_source(void)
{
	static char real[4096];
	if (!real[0] && !realpath(djp_test_path("../../selftests/trace_progs/func_target.c"), real))
		djp_test_fail(__FILE__, __LINE__, "func_target.c: %s", strerror(errno));
	return real;
}

static int ft_line(const char *text)
{
	char line[256];
	int at = 0;
	FILE *src = fopen(ft_source(), "r");
	if (!src)
		return -1;
	while (fgets(line, sizeof(line), src)) {
		at++;
		if (strstr(line, text)) {
			fclose(src);
			return at;
		}
	}
	fclose(src);
	return -1;
}

/* stap's function("GLOB@FILE:LINE"): the functions declared in FILE at
 * LINE or whose code spans it, in scripts and in djp trace's spelling;
 * -l lists them with the qualifier, which reads back as the same point. */
TEST_TIMEOUT(script_function_source_qualifier, 60)
{
	char cmd[4096], script[1024], real[4096], point[8400];
	int st, other = ft_line("long ft_other(long i)"), work = ft_line("long ft_work(long i)");
	struct tproc *p;

	CHECK(other > 0 && work > 0);
	snprintf(cmd, sizeof(cmd), "%s 1000", tt_func_target());
	/* a line inside ft_other's body names ft_other alone; its
	 * declaration's line does too, with a range and its return */
	snprintf(script, sizeof(script),
		 "global n, m, r; probe process.function(\"ft_*@func_target.c:%d\") { n[ppfunc()]++ } "
		 "probe process.function(\"*@trace_progs/func_target.c:%d-%d\") { m[ppfunc()]++ } "
		 "probe process.function(\"ft_*@func_*.c:%d\").return { r += $return } "
		 "probe end { foreach (f in n) printf(\"n %%s %%d\\n\", f, n[f]); "
		 "foreach (f in m) printf(\"m %%s %%d\\n\", f, m[f]); printf(\"r=%%d\\n\", r) }",
		 other + 2, work, work, other);
	p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_STR(strstr(p->obuf, "n ") ? strstr(p->obuf, "n ") : p->obuf, "n ft_other 500\nm ft_work 1000\nr=250000\n");
	free(p);
	/* a file no function is declared in: an error naming the point */
	p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				     "probe process.function(\"ft_*@other_file.c\") { }", NULL },
		    &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	CHECK(strstr(p->ebuf, "process.function(\"ft_*@other_file.c\"): no function matches") != NULL);
	free(p);
	/* djp trace: GLOB@FILE:LINE@ in the main program */
	snprintf(cmd, sizeof(cmd), "%s 6", tt_func_target());
	snprintf(script, sizeof(script), "func:ft_*@func_target.c:%d@", other);
	p = djp_run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, script, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, " func:ft_other i=5\n") != NULL);
	CHECK(strstr(p->obuf, "func:ft_work") == NULL);
	free(p);
	/* -l prints the qualifier; fed back, it names the same function */
	CHECK(realpath(tt_func_target(), real) != NULL);
	snprintf(point, sizeof(point), "process(\"%s\").function(\"ft_work@%s:%d\")", real, ft_source(), work);
	p = djp_run((char *const[]){ (char *)tt_djp(), "-l", point, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	strcat(point, "\n");
	CHECK_STR(p->obuf, point);
	free(p);
}

/* Inside a function a point's site also carries the variables in scope
 * there: $NAME reads a local as it reads a parameter, and $$parms,
 * $$locals, $$vars and (at a return) $$return say them as stap does. */
TEST_TIMEOUT(script_locals_vars_and_return, 60)
{
	char cmd[4096], script[1024];
	int st, line = ft_line("ft_sink += r;");
	struct tproc *p;

	CHECK(line > 0);
	snprintf(cmd, sizeof(cmd), "%s 40", tt_func_target());
	snprintf(script, sizeof(script),
		 "global bad, n; probe process.statement(\"ft_work@func_target.c:%d\") { n++; "
		 "if ($r != $i * 7 + 3) bad++; "
		 "if ($i == 5) printf(\"[%%s] [%%s] [%%s]\\n\", $$parms, $$locals, $$vars) } "
		 "probe process.function(\"ft_work\").return { if ($i == 5) printf(\"[%%s] [%%s] [%%s]\\n\", "
		 "$$return, $$parms, $$locals) } "
		 "probe end { printf(\"n=%%d bad=%%d\\n\", n, bad) }",
		 line);
	p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "[i=0x5] [r=0x26] [i=0x5 r=0x26]\n") != NULL);
	CHECK(strstr(p->obuf, "[return=0x26] [i=0x5] []\n") != NULL);
	CHECK(strstr(p->obuf, "n=40 bad=0\n") != NULL);
	free(p);
	/* djp trace prints them too */
	snprintf(cmd, sizeof(cmd), "%s 3", tt_func_target());
	snprintf(script, sizeof(script), "line:func_target.c:%d", line);
	p = djp_run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, script, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, " i=2 r=17\n") != NULL); /* long: signed decimal */
	free(p);
}

TEST_TIMEOUT(script_function_and_statement_points, 60)
{
	char cmd[4096];
	int st;
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "%s 1000", tt_func_target());
	p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				     "global n, m; probe process.function(\"ft_work\") { n++ } "
				     "probe process.function(\"ft_oth*\").call { m++; if (m == 1) println(pp(), \" \", pn(), "
				     "\" \", probefunc(), \" \", ppfunc()) } "
				     "probe end { printf(\"n=%d m=%d\\n\", n, m) }",
				     NULL },
		    &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "n=1000 m=500\n") != NULL);
	CHECK(strstr(p->obuf, ".function(\"ft_other\") process.function(\"ft_oth*\").call ft_other ft_other\n") != NULL);
	free(p);
	/* -l lists the functions a point names, from the object's symbols */
	{
		char point[8400], real[4096];
		CHECK(realpath(tt_func_target(), real) != NULL);
		snprintf(point, sizeof(point), "process(\"%s\").function(\"ft_*\")", real);
		p = djp_run((char *const[]){ (char *)tt_djp(), "-l", point, NULL }, &st);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		snprintf(point, sizeof(point),
			 "process(\"%s\").function(\"ft_other@%s:%d\")\nprocess(\"%s\").function(\"ft_work@%s:%d\")\n",
			 real, ft_source(), ft_line("long ft_other(long i)"), real, ft_source(), ft_line("long ft_work(long i)"));
		CHECK_STR(p->obuf, point);
		free(p);
	}
	/* a line of the target's body, by its line tables: ft_work's first
	 * statement, found in the source */
	{
		char script[512];
		int no = tt_source_line("func_target.c", "long r = i * 7 + 3;");
		snprintf(script, sizeof(script),
			 "global n; probe process.statement(\"*@func_target.c:%d\") { n++ } "
			 "probe end { printf(\"n=%%d\\n\", n) }",
			 no);
		p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, &st);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "n=1000\n") != NULL);
	free(p);
}



/* A running program that never heard of djprobe: the agent is injected,
 * the function counted, and after the tool leaves, its byte is back. */
TEST_TIMEOUT(trace_x_func_point_in_a_running_program, 90)
{
	struct tproc *t, *d;
	char pid[32];
	uintptr_t a;
	int was, st;

	t = tt_spawn((char *const[]){ (char *)tt_func_target(), "-w", "1000", NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	a = tt_func_addr(t->pid, tt_func_target(), "ft_work");
	was = tt_byte_at(t->pid, a);
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "func:ft_work", NULL }, false, -1);
	/* armed: a jump over its first instructions (the program waits in
	 * a read, nowhere near them) */
	tt_wait_byte(t->pid, a, 0xe9, 10000); /* (an int3 while it is placed) */
	tt_send(t, "go\n");
	CHECK(tt_wait_out(t, "sum ", 10000));
	/* every hit recorded before the tool is told to stop */
	for (int i = 0; i < 500 && tt_count(d->obuf, " func:ft_work i=") < 1000; i++)
		tt_wait_out(d, "\n\n", 20); /* reads what there is */
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(tt_count(d->obuf, " func:ft_work i="), 1000);
	tt_wait_byte(t->pid, a, was, 5000);
	tt_end(t);
}


/*
 * SDT probes are 1-byte nops: an int3 a hit, until widened into a jump
 * over the nop and what follows it.  `probe` in `prog` (driven by `cmd`,
 * which makes it fire `n` times and print `done`) is armed by djp trace -x,
 * its site must hold a jump, every hit must be counted, and after the tool
 * leaves the nop is back.
 */
static void sdt_jump(const char *prog, const char *probe, const char *cmd, const char *done, long n)
{
	struct tproc *t, *d;
	char pid[32], want[64];
	uintptr_t a;
	int st;

	t = tt_spawn((char *const[]){ (char *)prog, NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	a = tt_site_addr(t->pid, probe);
	CHECK_EQ(tt_byte_at(t->pid, a), 0x90);
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, (char *)probe, NULL }, false, -1);
	tt_wait_byte(t->pid, a, 0xe9, 10000); /* (an int3 while it is placed) */
	tt_send(t, cmd);
	CHECK(tt_wait_out(t, done, 20000));
	snprintf(want, sizeof(want), " %s", probe);
	for (int i = 0; i < 500 && tt_count(d->obuf, want) < n; i++)
		tt_wait_out(d, "\n\n", 20);
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(tt_count(d->obuf, want), n);
	tt_wait_byte(t->pid, a, 0x90, 5000);
	tt_end(t);
}

TEST_TIMEOUT(sdt_nop_becomes_a_jump, 90)
{
	sdt_jump(tt_sdt_target(), "sdt_target:strs", "strings 1000\n", "strings done", 1000);
}

/* libstdc++'s own throw probe, in a library nobody here built. */
TEST_TIMEOUT(sdt_nop_of_libstdcxx_becomes_a_jump, 90)
{
	sdt_jump(tt_cxx(true), "libstdcxx:throw", "throw 1000\n", "thrown", 1000);
}

/* Every function of the C library, in a shell that forks and execs: the
 * commands run as before (the engine's own calls into libc are probed
 * too). */
TEST_TIMEOUT(trace_every_libc_function_of_a_shell, 120)
{
	int st;
	/* each process of the shell arms the 3,000 functions again: half a
	 * second each, several times that on a loaded machine */
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-o", "/dev/null", "-c",
						    "sh -c 'echo one; echo two | cat; echo done'", "func:*@libc.so*", NULL },
				   false, -1);
	st = tt_finish(p, 110000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "one\ntwo\ndone\n") != NULL);
	CHECK(strstr(p->ebuf, "func:malloc") != NULL);
	free(p);
}

/* djp list --json says how each site is armed, and why not a jump: here
 * libstdc++'s throw probe (a jump, as armed above) and rethrow's, whose
 * function jumps back into the instructions after its nop (the kernel's
 * uprobe serves it, where the tool may use one). */
TEST_TIMEOUT(list_says_which_sdt_sites_become_jumps, 60)
{
	char lib[4096] = "";
	FILE *f = popen("ldconfig -p | awk '/libstdc\\+\\+\\.so\\.6 /{print $NF; exit}'", "r");
	int st;
	struct tproc *p;

	CHECK(f && fgets(lib, sizeof(lib), f));
	pclose(f);
	lib[strcspn(lib, "\n")] = 0;
	p = djp_run((char *const[]){ (char *)tt_djp(), "list", "--json", lib, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	{
		char *throw_ = strstr(p->obuf, "{\"name\":\"throw\""), *rethrow = strstr(p->obuf, "{\"name\":\"rethrow\"");
		CHECK(throw_ && rethrow);
		*strchr(throw_, '\n') = 0;
		*strchr(rethrow, '\n') = 0;
		CHECK(strstr(throw_, "\"arming\":\"jump\"") != NULL);
		/* no jump: the kernel's uprobe where the tool may use it (root) */
		if (geteuid() == 0)
			CHECK(strstr(rethrow, "\"arming\":\"uprobe\",\"uprobe_why\":\"") != NULL);
		else
			CHECK(strstr(rethrow, "\"arming\":\"int3\",\"int3_why\":\"") != NULL);
	}
	free(p);
}

/* PostgreSQL's probes are in static functions of a stripped binary: the
 * call-frame information bounds them, and its transaction probes become
 * jumps (those the postgres tests count against bpftrace). */
TEST_TIMEOUT(list_says_postgres_transaction_probes_become_jumps, 60)
{
	static const char pg[] = "/usr/lib/postgresql/15/bin/postgres";
	int st;
	struct tproc *p;
	char *line;

	if (access(pg, X_OK))
		djp_test_fail(__FILE__, __LINE__, "no %s: make check installs postgresql-15", pg);
	p = djp_run((char *const[]){ (char *)tt_djp(), "list", "--json", (char *)pg, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK((line = strstr(p->obuf, "{\"name\":\"transaction__start\"")) != NULL);
	*strchr(line, '\n') = 0;
	CHECK(strstr(line, "\"arming\":\"jump\"") != NULL);
	free(p);
}

/* usymname(), usymdata(), umodname() and uaddr(): the probe's own address
 * named from the target's symbols (the size as nm says it), and an
 * address in no object. */
TEST_TIMEOUT(script_usymname_usymdata_umodname, 60)
{
	char cmd[4096], real[4096], nm[4200], want[8400], line[512];
	unsigned long long size = 0;
	struct tproc *p;
	FILE *f;
	int st;

	CHECK(realpath(tt_func_target(), real) != NULL);
	snprintf(nm, sizeof(nm), "nm -S --defined-only '%s'", real);
	CHECK((f = popen(nm, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " ft_work\n"))
			CHECK(sscanf(line, "%*x %llx", &size) == 1);
	pclose(f);
	CHECK(size > 3);
	snprintf(cmd, sizeof(cmd), "%s 3", tt_func_target());
	p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				     "probe process.function(\"ft_work\") { println(usymname(uaddr()), \" \", "
				     "usymdata(uaddr() + 3), \" \", umodname(uaddr()), \" \", usymname(8), \" \", umodname(8)) }",
				     NULL },
		    &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(want, sizeof(want), "ft_work ft_work+0x3/%#llx [%s] %s 0x8 <unknown>\n", size, real, real);
	CHECK_EQ(tt_count(p->obuf, want), 3);
	free(p);
}

/* The functions' parameters from DWARF (lib/func_params.c): in the events
 * of `djp trace`, as a script's $NAME, $$parms and @entry, at a statement,
 * and in -L.  The values are what the target's source says it passes
 * (ft_work(i) for i = 0.., returning i * 7 + 3). */
TEST_TIMEOUT(func_points_carry_the_parameters, 60)
{
	char cmd[4096], real[4096], script[4700], point[8400];
	int st, no;
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "%s 3", tt_func_target());
	p = djp_run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:ft_work", "func:ft_work%return", NULL },
		    &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (long i = 0; i < 3; i++) {
		char want[128];
		/* long ft_work(long i): signed decimal, as the C type says */
		snprintf(want, sizeof(want), " func:ft_work i=%ld\n", i);
		CHECK_EQ(tt_count(p->obuf, want), 1);
		snprintf(want, sizeof(want), " func:ft_work%%return i=%ld return=%ld\n", i, i * 7 + 3);
		CHECK_EQ(tt_count(p->obuf, want), 1);
	}
	free(p);

	snprintf(cmd, sizeof(cmd), "%s 100", tt_func_target());
	p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				     "global s, bad, n\n"
				     "probe process.function(\"ft_work\") { s += $i; if (n++ == 5) println($$parms) }\n"
				     "probe process.function(\"ft_work\").return {"
				     " if ($return != $i * 7 + 3 || @entry($i) != $i) bad++ }\n"
				     "probe end { printf(\"s=%d bad=%d\\n\", s, bad) }",
				     NULL },
		    &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "i=0x5\n") != NULL);
	CHECK(strstr(p->obuf, "s=4950 bad=0\n") != NULL);
	free(p);

	/* at a statement: ft_work's store of r, where i is still live */
	no = tt_source_line("func_target.c", "ft_sink += r;");
	snprintf(cmd, sizeof(cmd), "%s 4", tt_func_target());
	snprintf(script, sizeof(script), "probe process.statement(\"ft_work@func_target.c:%d\") { println(\"at \", $i) }",
		 no);
	p = djp_run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "at 0\nat 1\nat 2\nat 3\n") != NULL);
	free(p);

	/* -L: each function with the context variables it has */
	CHECK(realpath(tt_func_target(), real) != NULL);
	snprintf(point, sizeof(point), "process(\"%s\").function(\"ft_*\").return", real);
	p = djp_run((char *const[]){ (char *)tt_djp(), "-L", point, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(point, sizeof(point),
		 "process(\"%s\").function(\"ft_other@%s:%d\").return $i:long int $return:long\n"
		 "process(\"%s\").function(\"ft_work@%s:%d\").return $i:long int $return:long\n",
		 real, ft_source(), ft_line("long ft_other(long i)"), real, ft_source(), ft_line("long ft_work(long i)"));
	CHECK_STR(p->obuf, point);
	free(p);

	/* -L of a statement: the line, with the parameter and the local in
	 * scope there and their C types; -l without them */
	snprintf(script, sizeof(script), "process(\"%s\").statement(\"ft_work@func_target.c:%d\")", real, no);
	p = djp_run((char *const[]){ (char *)tt_djp(), "-L", script, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(point, sizeof(point), "process(\"%s\").statement(\"ft_work@%s:%d\") $i:long int $r:long int\n", real,
		 ft_source(), no);
	CHECK_STR(p->obuf, point);
	free(p);
	p = djp_run((char *const[]){ (char *)tt_djp(), "-l", script, NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(point, sizeof(point), "process(\"%s\").statement(\"ft_work@%s:%d\")\n", real, ft_source(), no);
	CHECK_STR(p->obuf, point);
	free(p);
}

/* A function whose first instruction is an SDT probe's nop: the function
 * point gets that site (one site an address), and the script's function
 * probe is bound to its events all the same. */
TEST_TIMEOUT(script_function_point_on_an_sdt_site, 60)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", (char *)tt_sdt_target(), "-e",
						    "global n; probe process.function(\"sdt_first\") { n++ } "
						    "probe end { printf(\"n=%d\\n\", n) }",
						    NULL },
				   false, -1);
	int st;
	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "first 250\n");
	CHECK(tt_wait_out(p, "first done", 10000));
	close(p->in); /* the target exits; the script reads every event, then ends */
	p->in = -1;
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!strstr(p->obuf, "n=250\n"))
		djp_test_fail(__FILE__, __LINE__, "not n=250: %s %s", p->obuf, p->ebuf);
	free(p);
}

/* ^C as stap has it: the probes stop, every hit recorded before is counted,
 * then the end probe runs.  The script reads the rings behind the target;
 * ^C the moment the target has made its calls must still count them all. */
TEST_TIMEOUT(script_ctrl_c_counts_every_hit_before_it, 60)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_func_target(), "-w", "100000", NULL }, false, -1);

	CHECK(tt_wait_out(t, "ready", 10000));
	/* rings of 16 MB (-b): the 100,000 events fit whatever the tool's
	 * pace, so that a count short of them is the ^C's, not a full ring's
	 * (a 1 MiB ring lost 3,205 of them once in six runs) */
	CHECK_EQ(tt_script_count_calls(t, "ft_work", "-b", 0xe9, 100000), 100000);
	tt_end(t);
}
