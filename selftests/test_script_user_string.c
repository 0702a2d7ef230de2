/*
 * Strings of the target (issue: SDT arguments were only hex): a script's
 * user_string($argN) has the string copied in the target when the probe
 * fires (kernel/safe_copy.c, lib/ring.c), and `djp trace PATTERN=FORMAT`
 * prints an SDT probe's arguments with a format whose %s are copied the
 * same way.  Every kind of bad address: the script gets stap's error (or
 * its own message), the target carries on untouched.  Under -c (the
 * preloaded agent: the in-process copy) and -x into a program that never
 * heard of djprobe (the injected agent: process_vm_readv), and on python3,
 * whose function__entry hands out its file and function names.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

#define QUERY "SELECT abalance FROM pgbench_accounts WHERE aid = 42;"

/* Run djp ARGS with sdt_target as its -c command (argv has a slot for
 * it), fire the probe n times, wait for `last` in the output (a computed
 * address is read while the target still lives), end its input: the
 * finished tool. */
static struct tproc *sdt_under(char **argv, long n, int want_status, const char *last)
{
	struct tproc *p;
	char line[64];
	int st;
	for (int i = 0; argv[i]; i++)
		if (!strcmp(argv[i], "SDT_TARGET"))
			argv[i] = (char *)tt_sdt_target();
	p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(p, "ready ", 10000));
	snprintf(line, sizeof(line), "strings %ld\n", n);
	tt_send(p, line);
	CHECK(tt_wait_out(p, "strings done", 10000));
	if (last)
		CHECK(tt_wait_out(p, last, 10000));
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != want_status)
		djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s / %s", st, p->obuf, p->ebuf);
	return p;
}

TEST_TIMEOUT(script_user_string_of_sdt_arguments, 60)
{
	struct tproc *p = sdt_under(
		(char *[]){ (char *)tt_djp(), "-c", "SDT_TARGET", "-e",
			    "global n\n"
			    "probe process.mark(\"strs\") {\n"
			    "  printf(\"[%s][%s][%s][%s][%d]\\n\", user_string($arg1), user_string_n($arg1, 6),\n"
			    "         user_string_n_quoted($arg1, 6), user_string($arg2, \"fault!\"), $arg3)\n"
			    "  printf(\"<%s><%s><%s>\\n\", user_string_quoted($arg2), user_string_quoted(0),\n"
			    "         user_string_quoted($arg1 + 7))\n"
			    "  if (++n == 3) println(\"three\")\n"
			    "}",
			    NULL },
		3, 0, "three");
	CHECK_EQ(tt_count(p->obuf, "[" QUERY "][SELECT][\"SELECT\"...][fault!][53]\n"), 3);
	/* the computed address is read from outside, the fault is the address */
	CHECK_EQ(tt_count(p->obuf, "<0x1><NULL><\"abalance FROM pgbench_accounts WHERE aid = 42;\">\n"), 3);
	free(p);
}

/* user_string of a bad address without a message of its own: stap's error,
 * the script ends with status 1, the target carries on to its end. */
TEST_TIMEOUT(script_user_string_fault_is_an_error_not_a_crash, 60)
{
	struct tproc *p = sdt_under((char *[]){ (char *)tt_djp(), "-c", "SDT_TARGET", "-e",
						"probe process.mark(\"strs\") { println(user_string($arg2)) }", NULL },
				    2, 1, NULL);
	if (!strstr(p->ebuf, "ERROR: user string copy fault -14 at 0x1 near identifier 'user_string'"))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	free(p);
}

/* trace_target that ticks no more: it ends at the end of its input. */
static const char *tt_target_ticks0(void)
{
	static char cmd[4200];
	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	return cmd;
}

/* A marker's %p arguments (never read by its format) as strings, through
 * every kind of bad address the target can make. */
TEST_TIMEOUT(script_user_string_every_bad_address, 60)
{
	struct tproc *p = tt_spawn(
		(char *const[]){ (char *)tt_djp(), "-c", (char *)tt_target_ticks0(), "-e",
				 "probe process.mark(\"tt_strs\") {\n"
				 "  printf(\"%s|%s|%s|%s|%s|%s\\n\", user_string($good), user_string($null, \"N\"),\n"
				 "         user_string($bad, \"B\"), user_string($unmapped, \"U\"), user_string($none, \"P\"),\n"
				 "         user_string($cut, \"C\"))\n"
				 "}",
				 NULL },
		false, -1);
	int st;
	CHECK(tt_wait_out(p, "ready ", 10000));
	tt_send(p, "strings 4\n");
	CHECK(tt_wait_out(p, "strings done", 10000));
	tt_send(p, "kinds 1\n"); /* the target lived on */
	CHECK(tt_wait_out(p, "kinds done", 10000));
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	CHECK_EQ(tt_count(p->obuf, "SELECT 1; -- \"quoted\"\n|N|B|U|P|C\n"), 4);
	free(p);
}

TEST_TIMEOUT(trace_pattern_with_a_format_prints_sdt_strings, 60)
{
	struct tproc *p = sdt_under((char *[]){ (char *)tt_djp(), "trace", "-c", "SDT_TARGET",
						"sdt_target:strs=query=%s bad=%s len=%d", NULL },
				    5, 0, NULL);
	CHECK_EQ(tt_count(p->obuf, " sdt_target:strs query=" QUERY " bad=<bad> len=53\n"), 5);
	free(p);
}

TEST(trace_pattern_with_a_bad_format_is_refused)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", (char *)tt_sdt_target(),
						    "strs=q=%Q", NULL },
				   false, -1);
	int st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	CHECK_EQ(tt_lines(p->ebuf), 1);
	CHECK(strstr(p->ebuf, "pattern 'strs': format 'q=%Q'") != NULL);
	free(p);
}

/* -x into python3, which never heard of djprobe: the injected agent copies
 * function__entry's file and function names.  (python 3.11 calls its
 * function probes only while it traces, which its line probe's semaphore
 * turns on: hence the empty line probe, as with bpftrace.) */
TEST_TIMEOUT(inject_python3_function_names, 60)
{
	char py[4096], spid[16];
	struct tproc *t, *p;
	int st;

	if (!realpath("/usr/bin/python3", py))
		djp_test_fail(__FILE__, __LINE__, "no /usr/bin/python3: make check installs python3");
	t = tt_spawn((char *const[]){ py, "-u", "-c",
				      "import sys, os\n"
				      "def djp_probe_me(n): return n + 1\n"
				      "print('ready', os.getpid())\n"
				      "for line in sys.stdin:\n"
				      "    n = int(line.split()[1])\n"
				      "    for i in range(n): djp_probe_me(i)\n"
				      "    print('called', n)\n",
				      NULL },
		     false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", spid, "-e",
				      "global n\n"
				      "probe process.provider(\"python\").mark(\"line\") { }\n"
				      "probe process.provider(\"python\").mark(\"function__entry\") {\n"
				      "  if (user_string($arg2) == \"djp_probe_me\") {\n"
				      "    printf(\"%s %s:%d\\n\", user_string($arg2), user_string($arg1), $arg3)\n"
				      "    if (++n == 25) exit()\n"
				      "  }\n"
				      "}",
				      NULL },
		     false, -1);
	/* both probes armed (they connect one after the other), or the
	 * first calls could come before function__entry is */
	for (int i = 0, nsites = 0; tt_sites_changed(t->pid, py, &nsites) < 2; i++) {
		CHECK(i < 1000);
		usleep(10000);
	}
	tt_send(t, "call 25\n");
	CHECK(tt_wait_out(t, "called 25", 10000));
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp: status %#x: %s", st, p->ebuf);
	CHECK_EQ(tt_count(p->obuf, "djp_probe_me <string>:2\n"), 25);
	CHECK(tt_wait_restored(t->pid, py, 2000));
	free(p);
	tt_end(t);
}

/* A script whose -c command is a wrapper without probes (env, runuser, a
 * shell): the program it execs dials in later, so its markers are read
 * from the file that the process("PATH") point names, and the script binds
 * to them before the program exists. */
TEST_TIMEOUT(script_through_a_wrapper_binds_the_named_program, 60)
{
	char cmd[4200], script[4400];
	struct tproc *p;
	snprintf(cmd, sizeof(cmd), "env DJP_TEST_WRAPPED=1 %s", tt_sdt_target());
	snprintf(script, sizeof(script),
		 "global n; probe process(\"%s\").mark(\"strs\") { n++; printf(\"%%s\\n\", user_string($arg1)) }\n"
		 "probe end { printf(\"n=%%d\\n\", n) }",
		 tt_sdt_target());
	p = sdt_under((char *[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, 4, 0, NULL);
	CHECK_EQ(tt_count(p->obuf, QUERY "\n"), 4);
	CHECK(strstr(p->obuf, "n=4\n") != NULL);
	free(p);
}
