/*
 * The script corpus: scripts in the style of SystemTap's examples
 * (selftests/scripts/corpus/NAME.stp) run live against one real program,
 * build/selftests/trace_progs/corpus_target, launched by the tool with -c
 * from that program's directory (so `process("./corpus_target")` is a path
 * relative to the current directory).  The program's workload is fixed, so
 * each script's stdout and exit status must equal NAME.out and NAME.status
 * (0 when absent).  DJP_REBASE=1 writes them from the actual results.
 * The program runs with CORPUS_MODE=golden in its environment.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int stp_only(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 4 && !strcmp(d->d_name + n - 4, ".stp");
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Run one script; 0 when it matches. */
static int run_case(const char *dir, const char *name, const char *djp, const char *progdir, bool rebase)
{
	char stp[2 * PATH_MAX], outp[PATH_MAX], errp[PATH_MAX], path[2 * PATH_MAX];
	char *got, *err, *exp, *exp_st;
	int status, code, bad = 0;
	pid_t pid;

	snprintf(stp, sizeof(stp), "%s/%s.stp", dir, name);
	snprintf(outp, sizeof(outp), "/tmp/djp-corpus-%d.out", getpid());
	snprintf(errp, sizeof(errp), "/tmp/djp-corpus-%d.err", getpid());
	pid = fork();
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int in = open("/dev/null", O_RDONLY);
		if (o < 0 || e < 0 || in < 0 || chdir(progdir))
			_exit(127);
		setenv("CORPUS_MODE", "golden", 1); /* for env_var() */
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		execl(djp, djp, "-c", "./corpus_target", stp, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	got = slurp(outp);
	err = slurp(errp);
	unlink(outp);
	unlink(errp);
	snprintf(path, sizeof(path), "%s/%s.out", dir, name);
	exp = slurp(path);
	if (rebase)
		spit(path, got ? got : "");
	snprintf(path, sizeof(path), "%s/%s.status", dir, name);
	exp_st = slurp(path);
	if (rebase) {
		char b[16];
		snprintf(b, sizeof(b), "%d\n", code);
		if (code)
			spit(path, b);
		else
			unlink(path);
	}
	if (!rebase && strcmp(got ? got : "", exp ? exp : "")) {
		fprintf(stderr, "# corpus %s: stdout differs\n# --- expected\n%s# --- got\n%s# --- stderr\n%s", name,
			exp ? exp : "", got ? got : "", err ? err : "");
		bad = 1;
	}
	if (!rebase && code != (exp_st ? atoi(exp_st) : 0)) {
		fprintf(stderr, "# corpus %s: exit status %d, expected %d\n# --- stderr\n%s", name, code,
			exp_st ? atoi(exp_st) : 0, err ? err : "");
		bad = 1;
	}
	free(got);
	free(err);
	free(exp);
	free(exp_st);
	return bad;
}

TEST_TIMEOUT(script_corpus, 300)
{
	char dir[PATH_MAX], djp[PATH_MAX], progdir[PATH_MAX], target[PATH_MAX + 16];
	struct dirent **list;
	int n, failed = 0;
	bool rebase = getenv("DJP_REBASE") != NULL;

	if (!realpath(djp_test_path("../../selftests/scripts/corpus"), dir) &&
	    !realpath("selftests/scripts/corpus", dir))
		djp_test_fail(__FILE__, __LINE__, "selftests/scripts/corpus not found");
	snprintf(djp, sizeof(djp), "%s", djp_test_path("../djp"));
	snprintf(progdir, sizeof(progdir), "%s", djp_test_path("trace_progs"));
	snprintf(target, sizeof(target), "%s/corpus_target", progdir);
	CHECK(access(djp, X_OK) == 0);
	CHECK(access(target, X_OK) == 0);
	n = scandir(dir, &list, stp_only, by_name);
	CHECK(n >= 40);
	for (int i = 0; i < n; i++) {
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)strlen(list[i]->d_name) - 4, list[i]->d_name);
		failed += run_case(dir, name, djp, progdir, rebase);
		free(list[i]);
	}
	free(list);
	if (failed)
		djp_test_fail(__FILE__, __LINE__, "%d of %d corpus scripts failed", failed, n);
}
