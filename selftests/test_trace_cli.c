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
