/* Return probes from the tool (`djp trace func:NAME%return`), on programs
 * with nothing of djprobe: the return values add up to what the program
 * prints; C++ exceptions thrown through diverted frames still find their
 * catch and run every destructor (libgcc's unwinder reads the real return
 * addresses), and the frame that catches is still counted on its return;
 * and python3 with the return of every function it exports probed. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

/* Sum of the values of the lines " func:NAME%return ARGS return=N" */
static long long return_sum(const char *out, const char *name)
{
	char pat[256];
	long long sum = 0;
	const char *s = out, *r, *eol;
	snprintf(pat, sizeof(pat), " func:%s%%return ", name);
	while ((s = strstr(s, pat))) {
		s += strlen(pat);
		eol = strchr(s, '\n');
		if ((r = strstr(s, "return=")) && (!eol || r < eol))
			sum += (long long)strtoull(r + 7, NULL, 0);
	}
	return sum;
}

TEST_TIMEOUT(trace_return_values_add_up_to_the_programs_sum, 60)
{
	char cmd[4096], out[] = "/tmp/djp-test-returns-XXXXXX";
	unsigned long long ev, lost;
	long long printed;
	const char *sum;
	struct tproc *p;
	char *events;
	int st, fd;

	/* the events in a file of their own: the program's line and the
	 * tool's would share a pipe, and one could land inside the other */
	CHECK((fd = mkstemp(out)) >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s 1000", tt_func_target());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-o", out, "-c", cmd, "func:ft_work%return",
				     "func:ft_other%return", "func:ft_work", NULL },
		     false, -1);
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(tt_summary_row(p->ebuf, "func:ft_work%return", &ev, &lost) && ev == 1000 && !lost);
	CHECK(tt_summary_row(p->ebuf, "func:ft_other%return", &ev, &lost) && ev == 500 && !lost);
	CHECK(tt_summary_row(p->ebuf, "func:ft_work", &ev, &lost) && ev == 1000 && !lost);
	CHECK((sum = strstr(p->obuf, "sum ")) != NULL);
	printed = atoll(sum + 4);
	events = tt_read_file(out);
	unlink(out);
	CHECK_EQ(return_sum(events, "ft_work") + return_sum(events, "ft_other"), printed);
	free(events);
	free(p);
}

TEST_TIMEOUT(trace_return_probes_through_cxx_exceptions, 60)
{
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-o", "/dev/null", "-c",
						    (char *)tt_cxx(false), "func:_Z8cxx_deep*%return",
						    "func:_Z11cxx_catches*%return", "func:_Z8cxx_deeplb", NULL },
				   false, -1);
	unsigned long long ev, lost;
	int st;

	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "deep 200 10\n");
	/* each round: 11 frames unwound (each destructor run) and 11 that
	 * return */
	CHECK(tt_wait_out(p, "deep 200 caught 200 dtors 4400 sum 2000", 20000));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(tt_summary_row(p->ebuf, "func:_Z8cxx_deeplb", &ev, &lost) && ev == 200 * 22);
	CHECK(tt_summary_row(p->ebuf, "func:_Z8cxx_deeplb%return", &ev, &lost) && ev == 200 * 11);
	/* the frame that caught, diverted again by the catch */
	CHECK(tt_summary_row(p->ebuf, "func:_Z11cxx_catchesl%return", &ev, &lost) && ev == 200);
	free(p);
}

/* @entry of an expression the script computes (a call in it), as stap
 * evaluates it: at the call's entry, kept for the call's own return.  In
 * cxx_deep's recursion, each return takes the value of its own entry
 * ($d there; the frames an exception unwinds never return, and their
 * values are never taken); and the latency idiom, @entry(gettimeofday_ns()),
 * is never later than the return's clock. */
TEST_TIMEOUT(script_entry_of_any_expression_through_recursion, 60)
{
	struct tproc *p = tt_spawn(
		(char *const[]){ (char *)tt_djp(), "-c", (char *)tt_cxx(false), "-e",
				 "global n, bad, late\n"
				 "probe process.function(\"_Z8cxx_deep*\").return { n++;"
				 " if (@entry($d + tid() * 0) != $d || @entry(sprintf(\"d%d\", $d)) != sprintf(\"d%d\", $d)) bad++;"
				 " if (gettimeofday_ns() < @entry(gettimeofday_ns())) late++ }\n"
				 "probe end { printf(\"n=%d bad=%d late=%d\\n\", n, bad, late) }",
				 NULL },
		false, -1);
	int st;

	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "deep 50 10\n");
	CHECK(tt_wait_out(p, "deep 50 caught 50", 20000));
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* 11 frames that return each round */
	if (!strstr(p->obuf, "n=550 bad=0 late=0\n"))
		djp_test_fail(__FILE__, __LINE__, "%s / %s", p->obuf, p->ebuf);
	free(p);
}

/* Every "  func:NAME  EVENTS  LOST" row of a summary, with NAME's
 * %return row: how many functions returned as often as they were entered
 * (*equal), and the totals. */
static void entries_and_returns(const char *summary, int *functions, int *equal, unsigned long long *in,
				unsigned long long *out)
{
	const char *s = summary;
	*functions = *equal = 0;
	*in = *out = 0;
	while ((s = strstr(s, "\n  func:"))) {
		char name[512];
		unsigned long long e, elost, r, rlost;
		s += 3;
		if (sscanf(s, "%500s %llu %llu", name, &e, &elost) != 3 || strstr(name, "%return"))
			continue;
		strcat(name, "%return");
		if (!tt_summary_row(summary, name, &r, &rlost))
			r = rlost = 0;
		/* hits, recorded or lost (a full ring: with the program's
		 * DWARF, python3.11-dbg's, every event carries arguments) */
		e += elost;
		r += rlost;
		(*functions)++;
		*equal += e == r;
		*in += e;
		*out += r;
	}
}

TEST_TIMEOUT(trace_python3_with_every_function_return_probed, 180)
{
	static const char script[] = "import threading, json\n"
				     "def work(n):\n"
				     "    s = 0\n"
				     "    for i in range(n):\n"
				     "        try:\n"
				     "            s += json.loads(json.dumps({'a': i}))['a']\n"
				     "            if i % 7 == 0: raise ValueError(i)\n"
				     "        except ValueError:\n"
				     "            s -= 1\n"
				     "    return s\n"
				     "ts = [threading.Thread(target=work, args=(500,)) for _ in range(8)]\n"
				     "[t.start() for t in ts]; [t.join() for t in ts]\n"
				     "print('result', work(1000))\n";
	char py[4096], cmd[8192];
	unsigned long long in, out, ev, lost;
	int functions, equal, st;
	struct tproc *p;

	if (!realpath("/usr/bin/python3", py))
		djp_test_fail(__FILE__, __LINE__, "no /usr/bin/python3: make check installs python3");
	snprintf(cmd, sizeof(cmd), "%s -c \"%s\"", py, script);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-o", "/dev/null", "--buffer-size", "16777216", "-c", cmd, "func:*",
				     "func:*%return",
				     NULL },
		     false, -1);
	st = tt_finish(p, 170000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* what the program computes without probes: sum(i) - ceil(n/7) */
	CHECK(strstr(p->obuf, "result 499357") != NULL);
	entries_and_returns(p->ebuf, &functions, &equal, &in, &out);
	/* returns come for every call but those still running at exit (main
	 * and its callers, the threads' start functions) */
	CHECK(functions > 100);
	if (!(out <= in && out >= in - in / 1000))
		djp_test_fail(__FILE__, __LINE__, "%llu entries, %llu returns: %.3000s", in, out, p->ebuf);
	CHECK(equal >= functions - 20);
	CHECK(tt_summary_row(p->ebuf, "func:PyList_Append%return", &ev, &lost) && ev > 1000);
	free(p);
}

/* Scripts: .function("GLOB").return with $return, @entry, pp() and
 * probefunc(); the return values add up to the program's sum. */
TEST_TIMEOUT(script_function_return_probes, 60)
{
	char cmd[4096], want[8400], real[4096];
	const char *sum;
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s 1000", tt_func_target());
	CHECK(realpath(tt_func_target(), real) != NULL);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				     "global s, n, e, x\n"
				     "probe process.function(\"ft_*\").return { s += $return; n++;"
				     " if ($return != @entry($return) || !is_return()) x++;"
				     " if (n == 1) println(pp(), \" \", pn(), \" \", probefunc()) }\n"
				     "probe process.function(\"ft_work\") { e++; if (is_return()) x++ }\n"
				     "probe end { printf(\"n=%d e=%d s=%d x=%d\\n\", n, e, s, x) }",
				     NULL },
		     false, -1);
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK((sum = strstr(p->obuf, "sum ")) != NULL);
	snprintf(want, sizeof(want), "n=1500 e=1000 s=%lld x=0\n", atoll(sum + 4));
	if (!strstr(p->obuf, want))
		djp_test_fail(__FILE__, __LINE__, "no \"%s\" in: %s", want, p->obuf);
	snprintf(want, sizeof(want), "process(\"%s\").function(\"ft_work\").return process.function(\"ft_*\").return ft_work\n",
		 real);
	CHECK(strstr(p->obuf, want) != NULL);
	free(p);
}

/* The return of every function of the C library, in a shell that forks,
 * pipes and execs: the commands run as before.  setjmp's family, vfork and
 * getcontext return twice and are left out; so are the unwinder's entry
 * points, and the engine's own calls into libc are diverted too. */
TEST_TIMEOUT(trace_every_libc_function_return_of_a_shell, 240)
{
	int st;
	struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-o", "/dev/null", "-c",
						    "sh -c 'echo one; echo two | cat; echo done'", "func:*%return@libc.so*",
						    NULL },
				   false, -1);
	st = tt_finish(p, 220000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "one\ntwo\ndone\n") != NULL);
	CHECK(strstr(p->ebuf, "func:malloc%return") != NULL);
	free(p);
}

/* A return probe of a function that returns twice is refused, by name. */
TEST_TIMEOUT(trace_return_probe_of_setjmp_is_refused, 60)
{
	int st;
	char cmd[4096];
	struct tproc *p;
	snprintf(cmd, sizeof(cmd), "%s 3", tt_func_target());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:_setjmp%return@libc.so*", NULL }, false,
		     -1);
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	CHECK(strstr(p->ebuf, "returning twice") != NULL);
	free(p);
}
