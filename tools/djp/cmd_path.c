/*
 * The program a -c command names (cmd_path.h).
 *
 * A command that is a plain word list is run with execvp (session_target.c),
 * so its first word is looked up in PATH as execvp does: a word with a '/'
 * is a path, any other is tried in each directory of PATH (the C library's
 * default search path when PATH is unset), the first executable regular
 * file winning.  The result is made canonical with realpath, as the agent
 * reports its program from /proc/self/exe.  A command named by PATH may
 * be a shim script (pyenv's python3.11 is `#!/usr/bin/env bash`): the
 * process that starts is then /usr/bin/env, not the file found, and that
 * difference is what tells the tool to wait for the program that runs
 * later in the same process.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wordexp.h>

#include "cmd_path.h"

static bool executable(const char *path)
{
	struct stat st;
	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

/* execvp's search for word (no '/'): the first executable file in PATH. */
static bool search_path(const char *word, char *found, size_t sz)
{
	char defpath[256];
	const char *path = getenv("PATH"), *p, *end;

	if (!path) {
		if (!confstr(_CS_PATH, defpath, sizeof(defpath)))
			return false;
		path = defpath;
	}
	for (p = path;; p = end + 1) {
		end = strchrnul(p, ':');
		/* an empty entry is the current directory, as for execvp */
		int n = snprintf(found, sz, "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "", word);
		if (n > 0 && (size_t)n < sz && executable(found))
			return true;
		if (!*end)
			return false;
	}
}

bool cmd_path_resolve(const char *cmd, char *buf, size_t sz)
{
	char found[PATH_MAX], real[PATH_MAX];
	wordexp_t we;
	bool ok = false;

	if (wordexp(cmd, &we, WRDE_NOCMD))
		return false;
	if (we.we_wordc && *we.we_wordv[0]) {
		const char *w = we.we_wordv[0];
		if (strchr(w, '/'))
			ok = snprintf(found, sizeof(found), "%s", w) < (int)sizeof(found) && executable(found);
		else
			ok = search_path(w, found, sizeof(found));
	}
	wordfree(&we);
	if (!ok || !realpath(found, real) || strlen(real) >= sz)
		return false;
	strcpy(buf, real);
	return true;
}

bool cmd_path_runs_other(const char *cmd, const char *program)
{
	char named[PATH_MAX], real[PATH_MAX];

	if (!cmd || !program || !*program || !cmd_path_resolve(cmd, named, sizeof(named)))
		return false;
	if (realpath(program, real))
		program = real;
	return strcmp(named, program) != 0;
}
