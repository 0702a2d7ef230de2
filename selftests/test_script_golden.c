/*
 * Golden tests of the probe-script engine: every selftests/scripts/NAME.stp
 * runs through the djp tool (build/djp, as shipped) with its hidden option
 * --replay NAME.replay (or common.replay), from inside selftests/scripts so
 * that messages name the file as "NAME.stp".  Its stdout, stderr and exit
 * status must equal NAME.out, NAME.err (empty when absent) and NAME.status
 * (0 when absent).  NAME.args, if present, holds extra options (one line).
 *
 * DJP_REBASE=1 rewrites the expected files from the actual results, for
 * reviewing a deliberate change with git diff.
 */
#include <dirent.h>
#include <errno.h>
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

static const char *scripts_dir(void)
{
	static char dir[PATH_MAX];
	struct stat st;
	snprintf(dir, sizeof(dir), "%s", djp_test_path("../../selftests/scripts"));
	if (stat(dir, &st) == 0)
		return dir;
	return "selftests/scripts";
}

/* Run one case; returns 0 when it matches. */
static int run_case(const char *dir, const char *name, const char *driver, bool rebase)
{
	char path[2 * PATH_MAX], replay[PATH_MAX], outp[PATH_MAX], errp[PATH_MAX], stp[PATH_MAX];
	char *argv[32], *args = NULL, *sargs = NULL, *exp_out, *exp_err, *exp_st, *got_out, *got_err;
	int argc = 0, status, st_code, bad = 0;
	pid_t pid;

	snprintf(stp, sizeof(stp), "%s.stp", name);
	snprintf(path, sizeof(path), "%s/%s.replay", dir, name);
	snprintf(replay, sizeof(replay), "%s.replay", name);
	if (access(path, R_OK))
		snprintf(replay, sizeof(replay), "common.replay");
	snprintf(outp, sizeof(outp), "/tmp/djp-golden-%d.out", getpid());
	snprintf(errp, sizeof(errp), "/tmp/djp-golden-%d.err", getpid());
	argv[argc++] = (char *)driver;
	argv[argc++] = "--replay";
	argv[argc++] = replay;
	snprintf(path, sizeof(path), "%s/%s.args", dir, name);
	if ((args = slurp(path))) {
		for (char *tok = strtok(args, " \n"); tok && argc < 12; tok = strtok(NULL, " \n"))
			argv[argc++] = tok;
	}
	argv[argc++] = stp;
	/* NAME.sargs: the script's own arguments, after the script file */
	snprintf(path, sizeof(path), "%s/%s.sargs", dir, name);
	if ((sargs = slurp(path))) {
		for (char *tok = strtok(sargs, " \n"); tok && argc < 30; tok = strtok(NULL, " \n"))
			argv[argc++] = tok;
	}
	argv[argc] = NULL;

	pid = fork();
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0 || chdir(dir))
			_exit(127);
		dup2(o, 1);
		dup2(e, 2);
		execv(driver, argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	st_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	got_out = slurp(outp);
	got_err = slurp(errp);
	unlink(outp);
	unlink(errp);

	snprintf(path, sizeof(path), "%s/%s.out", dir, name);
	exp_out = slurp(path);
	if (rebase)
		spit(path, got_out ? got_out : "");
	snprintf(path, sizeof(path), "%s/%s.err", dir, name);
	exp_err = slurp(path);
	if (rebase) {
		if (got_err && *got_err)
			spit(path, got_err);
		else
			unlink(path);
	}
	snprintf(path, sizeof(path), "%s/%s.status", dir, name);
	exp_st = slurp(path);
	if (rebase) {
		char b[16];
		snprintf(b, sizeof(b), "%d\n", st_code);
		if (st_code)
			spit(path, b);
		else
			unlink(path);
	}
	if (!rebase) {
		if (strcmp(got_out ? got_out : "", exp_out ? exp_out : "")) {
			fprintf(stderr, "# %s: stdout differs\n# --- expected\n%s# --- got\n%s", name, exp_out ? exp_out : "",
				got_out ? got_out : "");
			bad = 1;
		}
		if (strcmp(got_err ? got_err : "", exp_err ? exp_err : "")) {
			fprintf(stderr, "# %s: stderr differs\n# --- expected\n%s# --- got\n%s", name, exp_err ? exp_err : "",
				got_err ? got_err : "");
			bad = 1;
		}
		if (st_code != (exp_st ? atoi(exp_st) : 0)) {
			fprintf(stderr, "# %s: exit status %d, expected %d\n", name, st_code, exp_st ? atoi(exp_st) : 0);
			bad = 1;
		}
	}
	free(args);
	free(sargs);
	free(exp_out);
	free(exp_err);
	free(exp_st);
	free(got_out);
	free(got_err);
	return bad;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int stp_only(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 4 && !strcmp(d->d_name + n - 4, ".stp");
}

TEST_TIMEOUT(script_golden, 120)
{
	const char *dir = scripts_dir();
	char driver[PATH_MAX];
	struct dirent **list;
	int n, failed = 0;
	bool rebase = getenv("DJP_REBASE") != NULL;

	snprintf(driver, sizeof(driver), "%s", djp_test_path("../djp"));
	CHECK(access(driver, X_OK) == 0);
	n = scandir(dir, &list, stp_only, by_name);
	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)strlen(list[i]->d_name) - 4, list[i]->d_name);
		failed += run_case(dir, name, driver, rebase);
		free(list[i]);
	}
	free(list);
	if (failed)
		djp_test_fail(__FILE__, __LINE__, "%d of %d golden script cases failed", failed, n);
}
