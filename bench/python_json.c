/*
 * The probes people use most in python3.11: `python -m json.tool` over a
 * 4 MB file, counting function__entry by function name with `line` armed
 * (CPython 3.11 fires function__entry only then), under `djp -c` and under
 * bpftrace, against the untraced run (target: djp within 1.5x of it).
 * `line` is a jump (its function's computed gotos have known targets), so
 * are function__entry and function__return (bounded by their FDEs); the
 * last row counts from `djp list --json` the sites that stay int3 probes.
 *
 * Measured on a shared 2-core machine: untraced 1.61 s, djp 41.9 s
 * (26x), bpftrace 37.7 s (23.5x); djp was 226 s with `line` and
 * function__entry trapping.  The rest is CPython's own: with the line
 * probe's semaphore set it computes every event's line number and the
 * function's names (perf: PyCode_Addr2Line, _PyCode_CheckLineNumber and
 * the static helper behind function__entry take about 65% of the
 * target's samples, the recorder about 5%), which bpftrace pays too.
 *
 * A row measures that floor: the same run with the two semaphores raised
 * by hand and no tracer at all (here 15-23x the untraced run); the
 * issue's 1.5x holds against it, not against the untraced run, which no
 * tracer of these probes can approach.
 *
 * The untraced figure is the median of 3 runs; each traced one runs once.
 */
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

static const char python[] = "/usr/bin/python3.11";

/* Seconds the shell command took, or -1 when it failed. */
static double run_s(const char *cmd)
{
	double t0 = now_ns();
	if (system(cmd) != 0)
		return -1;
	return (now_ns() - t0) / 1e9;
}

/* The semaphore of python3.11's probe `name`, from djp list --json (a
 * link-time address: python3.11 is ET_EXEC on Debian), or 0. */
static unsigned long semaphore_of(const char *djp, const char *name)
{
	char cmd[2 * PATH_MAX], line[4096], want[128];
	unsigned long a = 0;
	FILE *p;
	snprintf(cmd, sizeof(cmd), "%s list --json %s", djp, python);
	snprintf(want, sizeof(want), "{\"name\":\"%s\",", name);
	if (!(p = popen(cmd, "r")))
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char *s = strstr(line, "\"semaphore\":\"");
		if (!strncmp(line, want, strlen(want)) && s)
			a = strtoul(s + 13, NULL, 16);
	}
	pclose(p);
	return a;
}

/*
 * CPython's own cost of what the probes ask, with no tracer at all: the
 * same json.tool run with the line and function__entry semaphores raised
 * by hand (written in /proc/PID/mem while python waits on its stdin, as a
 * tracer raises them), timed from the write.  Seconds, or -1.
 */
static double semaphores_only(const char *djp, const char *json)
{
	unsigned long sem[2] = { semaphore_of(djp, "line"), semaphore_of(djp, "function__entry") };
	int in[2], out[2], mem, st;
	char path[64], c;
	double t0, t;
	pid_t pid;

	if (!sem[0] || !sem[1] || pipe(in) || pipe(out))
		return -1;
	if (!(pid = fork())) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(python, python, "-c",
		      "import sys, runpy; print('r', flush=True); sys.stdin.read(1); "
		      "sys.argv = ['json.tool', sys.argv[1], '/dev/null']; runpy.run_module('json.tool', run_name='__main__')",
		      json, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (pid < 0 || read(out[0], &c, 1) != 1)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	if ((mem = open(path, O_RDWR)) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		unsigned short one = 1;
		if (pwrite(mem, &one, sizeof(one), (off_t)sem[i]) != sizeof(one))
			return -1;
	}
	close(mem);
	t0 = now_ns();
	if (write(in[1], "g", 1) != 1)
		return -1;
	close(in[1]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	t = (now_ns() - t0) / 1e9;
	close(out[0]);
	return t;
}

static void row(const char *name, double s, double base, const char *target, double limit)
{
	if (s < 0)
		printf("%s | failed | %s | error\n", name, target);
	else
		printf("%s | %.2f s (%.1fx) | %s | %s\n", name, s, s / base, target,
		       limit <= 0 ? "-" : s / base <= limit ? "ok" : "over");
}

int main(void)
{
	char exe[PATH_MAX], djp[PATH_MAX], json[] = "/tmp/djp-bench-json-XXXXXX", cmd[4 * PATH_MAX + 1024], line[4096];
	double plain[3], d, b, base;
	int fd, int3 = 0, sites = 0;
	FILE *p;

	if (access(python, X_OK)) {
		printf("python3.11 json.tool | no %s | - | skipped\n", python);
		return 0;
	}
	if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) < 0)
		return 1;
	exe[sizeof(exe) - 1] = 0;
	snprintf(djp, sizeof(djp), "%s/../djp", dirname(exe));
	if ((fd = mkstemp(json)) < 0)
		return 1;
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "%s -c \"import json, random; random.seed(1); "
		 "open('%s', 'w').write(json.dumps([{'id': i, 'name': 'item%%d' %% i, 'tags': ['a', 'b', 'c'][:i %% 4], "
		 "'v': random.random(), 'nested': {'x': i * 3, 'y': [1, 2, 3]}} for i in range(34000)]))\"",
		 python, json);
	if (system(cmd) != 0)
		return 1;

	for (int i = 0; i < 3; i++) {
		snprintf(cmd, sizeof(cmd), "%s -m json.tool %s /dev/null", python, json);
		plain[i] = run_s(cmd);
	}
	base = median_of(plain, 3);
	printf("python3.11 json.tool 4 MB, untraced | %.2f s | - | -\n", base);

	snprintf(cmd, sizeof(cmd),
		 "%s -c '%s -m json.tool %s /dev/null' -e 'global c; "
		 "probe process.provider(\"python\").mark(\"line\") { } "
		 "probe process.provider(\"python\").mark(\"function__entry\") { c[user_string($arg2)]++ } "
		 "probe end { foreach (k in c- limit 1) printf(\"%%s %%d\\n\", k, c[k]) }' >/dev/null 2>&1",
		 djp, python, json);
	d = run_s(cmd);
	row("python3.11 json.tool, function__entry by name with line armed: djp", d, base, "1.5x", 1.5);
	{
		double f = semaphores_only(djp, json);
		row("the same run, the two semaphores raised by hand, no tracer: CPython's own cost", f, base, "-", 0);
		if (f > 0 && d > 0)
			printf("djp / CPython's own cost of the semaphores it raises | %.2f x | <= 1.5 | %s\n", d / f,
			       d / f <= 1.5 ? "ok" : "over");
	}

	if (access("/usr/bin/bpftrace", X_OK))
		printf("the same: bpftrace | no bpftrace | - | skipped\n");
	else {
		snprintf(cmd, sizeof(cmd),
			 "/usr/bin/bpftrace -e 'usdt:%s:python:line { } "
			 "usdt:%s:python:function__entry { @[str(arg1)] = count(); }' "
			 "-c '%s -m json.tool %s /dev/null' >/dev/null 2>&1",
			 python, python, python, json);
		b = run_s(cmd);
		row("the same: bpftrace", b, base, "-", 0);
	}
	unlink(json);

	snprintf(cmd, sizeof(cmd), "%s list --json %s", djp, python);
	if ((p = popen(cmd, "r"))) {
		while (fgets(line, sizeof(line), p)) {
			sites++;
			int3 += strstr(line, "\"arming\":\"int3\"") != NULL;
		}
		pclose(p);
	}
	printf("python3.11 SDT sites armed as int3 (djp list --json) | %d of %d | 0 | %s\n", int3, sites,
	       int3 ? "over" : "ok");
	return 0;
}
