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
#include <limits.h>
#include <sys/stat.h>

#include "golden_files.h"
#include "harness.h"

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
	char path[2 * PATH_MAX], replay[PATH_MAX], stp[PATH_MAX];
	char *argv[32], *args = NULL, *sargs = NULL;
	struct golden_result r;
	int argc = 0, bad;

	snprintf(stp, sizeof(stp), "%s.stp", name);
	snprintf(path, sizeof(path), "%s/%s.replay", dir, name);
	snprintf(replay, sizeof(replay), "%s.replay", name);
	if (access(path, R_OK))
		snprintf(replay, sizeof(replay), "common.replay");
	argv[argc++] = (char *)driver;
	argv[argc++] = "--replay";
	argv[argc++] = replay;
	snprintf(path, sizeof(path), "%s/%s.args", dir, name);
	if ((args = golden_slurp(path))) {
		for (char *tok = strtok(args, " \n"); tok && argc < 12; tok = strtok(NULL, " \n"))
			argv[argc++] = tok;
	}
	argv[argc++] = stp;
	/* NAME.sargs: the script's own arguments, after the script file */
	snprintf(path, sizeof(path), "%s/%s.sargs", dir, name);
	if ((sargs = golden_slurp(path))) {
		for (char *tok = strtok(sargs, " \n"); tok && argc < 30; tok = strtok(NULL, " \n"))
			argv[argc++] = tok;
	}
	argv[argc] = NULL;

	golden_run(dir, argv, &r);
	bad = golden_compare(dir, name, "out", r.out, rebase, true);
	bad |= golden_compare(dir, name, "err", r.err, rebase, false);
	bad |= golden_compare_status(dir, name, r.status, rebase);
	free(args);
	free(sargs);
	free(r.out);
	free(r.err);
	return bad;
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
	n = scandir(dir, &list, golden_stp_only, golden_by_name);
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
