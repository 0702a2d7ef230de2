/*
 * What writing CTF costs the tool per event, next to the text: the same
 * events written both ways in one run.
 *
 * reqserver's 200,000 requests are traced once into a CTF trace (about
 * 400,000 events of two and three fields, a string in each, in two
 * threads; a ring of 64 MiB a thread, so that none is lost).  Then `djp
 * trace --from` writes that trace as text, as CTF, and as both in the same
 * run, and the tool's own CPU time (user + system, from wait4: the
 * machine's load does not count) is taken for each, per event: reading
 * the trace and writing it.  Both outputs in one run, less the run of
 * one, is the other's share of that run: the reading cancels out.  The
 * least of 7 runs of each, interleaved (the run least disturbed: CTF's
 * share is a tenth of the text's, smaller than the text's spread from
 * run to run on a loaded machine).  Target: CTF costs at most what the
 * text costs, alone and in the same run.
 */
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#define RUNS 7
#define REQUESTS 200000

static char dir[PATH_MAX], tmp[] = "/tmp/djp-bench-ctf-XXXXXX";

/* argv run with stdout and stderr to `out`: its CPU time in s, or -1
 * when it failed. */
static double cpu_of(char *const argv[], const char *out)
{
	struct rusage ru;
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static double least(const double *v)
{
	double m = v[0];
	for (int i = 1; i < RUNS; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/* The events the trace holds, from --from's summary in log. */
static long events_in(const char *log)
{
	char line[1024];
	long n = -1;
	FILE *f = fopen(log, "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, ": ");
		if (p && strstr(line, " events, ") && strstr(line, "djp trace: "))
			sscanf(strrchr(line, ':') + 2, "%ld", &n);
	}
	if (f)
		fclose(f);
	return n;
}

int main(void)
{
	char exe[PATH_MAX], djp[PATH_MAX + 8], cmd[2 * PATH_MAX], src[PATH_MAX + 8], log[PATH_MAX + 8];
	char txt[PATH_MAX + 16], ctf[PATH_MAX + 16];
	double text[RUNS], ctfs[RUNS], both[RUNS];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	long events;

	if (n <= 0 || !mkdtemp(tmp))
		return 1;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));
	snprintf(djp, sizeof(djp), "%s/djp", dir);
	snprintf(src, sizeof(src), "%s/src", tmp);
	snprintf(log, sizeof(log), "%s/log", tmp);
	snprintf(txt, sizeof(txt), "%s/out.txt", tmp);
	snprintf(ctf, sizeof(ctf), "%s/out.ctf", tmp);
	snprintf(cmd, sizeof(cmd), "%s/examples/reqserver --requests %d --threads 2", dir, REQUESTS);
	if (cpu_of((char *const[]){ djp, "trace", "--buffer-size", "67108864", "-f", "ctf", "-o", src, "-c", cmd,
				    "req_*", NULL },
		   log) < 0) {
		printf("trace_ctf: recording reqserver | failed (see %s) | - | error\n", log);
		return 1;
	}
	for (int r = 0; r < RUNS; r++) {
		rm_rf(ctf);
		text[r] = cpu_of((char *const[]){ djp, "trace", "--from", src, "-o", txt, NULL }, log);
		ctfs[r] = cpu_of((char *const[]){ djp, "trace", "--from", src, "-f", "ctf", "-o", ctf, NULL }, log);
		rm_rf(ctf);
		both[r] = cpu_of((char *const[]){ djp, "trace", "--from", src, "-f", "text", "-o", txt, "-f", "ctf",
						  "-o", ctf, NULL },
				 log);
		if (text[r] < 0 || ctfs[r] < 0 || both[r] < 0) {
			printf("trace_ctf: djp trace --from | failed (see %s) | - | error\n", log);
			return 1;
		}
	}
	events = events_in(log);
	if (events <= 0) {
		printf("trace_ctf: events of the trace | none (see %s) | - | error\n", log);
		return 1;
	}
	{
		double t = least(text), c = least(ctfs), b = least(both);
		double per = 1e9 / (double)events;
		double text_ns = (b - c) * per, ctf_ns = (b - t) * per;
		printf("events of reqserver's trace, read back by --from | %ld | - | -\n", events);
		printf("text, read and written: tool's CPU per event | %.0f ns (%.2f M events/s) | - | -\n", t * per,
		       1e3 / (t * per));
		printf("CTF, read and written: tool's CPU per event | %.0f ns (%.2f M events/s) | <= text | %s\n",
		       c * per, 1e3 / (c * per), c <= t ? "ok" : "over");
		printf("text and CTF in the same run: text's share per event | %.0f ns | - | -\n", text_ns);
		printf("text and CTF in the same run: CTF's share per event | %.0f ns | <= text's | %s\n", ctf_ns,
		       ctf_ns <= text_ns ? "ok" : "over");
	}
	rm_rf(tmp);
	return 0;
}
