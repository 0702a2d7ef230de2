/* `djp trace` on bad input: each is one line on stderr naming the thing and
 * the problem, a non-zero exit, and nothing left armed. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static struct tproc *run_djp(char *const argv[], int uid, int *status)
{
	struct tproc *p = tt_spawn(argv, false, uid);
	*status = tt_finish(p, 20000);
	return p;
}

static void expect_one_line(struct tproc *p, int status, const char *what, const char *problem)
{
	CHECK(WIFEXITED(status));
	CHECK(WEXITSTATUS(status) != 0);
	if (tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, what) || !strstr(p->ebuf, problem))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	CHECK_EQ(p->olen, 0);
}

TEST(trace_error_no_such_process)
{
	pid_t gone = fork();
	struct tproc *p;
	char pid[16];
	int st;

	CHECK(gone >= 0);
	if (!gone)
		_exit(0);
	waitpid(gone, NULL, 0);
	snprintf(pid, sizeof(pid), "%d", (int)gone);
	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "tt_*", NULL }, -1, &st);
	expect_one_line(p, st, pid, "no such process");
	free(p);
}

/* The library is there but its agent was turned off: nothing to inject
 * (a second engine), one line, nothing changed. */
TEST(trace_error_agent_disabled)
{
	struct tproc *t;
	struct tproc *p;
	char pid[16];
	int st, n;

	setenv("DJP_AGENT", "0", 1);
	t = tt_spawn((char *const[]){ (char *)tt_target(false), NULL }, true, -1);
	unsetenv("DJP_AGENT");
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "tt_*", NULL }, -1, &st);
	expect_one_line(p, st, pid, "its agent is off (DJP_AGENT=0 in its environment)");
	CHECK_EQ(tt_sites_changed(t->pid, tt_target(false), &n), 0);
	tt_kill(t);
	free(p);
	free(t);
}

TEST(trace_error_other_user)
{
	struct tproc *t, *p;
	char pid[16];
	int st;

	if (geteuid() != 0)
		SKIP("needs root to run processes as two other users");
	t = tt_spawn((char *const[]){ (char *)tt_target(false), NULL }, true, 65534);
	if (!tt_wait_out(t, "ready", 10000)) {
		tt_kill(t);
		SKIP("the target cannot run as nobody here");
	}
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "tt_*", NULL }, 65533, &st);
	expect_one_line(p, st, pid, "another user");
	tt_kill(t);
	free(p);
	free(t);
}

TEST(trace_error_pattern_matches_nothing_attach)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "1000", NULL }, true, -1);
	struct tproc *p;
	char pid[16];
	int st, n;

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	/* The first pattern matches and is armed, the second does not: the
	 * whole trace fails and the first is disarmed again. */
	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "tt_tick", "no_such_*", NULL }, -1, &st);
	expect_one_line(p, st, "'no_such_*'", "matches no marker");
	CHECK(tt_wait_restored(t->pid, tt_target(false), 1000));
	CHECK_EQ(tt_sites_changed(t->pid, tt_target(false), &n), 0);
	tt_kill(t);
	free(p);
	free(t);
}

TEST(trace_error_pattern_matches_nothing_launch)
{
	char cmd[4096];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --no-stdin", tt_target(false));
	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "no_such_*", NULL }, -1, &st);
	/* The command may print its "ready" before it dies: stdout is its. */
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	CHECK_EQ(tt_lines(p->ebuf), 1);
	CHECK(strstr(p->ebuf, "'no_such_*' matches no marker"));
	free(p);
}

TEST(trace_error_cannot_execute)
{
	struct tproc *p;
	int st;

	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-c", "/nonexistent/djp-test-cmd", "tt_*", NULL }, -1,
		    &st);
	expect_one_line(p, st, "/nonexistent/djp-test-cmd", "cannot execute: No such file or directory");
	free(p);
}

TEST(trace_error_usage)
{
	struct tproc *p;
	int st;

	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "tt_*", NULL }, -1, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	CHECK_EQ(tt_lines(p->ebuf), 1);
	free(p);
	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-x", "12x", "tt_*", NULL }, -1, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	CHECK_EQ(tt_lines(p->ebuf), 1);
	free(p);
}

/* Events or script output that cannot be written (a full disk: /dev/full)
 * make the run fail with status 1 and one line naming the output. */
TEST_TIMEOUT(trace_write_failure_exits_1, 60)
{
	static const char *const runs[] = {
		"%s trace -o /dev/full --duration 0.3 -c '%s --ticks 30' tt_tick",
		"%s trace --duration 0.3 -c '%s --ticks 30' tt_tick >/dev/full",
		"%s trace --json --duration 0.3 -c '%s --ticks 30' tt_tick >/dev/full",
		"%s -e 'probe process.mark(\"tt_tick\") { printf(\"%%d\\n\", $arg1) }' -c '%s --ticks 30' >/dev/full",
		"%s -o /dev/full -e 'probe process.mark(\"tt_tick\") { printf(\"%%d\\n\", $arg1) }' -c '%s --ticks 30'",
	};
	char cmd[4200], err[] = "/tmp/djp-wfail-XXXXXX", text[4096];

	for (unsigned i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		int fd = mkstemp(err), st, n;
		CHECK(fd >= 0);
		snprintf(text, sizeof(text), runs[i], tt_djp(), tt_target(false));
		snprintf(cmd, sizeof(cmd), "%s 2>%s", text, err);
		st = system(cmd);
		n = (int)read(fd, text, sizeof(text) - 1);
		text[n > 0 ? n : 0] = 0;
		close(fd);
		unlink(err);
		strcpy(err, "/tmp/djp-wfail-XXXXXX");
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 1 || !strstr(text, "cannot write"))
			djp_test_fail(__FILE__, __LINE__, "run %u: status %d, stderr: %s", i, st, text);
	}
}

/* One clear line for bad input: a directory or a file with a NUL byte as
 * the script, and a trace pattern longer than the agent takes. */
TEST(djp_bad_input_one_line)
{
	char dir[] = "/tmp/djp-badin-XXXXXX", nul[64], pattern[400], cmd[1024], err[] = "/tmp/djp-badin-err-XXXXXX";
	const char *args[3][2] = { { dir, "is a directory" }, { nul, "NUL byte" }, { pattern, "too long" } };
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(nul, sizeof(nul), "%s/nul.stp", dir);
	CHECK((f = fopen(nul, "w")) != NULL);
	CHECK(fwrite("probe begin {}\0x", 1, 16, f) == 16);
	fclose(f);
	memset(pattern, 'a', 300);
	pattern[300] = 0;
	for (int i = 0; i < 3; i++) {
		int fd = mkstemp(err), st, n;
		char text[2048];
		CHECK(fd >= 0);
		if (i < 2)
			snprintf(cmd, sizeof(cmd), "%s %s 2>%s", tt_djp(), args[i][0], err);
		else
			snprintf(cmd, sizeof(cmd), "%s trace -x 1 %s 2>%s", tt_djp(), args[i][0], err);
		st = system(cmd);
		n = (int)read(fd, text, sizeof(text) - 1);
		text[n > 0 ? n : 0] = 0;
		close(fd);
		unlink(err);
		strcpy(err, "/tmp/djp-badin-err-XXXXXX");
		if (!WIFEXITED(st) || WEXITSTATUS(st) == 0 || tt_lines(text) != 1 || !strstr(text, args[i][1]))
			djp_test_fail(__FILE__, __LINE__, "case %d: status %d, stderr: %s", i, st, text);
	}
	unlink(nul);
	rmdir(dir);
}
