/*
 * The selftest runner.  Every test runs in a forked child that is the leader
 * of its own process group, so a test that hangs, crashes or leaves children
 * behind is killed as a whole when its timeout expires.  The parent prints
 * TAP ("ok 3 name", "not ok 4 name # timeout after 30 s") and, last, the
 * single line "N passed, N failed" (", N skipped" when some were).
 *
 * Usage: djp-selftests [-l] [-t NAME]...   (-l lists, -t picks by name)
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

#define SKIP_STATUS 77
#define MAX_TESTS 1024

struct test {
	const char *name, *file;
	djp_test_fn fn;
	int timeout;
};
static struct test tests[MAX_TESTS];
static int ntests;

void djp_test_register(const char *name, djp_test_fn fn, const char *file, int timeout)
{
	if (ntests == MAX_TESTS) {
		fprintf(stderr, "harness: more than %d tests\n", MAX_TESTS);
		exit(2);
	}
	tests[ntests++] = (struct test){ name, file, fn, timeout };
}

void djp_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "# %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(1);
}

void djp_test_skip(const char *why)
{
	fflush(stdout);
	fprintf(stderr, "# skip: %s\n", why);
	_exit(SKIP_STATUS);
}

static bool test_path_into(char *out, size_t size, const char *rel)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return false;
	exe[n] = 0;
	snprintf(out, size, "%s/%s", dirname(exe), rel);
	return true;
}

const char *djp_test_path(const char *rel)
{
	static __thread char buf[PATH_MAX];
	return test_path_into(buf, sizeof(buf), rel) ? buf : rel;
}

char *djp_test_path_dup(const char *rel)
{
	char buf[PATH_MAX];
	return strdup(test_path_into(buf, sizeof(buf), rel) ? buf : rel);
}

static int by_file_then_order(const void *a, const void *b)
{
	const struct test *x = a, *y = b;
	int c = strcmp(x->file, y->file);
	return c ? c : (x < y ? -1 : x > y);
}

/* Run one test; returns 0 pass, 1 fail, 2 skip. */
static int run_one(int num, const struct test *t)
{
	struct timespec start, now;
	int status = 0;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		printf("not ok %d %s # fork: %s\n", num, t->name, strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		t->fn();
		fflush(stdout);
		_exit(0);
	}
	setpgid(pid, pid);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			printf("not ok %d %s # waitpid: %s\n", num, t->name, strerror(errno));
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= t->timeout) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			printf("not ok %d %s # timeout after %d s\n", num, t->name, t->timeout);
			return 1;
		}
		usleep(2000);
	}
	kill(-pid, SIGKILL); /* whatever the test left behind */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("ok %d %s\n", num, t->name);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_STATUS) {
		printf("ok %d %s # SKIP\n", num, t->name);
		return 2;
	}
	if (WIFSIGNALED(status))
		printf("not ok %d %s # killed by signal %d (%s)\n", num, t->name, WTERMSIG(status),
		       strsignal(WTERMSIG(status)));
	else
		printf("not ok %d %s # exit status %d\n", num, t->name, WEXITSTATUS(status));
	return 1;
}

int main(int argc, char **argv)
{
	const char *picked[MAX_TESTS];
	int npicked = 0, list = 0, opt, counts[3] = { 0, 0, 0 }, selected = 0, num = 0;

	while ((opt = getopt(argc, argv, "lt:")) != -1) {
		if (opt == 'l')
			list = 1;
		else if (opt == 't' && npicked < MAX_TESTS)
			picked[npicked++] = optarg;
		else {
			fprintf(stderr, "usage: %s [-l] [-t NAME]...\n", argv[0]);
			return 2;
		}
	}
	qsort(tests, ntests, sizeof(tests[0]), by_file_then_order);
	for (int i = 0; i < npicked; i++) {
		int found = 0;
		for (int j = 0; j < ntests; j++)
			found |= !strcmp(tests[j].name, picked[i]);
		if (!found) {
			fprintf(stderr, "%s: no test named '%s' (-l lists them)\n", argv[0], picked[i]);
			return 2;
		}
	}
	for (int j = 0; j < ntests; j++) {
		int want = !npicked;
		for (int i = 0; i < npicked; i++)
			want |= !strcmp(tests[j].name, picked[i]);
		if (!want)
			continue;
		if (list) {
			printf("%s\n", tests[j].name);
			continue;
		}
		selected++;
	}
	if (list)
		return 0;
	printf("TAP version 13\n1..%d\n", selected);
	for (int j = 0; j < ntests; j++) {
		int want = !npicked;
		for (int i = 0; i < npicked; i++)
			want |= !strcmp(tests[j].name, picked[i]);
		if (want)
			counts[run_one(++num, &tests[j])]++;
	}
	if (counts[2])
		printf("%d passed, %d failed, %d skipped\n", counts[0], counts[1], counts[2]);
	else
		printf("%d passed, %d failed\n", counts[0], counts[1]);
	return counts[1] ? 1 : 0;
}
