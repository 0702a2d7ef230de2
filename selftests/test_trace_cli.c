/* `djp trace`'s command line as a user writes it: options after the
 * patterns, commands named by PATH and run through wrappers. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

static struct tproc *run_djp(char *const argv[], int *status)
{
	struct tproc *p = tt_spawn(argv, false, -1);
	*status = tt_finish(p, 60000);
	return p;
}

static size_t slurp(const char *path, char *buf, size_t sz)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sz - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0 ? (size_t)n : 0;
}

/* -o and --json after the pattern are options, not patterns. */
TEST(trace_options_after_patterns)
{
	char cmd[4096], out[] = "/tmp/djp-trace-cli-XXXXXX", buf[1 << 14];
	struct tproc *p;
	int st, fd = mkstemp(out);

	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s --no-stdin --ticks 0", tt_target(false));
	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "tt_main", "-o", out, "--json", NULL }, &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "status %#x, stderr: %s", st, p->ebuf);
	slurp(out, buf, sizeof(buf));
	unlink(out);
	if (tt_count(buf, "\"name\":\"tt_main\"") != 1)
		djp_test_fail(__FILE__, __LINE__, "%s holds: %s; stdout: %s; stderr: %s", out, buf, p->obuf, p->ebuf);
	CHECK(!strstr(p->obuf, "tt_main"));
	free(p);
}

/* A directory holding djp-test-shim, `#!/bin/sh` then exec of func_target
 * with its arguments, as pyenv's python3.11 is a script that execs the
 * real program; removed by shim_remove. */
static void shim_make(char *dir, char *shim, size_t sz)
{
	FILE *f;

	CHECK(mkdtemp(dir));
	snprintf(shim, sz, "%s/djp-test-shim", dir);
	CHECK((f = fopen(shim, "w")));
	fprintf(f, "#!/bin/sh\nexec %s \"$@\"\n", tt_func_target());
	fclose(f);
	CHECK(!chmod(shim, 0755));
}

static void shim_remove(const char *dir, const char *shim)
{
	unlink(shim);
	rmdir(dir);
}

/* djp trace -c CMD func:ft_work where CMD reaches func_target through
 * `wrapper`, a printf format taking func_target's path: every call is
 * traced, in the program the wrapper execs. */
static void func_through(const char *wrapper, const char *path_dir)
{
	char cmd[4200];
	struct tproc *p;
	unsigned long long ev;
	int st, zero;

	snprintf(cmd, sizeof(cmd), wrapper, tt_func_target());
	if (path_dir) {
		char path[8192];
		snprintf(path, sizeof(path), "%s:%s", path_dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
		setenv("PATH", path, 1);
	}
	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:ft_work", NULL }, &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !tt_summary_sum(p->ebuf, "func:ft_work", &ev, &zero) || ev != 10)
		djp_test_fail(__FILE__, __LINE__, "%s: status %#x, stderr: %s", cmd, st, p->ebuf);
	CHECK_EQ(tt_count(p->obuf, " func:ft_work i="), 10);
	free(p);
}

TEST_TIMEOUT(trace_func_through_env, 90)
{
	func_through("env %s 10", NULL);
}

TEST_TIMEOUT(trace_func_through_sh_exec, 90)
{
	func_through("sh -c 'exec %s 10'", NULL);
}

/* A command named by PATH that is a shim script (as pyenv's python3.11
 * is): `#!/bin/sh` then exec of the real program. */
TEST_TIMEOUT(trace_func_through_path_shim, 90)
{
	char dir[] = "/tmp/djp-shim-XXXXXX", shim[256];

	shim_make(dir, shim, sizeof(shim));
	func_through("djp-test-shim 10", dir);
	shim_remove(dir, shim);
}

/* A pattern that matches nothing in the program run, nor in any it
 * execs: an error at the end, naming the program. */
TEST_TIMEOUT(trace_launch_pattern_never_matched, 60)
{
	struct tproc *p;
	int st;

	p = run_djp((char *const[]){ (char *)tt_djp(), "trace", "-c", "true", "no_such_marker", NULL }, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	if (!strstr(p->ebuf, "djp: true: pattern 'no_such_marker' matched nothing in /usr/bin/true, the program "
			     "that was run\n"))
		djp_test_fail(__FILE__, __LINE__, "stderr: %s", p->ebuf);
	free(p);
}

/* Scripts through the same wrappers: a point that matches nothing in the
 * wrapper is said once and bound in the program it execs. */
static struct tproc *script_under(const char *cmd, const char *script, int *st)
{
	return run_djp((char *const[]){ (char *)tt_djp(), "-c", (char *)cmd, "-e", (char *)script, NULL }, st);
}

TEST_TIMEOUT(script_through_env_and_a_path_shim, 120)
{
	char cmd[4200], dir[] = "/tmp/djp-shim-XXXXXX", shim[256], path[8192];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "env %s --no-stdin --ticks 3", tt_target(false));
	p = script_under(cmd, "global n; probe process.mark(\"tt_tick\") { n += $i + 1 } probe end { printf(\"n=%d\\n\", n) }",
			 &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !strstr(p->obuf, "n=6\n") ||
	    !strstr(p->ebuf, "process.mark(\"tt_tick\") matches nothing in /usr/bin/env, the program the command ran"))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	free(p);

	shim_make(dir, shim, sizeof(shim));
	snprintf(path, sizeof(path), "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	p = script_under("djp-test-shim 10",
			 "global n; probe process.function(\"ft_work\") { n++ } probe end { printf(\"n=%d\\n\", n) }", &st);
	shim_remove(dir, shim);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !strstr(p->obuf, "n=10\n"))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	free(p);

	/* nothing it execs has the point either: an error at the end,
	 * naming the program it exec'd */
	p = script_under(cmd, "probe process.mark(\"no_such_marker\") { }", &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 1 ||
	    !strstr(p->ebuf, "process.mark(\"no_such_marker\") matched nothing in /usr/bin/env, the program the "
			     "command ran, nor in the programs it exec'd (the last: ") ||
	    !strstr(p->ebuf, "/trace_target)\n"))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	free(p);
}
