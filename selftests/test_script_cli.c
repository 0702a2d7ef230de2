/*
 * stap's command line as people type it: options after the script file
 * (`djp script.stp -c CMD -o FILE ARG`), the script's arguments after
 * those, -s and -b taken, --dump-functions listing the built-ins.  The
 * script-only cases (arguments, the preprocessor, -p1, -p2, -D, -g) are
 * golden cases in selftests/scripts/cli_*.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

TEST_TIMEOUT(script_options_after_the_script_file, 60)
{
	char dir[] = "/tmp/djp-cli-XXXXXX", script[64], out[64], cmd[4200], text[256];
	struct tproc *p;
	FILE *f;
	int st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(script, sizeof(script), "%s/count.stp", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	CHECK((f = fopen(script, "w")) != NULL);
	fputs("global n\nprobe process.mark(\"tt_tick\") { n++ }\n"
	      "probe end { printf(\"%s: %d ticks\\n\", @1, n) }\n",
	      f);
	CHECK(fclose(f) == 0);
	snprintf(cmd, sizeof(cmd), "%s --ticks 5 --tick-us 1000 --no-stdin", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), script, "-c", cmd, "-o", out, "-s", "4", "-b", "label", NULL },
		     false, -1);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
	CHECK((f = fopen(out, "r")) != NULL);
	CHECK(fgets(text, sizeof(text), f) != NULL);
	fclose(f);
	CHECK_STR(text, "label: 5 ticks\n");
	free(p);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

TEST(script_dump_functions)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "--dump-functions", NULL }, false, -1);
	int st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "user_string:string (arg1:long)\n") != NULL);
	CHECK(strstr(p->obuf, "strlen:long (arg1:string)\n") != NULL);
	free(p);
}

/* The process-context tapset functions, on a -c command: its parent is the
 * tool (ppid() == stp_pid(), pexecname() "djp"), its ids are ours, its
 * command line the one given. */
TEST_TIMEOUT(script_process_context_functions, 60)
{
	char cmd[4200], want[128];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --ticks 1 --tick-us 1000 --no-stdin", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				      "probe process.mark(\"tt_tick\") {\n"
				      "  printf(\"%d%d%d %s %d %d %d %s|%s|%s\\n\", ppid() == stp_pid(), target_set_pid(pid()),\n"
				      "         target_set_pid(stp_pid()), pexecname(), uid(), euid(),\n"
				      "         gid(), cmdline_arg(1), cmdline_arg(2), cmdline_str())\n"
				      "}",
				      NULL },
		     false, -1);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s", st, p->ebuf);
	snprintf(want, sizeof(want), "110 djp %d %d %d --ticks|1|%s --ticks 1 --tick-us 1000 --no-stdin\n", (int)getuid(),
		 (int)geteuid(), (int)getgid(), tt_target(false));
	if (!strstr(p->obuf, want))
		djp_test_fail(__FILE__, __LINE__, "got %s, wanted %s", p->obuf, want);
	free(p);
}
