/* The Debian packages make deb builds (debian/, debian/deb.mk): lintian
 * reports no error in them; unpacked into an empty root, djp runs from
 * there and a program builds against the packaged headers with pkg-config
 * (deb/unpacked.sh); djprobe.ko builds by dkms from djprobe-dkms's source
 * alone against Debian's kernel headers (deb/dkms.sh).  Each script prints
 * one line, "NAME: ok" or what differed. */
#include <limits.h>
#include <sys/wait.h>

#include "harness.h"

#ifndef DJP_SRC_DIR
#define DJP_SRC_DIR "."
#endif

/* Run cmd; its output, without the last newline, in out. */
static int run(const char *cmd, char *out, size_t size)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;

	CHECK(p);
	while (n + 1 < size && fgets(out + n, (int)(size - n), p))
		n += strlen(out + n);
	out[n] = 0;
	if (n && out[n - 1] == '\n')
		out[n - 1] = 0;
	return pclose(p);
}

/* A path next to the selftest binary, of its own (djp_test_path's buffer
 * is reused by the next call). */
static char *path(const char *rel)
{
	char *p = strdup(djp_test_path(rel));

	CHECK(p);
	return p;
}

static void check_script(const char *cmd, const char *want)
{
	char out[8192];
	int st = run(cmd, out, sizeof(out));

	if (!WIFEXITED(st) || WEXITSTATUS(st) || strcmp(out, want))
		djp_test_fail(__FILE__, __LINE__, "%s (status %d)", out, st);
}

TEST_TIMEOUT(deb_lintian_reports_no_error, 300)
{
	char cmd[PATH_MAX * 2], out[16384];
	int st;

	CHECK(!access(path(DJP_DEB_CHANGES), R_OK));
	/* lintian's status, its tags without its note that it runs as root */
	snprintf(cmd, sizeof(cmd),
		 "out=$(lintian --fail-on error %s 2>&1); st=$?; echo \"$out\" | grep -v 'root privileges'; exit $st",
		 path(DJP_DEB_CHANGES));
	st = run(cmd, out, sizeof(out));
	if (!WIFEXITED(st) || WEXITSTATUS(st) || strstr(out, "\nE: ") || !strncmp(out, "E: ", 3))
		djp_test_fail(__FILE__, __LINE__, "lintian (status %d): %s", st, out);
}

TEST_TIMEOUT(deb_unpacked_root_runs_djp_and_builds_with_pkg_config, 120)
{
	char cmd[PATH_MAX * 3];

	snprintf(cmd, sizeof(cmd), "%s/selftests/deb/unpacked.sh %s %s %s 2>&1", DJP_SRC_DIR, path("../deb"), DJP_SRC_DIR,
		 path("deb-unpacked"));
	check_script(cmd, "unpacked: ok");
}

TEST_TIMEOUT(deb_dkms_builds_module_from_its_source_alone, 600)
{
	char cmd[PATH_MAX * 4];

	snprintf(cmd, sizeof(cmd), "%s/selftests/deb/dkms.sh %s %s %s %s 2>&1", DJP_SRC_DIR, path("../deb"), DJP_SRC_DIR,
		 path("../kcheck"), path("deb-dkms"));
	check_script(cmd, "dkms: ok");
}
