/*
 * The oracle: every value djp reports, compared with bpftrace's on real
 * programs (selftests/oracle/oracle.py, which says how).  One test per row
 * of its table: each runs the row's workload under bpftrace once and under
 * `djp trace` twice (the default arming and --int3), and fails with the
 * probe, the argument's location and both values of every difference.
 * Its last line says how many probes and values were compared.
 *
 * bpftrace, python3.11 and PostgreSQL 15 are installed by make check
 * (DEB_PACKAGES_CHECK); a row whose tool or program is missing fails.
 * bpftrace needs root.
 */
#include <limits.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static void oracle(const char *row)
{
	char py[PATH_MAX], build[PATH_MAX];
	struct tproc *p;
	int st;

	if (geteuid() != 0)
		SKIP("needs root, for bpftrace");
	if (!realpath(djp_test_path("../../selftests/oracle/oracle.py"), py) &&
	    !realpath("selftests/oracle/oracle.py", py))
		djp_test_fail(__FILE__, __LINE__, "selftests/oracle/oracle.py not found");
	snprintf(build, sizeof(build), "%s", tt_djp());
	dirname(build);
	p = tt_spawn((char *const[]){ "/usr/bin/python3.11", py, "--build", build, (char *)row, NULL }, false, -1);
	st = tt_finish(p, 280000);
	fputs(p->obuf, stdout);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "the oracle found differences (status %d); its stderr: %.2000s", st,
			      p->ebuf);
	free(p);
}

TEST_TIMEOUT(oracle_python, 300)
{
	oracle("python");
}

TEST_TIMEOUT(oracle_postgresql, 300)
{
	oracle("postgres");
}

TEST_TIMEOUT(oracle_libstdcxx, 300)
{
	oracle("libstdcxx");
}

TEST_TIMEOUT(oracle_libc, 300)
{
	oracle("libc");
}

TEST_TIMEOUT(oracle_functions, 300)
{
	oracle("functions");
}

TEST_TIMEOUT(oracle_markers, 300)
{
	oracle("markers");
}

TEST_TIMEOUT(oracle_argkinds, 300)
{
	oracle("argkinds");
}
