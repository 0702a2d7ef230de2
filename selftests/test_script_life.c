/*
 * process.begin and process.end in scripts, against a target that forks
 * children and children that exec (trace_progs/life_target.c): a begin
 * and an end for every process and every program exec'd, exactly, each
 * process's begin before its events and its end after them, pid(), tid()
 * and execname() those of the process, and process("PATH").begin only
 * for the processes running PATH.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define FORKS 3
#define EXECS 2
#define THREADS 2

static const char script[] =
	"probe process.begin { printf(\"begin %d %d %s %s\\n\", pid(), tid(), execname(), pp()) }\n"
	"probe process.end { printf(\"end %d %d %s %s\\n\", pid(), tid(), execname(), pp()) }\n"
	"probe process(\"life_target_exec\").begin { printf(\"twin %d\\n\", pid()) }\n"
	"probe process(\"life_target\").begin { printf(\"first %d\\n\", pid()) }\n"
	"probe process.mark(\"lt_work\") { printf(\"work %d %d\\n\", pid(), $what) }\n";

/* djp -o OUT -c 'life_target F E T' -e script: the script's output; the
 * target's pid in *main. */
static char *run(const char *text, int *main_pid)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "%s %d %d %d", djp_test_path("trace_progs/life_target"), FORKS, EXECS, THREADS);
	return tt_script_output(cmd, text, main_pid);
}

struct proc {
	int pid;
	int state;   /* 0 before its begin, 1 between, 2 after its end */
	int lives;   /* begins: 1, or 2 with a program exec'd */
	bool twin;   /* runs life_target_exec now */
};

static struct proc *proc_of(struct proc *v, int *n, int pid)
{
	for (int i = 0; i < *n; i++)
		if (v[i].pid == pid)
			return &v[i];
	CHECK(*n < 64);
	v[*n] = (struct proc){ .pid = pid };
	return &v[(*n)++];
}

TEST_TIMEOUT(script_process_begin_and_end_of_forks_and_execs, 120)
{
	int main_pid = 0, n = 0, begins = 0, ends = 0, works = 0, twins = 0, firsts = 0, last_pid = 0;
	struct proc v[64];
	char *out = run(script, &main_pid), *save = NULL;
	bool first_line = true;

	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char what[16], comm[64], pp[64];
		int pid, tid, arg;
		struct proc *p;

		if (sscanf(l, "%15s %d %d %63s %63s", what, &pid, &tid, comm, pp) == 5 &&
		    (!strcmp(what, "begin") || !strcmp(what, "end"))) {
			bool begin = what[0] == 'b';
			p = proc_of(v, &n, pid);
			CHECK_EQ(tid, pid);
			CHECK_STR(pp, begin ? "process.begin" : "process.end");
			/* the name of the program: comm is 15 bytes at most */
			CHECK_STR(comm, begin ? (p->lives ? "life_target_exe" : "life_target")
					      : (p->twin ? "life_target_exe" : "life_target"));
			if (begin) {
				CHECK(p->state != 1);
				p->twin = p->lives++ > 0;
				begins++;
			} else {
				CHECK_EQ(p->state, 1);
				ends++;
			}
			p->state = begin ? 1 : 2;
			if (first_line)
				CHECK_EQ(pid, main_pid); /* the command's begin first */
			last_pid = pid;
		} else if (sscanf(l, "work %d %d", &pid, &arg) == 2) {
			p = proc_of(v, &n, pid);
			if (p->state != 1)
				djp_test_fail(__FILE__, __LINE__, "an event of %d outside its begin and end: %s", pid, out);
			/* a thread of main, a child of fork, the twin exec'd */
			CHECK_EQ(arg, pid == main_pid ? 1 : p->twin ? 3 : 2);
			works++;
		} else if (sscanf(l, "twin %d", &pid) == 1) {
			twins++;
		} else if (sscanf(l, "first %d", &pid) == 1) {
			firsts++;
		} else {
			djp_test_fail(__FILE__, __LINE__, "an unexpected line: %s", l);
		}
		first_line = false;
	}
	CHECK_EQ(last_pid, main_pid); /* and its end last */
	CHECK_EQ(begins, 1 + FORKS + 2 * EXECS);
	CHECK_EQ(ends, begins);
	CHECK_EQ(twins, EXECS);
	CHECK_EQ(firsts, 1 + FORKS + EXECS);
	CHECK_EQ(works, THREADS + FORKS + 2 * EXECS);
	CHECK_EQ(n, 1 + FORKS + EXECS);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(v[i].state, 2);
		CHECK_EQ(v[i].lives, v[i].pid != main_pid && v[i].twin ? 2 : 1);
	}
	free(out);
}

/* Counted in globals, the probes alone, as scripts count them. */
TEST_TIMEOUT(script_process_begin_and_end_counted, 120)
{
	char *out = run("global b, e, t\n"
			"probe process.begin { b++ }\n"
			"probe process.end { e++ }\n"
			"probe process(\"life_target_exec\").end { t++ }\n"
			"probe end { printf(\"%d %d %d\\n\", b, e, t) }\n",
			NULL);
	char want[64];
	snprintf(want, sizeof(want), "%d %d %d\n", 1 + FORKS + 2 * EXECS, 1 + FORKS + 2 * EXECS, EXECS);
	CHECK_STR(out, want);
	free(out);
}

TEST(script_process_begin_needs_a_process)
{
	static const struct tt_bad_script bad[] = {
		{ "probe process.begin { }", "djp: a process probe needs the process: give -c CMD or -x PID, or name its program "
					      "(process(\"PATH\"))\n" },
		{ "probe process.thread.begin { }", "djp: a process probe needs the process: give -c CMD or -x PID, or name "
						     "its program (process(\"PATH\"))\n" },
		{ "probe process.syscall { }",
		  "<input>:1:7: semantic error: not supported yet: probe point process.syscall (system call probes; "
		  "process.begin, .end, .thread.begin and .thread.end are there)" },
		{ "probe process(\"a\").begin(1) { }", "<input>:1:7: semantic error: while resolving probe point "
						      "process(\"a\").begin(1): unknown probe point" },
	};
	tt_bad_scripts(bad, sizeof(bad) / sizeof(bad[0]));
}

/* -l lists the point as written, as stap lists process.begin. */
TEST_TIMEOUT(script_list_process_begin, 60)
{
	char cmd[4096];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s 0 0 0", djp_test_path("trace_progs/life_target"));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-l", "process(\"life_target\").begin", NULL }, false,
		     -1);
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "process(\"life_target\").begin\n"));
	CHECK(!strstr(p->obuf, "mark("));
	free(p);
}
