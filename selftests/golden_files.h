/*
 * What the golden-output tests (test_script_golden.c, test_script_corpus.c)
 * share: reading and writing whole expected-output files, and the scripts
 * of a directory in name order.
 */
#ifndef DJP_SELFTESTS_GOLDEN_FILES_H
#define DJP_SELFTESTS_GOLDEN_FILES_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static inline char *golden_slurp(const char *path)
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

static inline void golden_spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* scandir filter and order: NAME.stp files by name */
static inline int golden_stp_only(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 4 && !strcmp(d->d_name + n - 4, ".stp");
}

static inline int golden_by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* What a command printed and how it ended. */
struct golden_result {
	char *out, *err; /* malloc'd, never NULL */
	int status;	 /* exit code, or 128 + signal */
};

/* Run argv[0] with argv in directory cwd, stdin from /dev/null. */
static inline void golden_run(const char *cwd, char *const argv[], struct golden_result *r)
{
	char outp[64], errp[64];
	int status;
	pid_t pid;

	snprintf(outp, sizeof(outp), "/tmp/djp-golden-%d.out", getpid());
	snprintf(errp, sizeof(errp), "/tmp/djp-golden-%d.err", getpid());
	pid = fork();
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int in = open("/dev/null", O_RDONLY);
		if (o < 0 || e < 0 || in < 0 || chdir(cwd))
			_exit(127);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	r->out = golden_slurp(outp);
	r->err = golden_slurp(errp);
	if (!r->out)
		r->out = strdup("");
	if (!r->err)
		r->err = strdup("");
	unlink(outp);
	unlink(errp);
}

/*
 * got against DIR/NAME.EXT (absent: empty); 0 when equal, else 1 after
 * printing both.  With rebase, the file is written from got instead
 * (removed when got is empty, unless keep_empty), and 0 returned.
 */
static inline int golden_compare(const char *dir, const char *name, const char *ext, const char *got, bool rebase,
				 bool keep_empty)
{
	char path[2 * PATH_MAX];
	char *exp;
	int bad;

	snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext);
	if (rebase) {
		if (*got || keep_empty)
			golden_spit(path, got);
		else
			unlink(path);
		return 0;
	}
	exp = golden_slurp(path);
	bad = strcmp(got, exp ? exp : "") != 0;
	if (bad)
		fprintf(stderr, "# %s: %s differs\n# --- expected\n%s# --- got\n%s", name, ext, exp ? exp : "", got);
	free(exp);
	return bad;
}

/* The exit status against DIR/NAME.status (absent: 0), as golden_compare. */
static inline int golden_compare_status(const char *dir, const char *name, int status, bool rebase)
{
	char text[16];
	snprintf(text, sizeof(text), "%d\n", status);
	return golden_compare(dir, name, "status", status ? text : "", rebase, false);
}

#endif
