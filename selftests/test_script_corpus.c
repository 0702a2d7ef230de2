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
#include <limits.h>
#include <sys/stat.h>

#include "golden_files.h"
#include "harness.h"

/* Run one script; 0 when it matches. */
static int run_case(const char *dir, const char *name, const char *djp, const char *progdir, bool rebase)
{
	char stp[2 * PATH_MAX];
	char *argv[] = { (char *)djp, "-c", "./corpus_target", stp, NULL };
	struct golden_result r;
	int bad;

	snprintf(stp, sizeof(stp), "%s/%s.stp", dir, name);
	golden_run(progdir, argv, &r);
	bad = golden_compare(dir, name, "out", r.out, rebase, true);
	bad |= golden_compare_status(dir, name, r.status, rebase);
	if (bad)
		fprintf(stderr, "# corpus %s: its stderr was\n%s", name, r.err);
	free(r.out);
	free(r.err);
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
	setenv("CORPUS_MODE", "golden", 1); /* the program's, for env_var() */
	n = scandir(dir, &list, golden_stp_only, golden_by_name);
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
