/* Names and paths from a target or a file reach the terminal escaped on
 * every path: a marker named "t ESC [2J BEL t", an SDT provider holding
 * ESC ] 0 ; ... BEL (a terminal's set-title sequence), in a program whose
 * file name holds them too, printed by djp trace (lines, summary, JSON,
 * errors), djp list (FILE and PID) and scripts' pp(), ppfunc() and
 * $$name (a map's key too). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define EVIL_DIR "/tmp/djp-evil-\x1b]0;T\x07-XXXXXX"
#define EVIL_MARK "t\x1b[2J\x07t" /* as long as "tt_tick" */
#define EVIL_PROV "s\x1b]0;T\x07get" /* as long as "sdt_target" */

struct evil {
	char dir[64], target[128], sdt[128];
};

/* Replace every `from` (a NUL-terminated name in the file) by `to`. */
static void patch_all(const char *path, const char *from, const char *to)
{
	static char buf[4 << 20];
	size_t n, len = strlen(from), hits = 0;
	int fd = open(path, O_RDWR);

	CHECK(fd >= 0);
	n = (size_t)read(fd, buf, sizeof(buf));
	CHECK(n > 0 && n < sizeof(buf));
	for (size_t i = 1; i + len < n; i++)
		if (!memcmp(buf + i, from, len + 1) && (buf[i - 1] == 0 || (unsigned char)buf[i - 1] == 0xff)) {
			CHECK_EQ(pwrite(fd, to, len, (off_t)i), (ssize_t)len);
			hits++;
		}
	close(fd);
	CHECK(hits > 0);
}

static void copy(const char *from, const char *to)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	CHECK_EQ(system(cmd), 0);
}

static void evil_make(struct evil *e)
{
	snprintf(e->dir, sizeof(e->dir), "%s", EVIL_DIR);
	CHECK(mkdtemp(e->dir));
	snprintf(e->target, sizeof(e->target), "%s/trace_target", e->dir);
	snprintf(e->sdt, sizeof(e->sdt), "%s/sdt_target", e->dir);
	copy(tt_target(false), e->target);
	copy(tt_sdt_target(), e->sdt);
	patch_all(e->target, "tt_tick", EVIL_MARK);
	patch_all(e->sdt, "sdt_target", EVIL_PROV);
}

static void evil_remove(struct evil *e)
{
	unlink(e->target);
	unlink(e->sdt);
	rmdir(e->dir);
}

/* No byte a terminal acts on: controls but newline and tab, and DEL. */
static void check_clean(const char *what, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			djp_test_fail(__FILE__, __LINE__, "%s: raw byte 0x%02x at %zu: %.*s", what, c, i,
				      (int)(n - i < 200 ? n - i : 200), s + i);
	}
}

static struct tproc *run(char *const argv[], const char *input)
{
	struct tproc *p = tt_spawn(argv, false, -1);
	if (input)
		tt_send(p, input);
	close(p->in);
	p->in = -1;
	CHECK(tt_finish(p, 60000) >= 0);
	check_clean("stdout", p->obuf, p->olen);
	check_clean("stderr", p->ebuf, p->elen);
	return p;
}

TEST_TIMEOUT(trace_escapes_names_everywhere, 120)
{
	struct evil e;
	char cmd[512], script[512];
	struct tproc *p, *t;

	evil_make(&e);
	snprintf(cmd, sizeof(cmd), "'%s' --ticks 3 --no-stdin", e.target);
	/* lines and summary */
	p = run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "t*t", NULL }, NULL);
	if (tt_count(p->obuf, " t\\x1b[2J\\x07t i=") != 3 || !strstr(p->ebuf, "  t\\x1b[2J\\x07t "))
		djp_test_fail(__FILE__, __LINE__, "stdout: %s stderr: %s", p->obuf, p->ebuf);
	CHECK(strstr(p->ebuf, "djp-evil-\\x1b]0;T\\x07-"));
	free(p);
	/* JSON */
	p = run((char *const[]){ (char *)tt_djp(), "trace", "--json", "-c", cmd, "t*t", NULL }, NULL);
	CHECK_EQ(tt_count(p->obuf, "\"name\":\"t\\u001b[2J\\u0007t\""), 3);
	free(p);
	/* an error naming the command */
	p = run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "no_such_marker", NULL }, NULL);
	CHECK(strstr(p->ebuf, "matches no marker"));
	free(p);
	snprintf(cmd, sizeof(cmd), "'%s/no_such_program'", e.dir);
	p = run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "t*t", NULL }, NULL);
	CHECK(strstr(p->ebuf, "cannot execute"));
	free(p);
	p = run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", "probe process.mark(\"t*t\") {}", NULL }, NULL);
	CHECK(strstr(p->ebuf, "cannot execute"));
	free(p);
	/* an SDT provider, traced and in the summary */
	snprintf(cmd, sizeof(cmd), "'%s'", e.sdt);
	p = run((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "s*:strs", NULL }, "strings 2\n");
	if (tt_count(p->obuf, " s\\x1b]0;T\\x07get:strs ") != 2 || !strstr(p->ebuf, "  s\\x1b]0;T\\x07get:strs "))
		djp_test_fail(__FILE__, __LINE__, "stdout: %s stderr: %s", p->obuf, p->ebuf);
	free(p);
	/* djp list FILE */
	p = run((char *const[]){ (char *)tt_djp(), "list", e.target, NULL }, NULL);
	CHECK(strstr(p->obuf, "t\\x1b[2J\\x07t"));
	free(p);
	p = run((char *const[]){ (char *)tt_djp(), "list", e.sdt, NULL }, NULL);
	CHECK(strstr(p->obuf, "s\\x1b]0;T\\x07get:strs"));
	free(p);
	/* djp list PID */
	t = tt_spawn((char *const[]){ e.target, "--ticks", "0", NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(cmd, sizeof(cmd), "%d", (int)t->pid);
	p = run((char *const[]){ (char *)tt_djp(), "list", cmd, NULL }, NULL);
	CHECK(strstr(p->obuf, "t\\x1b[2J\\x07t"));
	free(p);
	tt_end(t);
	/* a script's pp() and ppfunc() */
	snprintf(cmd, sizeof(cmd), "'%s' --ticks 2 --no-stdin", e.target);
	snprintf(script, sizeof(script),
		 "global c; probe process.mark(\"t*t\") { printf(\"%%s|%%s|%%s\\n\", pp(), ppfunc(), $$name); c[$$name]++ } "
		 "probe end { foreach (k in c) printf(\"%%s=%%d\\n\", k, c[k]) }");
	p = run((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, NULL);
	CHECK_EQ(tt_count(p->obuf, "/trace_target\").mark(\"t\\x1b[2J\\x07t\")|ticker|t\\x1b[2J\\x07t\n"), 2);
	CHECK(strstr(p->obuf, "\nt\\x1b[2J\\x07t=2\n"));
	CHECK(strstr(p->obuf, "process(\"/tmp/djp-evil-\\x1b]0;T\\x07-"));
	free(p);
	/* and its listing of the points (-l) */
	snprintf(script, sizeof(script), "process(\"%s\").mark(\"*\")", e.sdt);
	p = run((char *const[]){ (char *)tt_djp(), "-l", script, NULL }, NULL);
	CHECK(strstr(p->obuf, ".provider(\"s\\x1b]0;T\\x07get\").mark(\"strs\")"));
	free(p);
	evil_remove(&e);
}
