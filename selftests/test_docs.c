/*
 * What a newcomer reads before the code: the man pages render without a
 * warning from man-db and groff (as `man --warnings -l` reports them), say
 * every option the tool's --help says, and `make install` puts them where
 * man finds them, with djp's bash completion, which completes subcommands,
 * options, the markers of the -c program or the -x process and the
 * functions of func: patterns.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *const pages[] = { "djp.1", "djprobe.3", "djprobe-markers.7" };

/* The output of the shell command (stdout and stderr as cmd redirects
 * them), malloc'ed; *status its exit status. */
static char *sh_out(const char *cmd, int *status)
{
	size_t cap = 1 << 16, n = 0, r;
	char *buf = malloc(cap);
	FILE *f = popen(cmd, "r");
	CHECK(buf && f);
	while ((r = fread(buf + n, 1, cap - 1 - n, f)) > 0) {
		n += r;
		if (n + 1 == cap) {
			cap *= 2;
			CHECK((buf = realloc(buf, cap)) != NULL);
		}
	}
	buf[n] = 0;
	int st = pclose(f);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return buf;
}

static const char *root(void)
{
	static char path[PATH_MAX];
	CHECK(realpath(djp_test_path("../.."), path));
	return path;
}

static void need_man(void)
{
	int st;
	free(sh_out("command -v man groff >/dev/null 2>&1", &st));
	if (st)
		djp_test_fail(__FILE__, __LINE__, "man or groff is missing: apt-get install man-db groff-base");
}

TEST(man_pages_render_without_warnings)
{
	char cmd[2 * PATH_MAX];
	int st;

	need_man();
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		/* the warnings alone: the page goes to /dev/null */
		snprintf(cmd, sizeof(cmd), "MANWIDTH=80 man --warnings -E UTF-8 -l '%s/docs/man/%s' 2>&1 >/dev/null",
			 root(), pages[i]);
		char *warn = sh_out(cmd, &st);
		fprintf(stderr, "# %s: status %d, %zu bytes of warnings%s%s", pages[i], st, strlen(warn),
			*warn ? ":\n# " : "\n", warn);
		CHECK_EQ(st, 0);
		CHECK_STR(warn, "");
		free(warn);
		/* and it says something: a NAME and a SEE ALSO */
		snprintf(cmd, sizeof(cmd), "MANWIDTH=80 man -E UTF-8 -l '%s/docs/man/%s' 2>/dev/null", root(),
			 pages[i]);
		char *text = sh_out(cmd, &st);
		CHECK_EQ(st, 0);
		CHECK(strstr(text, "NAME\n") && strstr(text, "SEE ALSO\n"));
		free(text);
	}
}

/* Every --option and -x the help of djp, djp list and djp trace prints is
 * in djp(1), so that a new option without its man page fails here. */
TEST(man_page_djp_says_every_option_of_the_help)
{
	char cmd[2 * PATH_MAX], *page, *help;
	int st, n = 0;

	snprintf(cmd, sizeof(cmd), "sed 's/\\\\-/-/g' '%s/docs/man/djp.1'", root());
	page = sh_out(cmd, &st);
	CHECK_EQ(st, 0);
	/* an option is a word of its own; "objdump -d", "bpftrace -p" and
	 * "stap -x" are those tools' */
	snprintf(cmd, sizeof(cmd),
		 "{ %s --help; %s -e '' --help; } 2>&1 | sed -E 's/objdump -d//; s/(stap|bpftrace) -[a-zA-Z]( json)?//g' | "
		 "grep -oE -- '(^|[^a-zA-Z0-9-])--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[^-]*//' | sort -u",
		 tt_djp(), tt_djp());
	help = sh_out(cmd, &st);
	for (char *save, *opt = strtok_r(help, "\n", &save); opt; opt = strtok_r(NULL, "\n", &save)) {
		/* "-c" must stand as a word in the page: bold or a
		 * synopsis bracket after it */
		char word[64];
		snprintf(word, sizeof(word), "%s", opt);
		if (!strcmp(word, "--"))
			continue;
		n++;
		const char *at = page;
		size_t len = strlen(word);
		bool found = false;
		while ((at = strstr(at, word))) {
			char next = at[len];
			if (!(next == '-' || (next >= 'a' && next <= 'z') || (next >= '0' && next <= '9'))) {
				found = true;
				break;
			}
			at += len;
		}
		if (!found)
			fprintf(stderr, "# %s is in the help, not in djp(1)\n", word);
		CHECK(found);
	}
	fprintf(stderr, "# %d options of the help, all in djp(1)\n", n);
	CHECK(n > 20);
	free(help);
	free(page);
}

TEST_TIMEOUT(make_install_puts_the_man_pages_and_the_completion, 120)
{
	char dir[] = "/tmp/djp-install-XXXXXX", cmd[4 * PATH_MAX];
	int st;

	need_man();
	CHECK(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "make -s -C '%s' install DESTDIR='%s' PREFIX=/usr/local 2>&1", root(), dir);
	char *out = sh_out(cmd, &st);
	fprintf(stderr, "# make install: status %d %s", st, out);
	CHECK_EQ(st, 0);
	free(out);
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s", pages[i]);
		char *dot = strrchr(name, '.');
		*dot = 0;
		/* man finds it by name and section, under the prefix */
		snprintf(cmd, sizeof(cmd), "MANPATH='%s/usr/local/share/man' man -w %s '%s' 2>&1", dir, dot + 1, name);
		out = sh_out(cmd, &st);
		fprintf(stderr, "# man -w %s %s: %s", dot + 1, name, out);
		CHECK_EQ(st, 0);
		char want[PATH_MAX];
		snprintf(want, sizeof(want), "%s/usr/local/share/man/man%s/%s\n", dir, dot + 1, pages[i]);
		CHECK_STR(out, want);
		free(out);
	}
	/* a function's name finds djprobe(3) */
	snprintf(cmd, sizeof(cmd), "MANPATH='%s/usr/local/share/man' MANWIDTH=80 man 3 djp_connect_at 2>&1 | head -n 1",
		 dir);
	out = sh_out(cmd, &st);
	fprintf(stderr, "# man 3 djp_connect_at: %s", out);
	CHECK(!strncmp(out, "DJPROBE(3)", 10));
	free(out);
	snprintf(cmd, sizeof(cmd), "bash -c '. %s/usr/local/share/bash-completion/completions/djp && complete -p djp' 2>&1",
		 dir);
	out = sh_out(cmd, &st);
	CHECK_EQ(st, 0);
	CHECK_STR(out, "complete -F _djp djp\n");
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ(system(cmd), 0);
}

/* COMPREPLY for the words as bash gives them (quotes as typed; the last
 * one the word being completed), one per line, sorted; djp is the one
 * built here. */
static char *complete_v(const char *const *words)
{
	char cmd[8 * PATH_MAX];
	int st, n;
	n = snprintf(cmd, sizeof(cmd),
		     "bash -c '. \"$1\"; shift; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _djp; "
		     "printf \"%%s\\n\" \"${COMPREPLY[@]}\" | sort' sh '%s/tools/completion/djp.bash' '%s'",
		     root(), tt_djp());
	for (int i = 0; words[i]; i++)
		n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " '%s'", words[i]);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n, " 2>&1");
	char *out = sh_out(cmd, &st);
	fprintf(stderr, "# djp");
	for (int i = 0; words[i]; i++)
		fprintf(stderr, " %s", words[i]);
	fprintf(stderr, "<TAB>: %s%s", strchr(out, '\n') != strrchr(out, '\n') ? "\n" : "", out);
	CHECK_EQ(st, 0);
	return out;
}
#define complete(...) complete_v((const char *const[]){ __VA_ARGS__, NULL })

/* As bash calls _djp for "djp trace -c EX TYPED": COMP_LINE and COMP_POINT
 * set, and TYPED split into `split` as COMP_WORDBREAKS splits it. */
static char *complete_line(const char *ex, const char *typed, const char *const *split)
{
	char cmd[8 * PATH_MAX];
	int st, n;
	n = snprintf(cmd, sizeof(cmd),
		     "COMP_LINE='djp trace -c %s %s' bash -c '. \"$1\"; shift; COMP_POINT=${#COMP_LINE}; "
		     "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _djp; "
		     "printf \"%%s\\n\" \"${COMPREPLY[@]}\" | sort' sh '%s/tools/completion/djp.bash' '%s' trace -c '%s'",
		     ex, typed, root(), tt_djp(), ex);
	for (int i = 0; split[i]; i++)
		n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " '%s'", split[i]);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n, " 2>&1");
	char *out = sh_out(cmd, &st);
	fprintf(stderr, "# djp trace -c EX %s<TAB> (split at ':'): %s%s", typed,
		strchr(out, '\n') != strrchr(out, '\n') ? "\n" : "", out);
	CHECK_EQ(st, 0);
	return out;
}

TEST_TIMEOUT(bash_completion_completes_commands_options_markers_and_functions, 60)
{
	char ex[PATH_MAX], quoted[PATH_MAX + 8], pid[16], cmd[2 * PATH_MAX];
	char *out;
	int st;

	snprintf(ex, sizeof(ex), "%s", djp_test_path("progs/markers_example"));
	CHECK_STR((out = complete("l")), "list\n");
	free(out);
	CHECK_STR((out = complete("tr")), "trace\n");
	free(out);
	CHECK_STR((out = complete("list", "--no")), "--no-header\n");
	free(out);
	CHECK_STR((out = complete("trace", "--js")), "--json\n");
	free(out);
	CHECK_STR((out = complete("trace", "--bu")), "--buffer-size\n");
	free(out);
	/* the markers of -c's program, its first word, quoted as typed */
	snprintf(quoted, sizeof(quoted), "\"%s --x\"", ex);
	CHECK_STR((out = complete("trace", "-c", quoted, "ex_ty")), "ex_types\n");
	free(out);
	out = complete("trace", "-c", ex, "ex_");
	CHECK_EQ(tt_count(out, "\n"), 9);
	CHECK(strstr(out, "ex_sizes\n") && strstr(out, "ex_twelve\n"));
	free(out);
	/* the functions of func: */
	CHECK_STR((out = complete("trace", "-c", ex, "func:ex_si")), "func:ex_sizes\n");
	free(out);
	/* -a PATH: the markers of the first PATH, and a PATH is a file */
	CHECK_STR((out = complete("trace", "-a", ex, "ex_ty")), "ex_types\n");
	free(out);
	snprintf(quoted, sizeof(quoted), "%.*s", (int)strlen(ex) - 3, ex);
	out = complete("trace", "-a", quoted);
	CHECK(!strncmp(out, ex, strlen(ex)) && out[strlen(ex)] == '\n');
	free(out);
	/* as bash calls it, with the words split at ':' (COMP_WORDBREAKS)
	 * and the line: the replies replace what follows the ':' */
	CHECK_STR((out = complete_line(ex, "func:mai", (const char *const[]){ "func", ":", "mai", NULL })), "main\n");
	free(out);
	out = complete_line(ex, "func:", (const char *const[]){ "func", ":", NULL });
	CHECK(strstr(out, "\nmain\n") && strstr(out, "ex_sizes\n") && !strstr(out, "func:"));
	free(out);

	/* -x PID: the markers of the running process, those djp list says */
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "100000", NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	snprintf(cmd, sizeof(cmd), "%s list --no-header %s | awk '{ print $1 }' | sort -u", tt_djp(), pid);
	char *want = sh_out(cmd, &st);
	CHECK_EQ(st, 0);
	CHECK(tt_count(want, "\n") > 2);
	out = complete("trace", "-x", pid, "");
	/* every marker, then func: and line: */
	char *all = malloc(strlen(want) + 32);
	CHECK(all);
	snprintf(cmd, sizeof(cmd), "printf '%%s' \"$(printf '%%sfunc:\\nline:\\n' '%s' | sort -u)\"", want);
	free(all);
	all = sh_out(cmd, &st);
	CHECK_EQ(st, 0);
	size_t l = strlen(all);
	all[l] = '\n';
	all[l + 1] = 0;
	CHECK_STR(out, all);
	free(out);
	free(all);
	free(want);
	tt_kill(t);
}

/* djp --help: every command with an example of its own, the script front
 * end too, each example a djp command line of that command. */
TEST(djp_help_gives_an_example_for_each_command)
{
	char cmd[PATH_MAX + 32];
	int st;
	snprintf(cmd, sizeof(cmd), "%s --help", tt_djp());
	char *help = sh_out(cmd, &st);
	CHECK_EQ(st, 0);
	const char *cmds = strstr(help, "commands:\n");
	CHECK(cmds);
	static const char *const want[][2] = { { "  list ", "e.g. djp list " },
					      { "  trace ", "e.g. djp trace " },
					      { "  -e ", "e.g. djp -e " } };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *at = strstr(cmds, want[i][0]), *eg = at ? strchr(at, '\n') : NULL;
		fprintf(stderr, "# %s: %.*s\n", want[i][0], eg ? (int)strcspn(eg + 1, "\n") : 0, eg ? eg + 1 : "");
		CHECK(eg && !strncmp(eg + 1 + strspn(eg + 1, " "), want[i][1], strlen(want[i][1])));
	}
	free(help);
}

/* The summary of djp trace says in its header what its columns count. */
TEST_TIMEOUT(trace_summary_header_says_what_its_columns_mean, 60)
{
	char cmd[3 * PATH_MAX], server[PATH_MAX];
	int st;
	snprintf(server, sizeof(server), "%s", djp_test_path("../examples/reqserver"));
	snprintf(cmd, sizeof(cmd), "%s trace -o /dev/null -c '%s --requests 20' 'req_*' 2>&1 >/dev/null", tt_djp(),
		 server);
	char *sum = sh_out(cmd, &st);
	fprintf(stderr, "%s", sum);
	CHECK_EQ(st, 0);
	CHECK(strstr(sum, "\n  MARKER ") && strstr(sum, "\n  THREAD "));
	/* each header line, alone */
	const char *m = strstr(sum, "\n  MARKER ") + 1, *t = strstr(sum, "\n  THREAD ") + 1;
	char mline[256], tline[256];
	snprintf(mline, sizeof(mline), "%.*s", (int)strcspn(m, "\n"), m);
	snprintf(tline, sizeof(tline), "%.*s", (int)strcspn(t, "\n"), t);
	CHECK(strstr(mline, " LOST  (EVENTS recorded and read; LOST dropped: a full ring, overwritten, or a probe in a "
			    "probe)"));
	CHECK(strstr(tline, " LOST  (the same, by thread id)"));
	free(sum);
}

/* The README's "First five minutes", cut out of README.md and run as a
 * person pasting it would, with sh at the top of the tree: each step says
 * what it promises.  It runs in a process group of its own, so that
 * nothing it started outlives it. */
TEST_TIMEOUT(readme_first_five_minutes_run_as_written, 400)
{
	char cmd[4 * PATH_MAX], out[] = "/tmp/djp-readme-XXXXXX";
	int st, fd = mkstemp(out);

	CHECK(fd >= 0);
	/* the block: from the ```sh after the heading to the next ``` */
	snprintf(cmd, sizeof(cmd),
		 "awk '/^## First five minutes$/ { h = 1 } h && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b' "
		 "'%s/README.md'",
		 root());
	char *block = sh_out(cmd, &st);
	CHECK_EQ(st, 0);
	fprintf(stderr, "# %d lines in the block\n", tt_count(block, "\n"));
	CHECK(tt_count(block, "\n") > 10);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (chdir(root()))
			_exit(126);
		execl("/bin/sh", "sh", "-c", block, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	kill(-pid, SIGKILL);
	char *text = sh_out(strcat(strcpy(cmd, "cat "), out), &(int){ 0 });
	unlink(out);
	close(fd);
	fprintf(stderr, "# sh: status %#x\n", st);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "%s", text);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* djp --help: the commands with an example; man: the page */
	CHECK(strstr(text, "usage: djp COMMAND"));
	CHECK(strstr(text, "e.g. djp list "));
	CHECK(strstr(text, "DJP(1)"));
	/* djp list: the header, then python's probes */
	CHECK(strstr(text, "\nNAME ") && strstr(text, "\npython:gc__start "));
	/* -x into python: events, and a summary with none lost */
	CHECK(strstr(text, " python:gc__start generation=2\n"));
	CHECK(strstr(text, "(/usr/bin/python3.11): "));
	CHECK(strstr(strstr(text, "(/usr/bin/python3.11): "), " events, 0 lost"));
	/* the script's aggregates, one line a kind */
	CHECK(strstr(text, "t[\"get\"] @count="));
	/* the demo, down to its table, bpftrace measured (make check
	 * installs it) */
	const char *table = strstr(text, "TOOL ");
	CHECK(table);
	double d = 0, b = 0;
	const char *rd = strstr(table, "\ndjp "), *rb = strstr(table, "\nbpftrace ");
	CHECK(rd && rb);
	CHECK_EQ(sscanf(rd, "\ndjp %lf", &d), 1);
	if (sscanf(rb, "\nbpftrace %lf", &b) != 1)
		djp_test_fail(__FILE__, __LINE__, "the demo did not measure bpftrace (make check installs it): %.200s",
			      rb + 1);
	fprintf(stderr, "# demo: djp %.1f ns a hit, bpftrace %.1f ns\n", d, b);
	CHECK(strstr(text, "== demo done"));
	free(text);
	free(block);
}
