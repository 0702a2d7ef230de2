/*
 * `djp trace -f ctf`: the CTF trace of a run, read by the tools people use
 * and by djp itself.  Each test runs trace_target once under `djp trace`
 * writing text, JSON and CTF of the same events (-f text -o ... -f json -o
 * ... -f ctf -o DIR), then
 *   - babeltrace2's Python bindings read the CTF (selftests/ctf/ctf_check.py)
 *     and every event, field, value and discarded-events count must equal
 *     the text, the JSON and the summary;
 *   - the babeltrace2 CLI reads it, one line an event, without a warning
 *     when nothing was lost;
 *   - `djp trace --from DIR` prints the text and the JSON byte for byte as
 *     the run printed them, and writes a CTF trace that reads back the same.
 * babeltrace2 and python3-bt2 are installed by make check
 * (DEB_PACKAGES_CHECK); without them the tests fail.
 */
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;

	*len = 0;
	if (!f)
		djp_test_fail(__FILE__, __LINE__, "%s: cannot read it", path);
	for (size_t n;; *len += n) {
		if (*len + 65536 > cap)
			CHECK((buf = realloc(buf, cap = 2 * cap + 65536)) != NULL);
		if (!(n = fread(buf + *len, 1, cap - *len - 1, f)))
			break;
	}
	fclose(f);
	buf[*len] = 0;
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
}

/* Two files the same, byte for byte; fails naming the first difference. */
static void same_files(const char *a, const char *b)
{
	size_t na, nb, i;
	char *x = slurp(a, &na), *y = slurp(b, &nb);

	for (i = 0; i < na && i < nb && x[i] == y[i]; i++)
		;
	if (i != na || i != nb)
		djp_test_fail(__FILE__, __LINE__, "%s (%zu bytes) and %s (%zu bytes) differ at byte %zu: %.80s | %.80s",
			      a, na, b, nb, i, x + (i < na ? i : na), y + (i < nb ? i : nb));
	free(x);
	free(y);
}

/* argv run to its end: its status must be 0; the process is returned. */
static struct tproc *run_ok(char *const argv[])
{
	struct tproc *p = tt_spawn(argv, false, -1);
	int st = tt_finish(p, 60000);

	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "%s %s: status %#x; stdout %.1500s; stderr %.2500s", argv[0],
			      argv[1] ? argv[1] : "", st, p->obuf, p->ebuf);
	return p;
}

/* In a new directory dir: trace_target run under djp trace with OPTS,
 * fed `input`, writing live.txt, live.json, the CTF trace ctf/ and the
 * summary summary.txt. */
static void ctf_run(char *dir, const char *const *opts, const char *const *patterns, const char *input)
{
	char cmd[4096], txt[PATH_MAX], js[PATH_MAX], ctf[PATH_MAX], sum[PATH_MAX];
	char *argv[40];
	struct tproc *p;
	int n = 0, st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(txt, sizeof(txt), "%s/live.txt", dir);
	snprintf(js, sizeof(js), "%s/live.json", dir);
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	snprintf(sum, sizeof(sum), "%s/summary.txt", dir);
	snprintf(cmd, sizeof(cmd), "%s --ticks 5 --tick-us 1000", tt_target(false));
	argv[n++] = (char *)tt_djp();
	argv[n++] = "trace";
	for (; opts && *opts; opts++)
		argv[n++] = (char *)*opts;
	argv[n++] = "-f", argv[n++] = "text", argv[n++] = "-o", argv[n++] = txt;
	argv[n++] = "--format=json", argv[n++] = "-o", argv[n++] = js;
	argv[n++] = "-f", argv[n++] = "ctf", argv[n++] = "-o", argv[n++] = ctf;
	argv[n++] = "-c", argv[n++] = cmd;
	for (; *patterns; patterns++)
		argv[n++] = (char *)*patterns;
	argv[n] = NULL;
	p = tt_spawn(argv, false, -1);
	tt_send(p, input);
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 60000);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp trace: status %#x; stderr %.3000s", st, p->ebuf);
	write_file(sum, p->ebuf);
	free(p);
}

/* babeltrace2's Python bindings read dir/ctf: equal to the text, the JSON
 * and the summary (ctf_check.py). */
static void bt2_check(const char *dir)
{
	char py[PATH_MAX], ctf[PATH_MAX], txt[PATH_MAX], js[PATH_MAX], sum[PATH_MAX];
	struct tproc *p;

	if (!realpath(djp_test_path("../../selftests/ctf/ctf_check.py"), py) &&
	    !realpath("selftests/ctf/ctf_check.py", py))
		djp_test_fail(__FILE__, __LINE__, "selftests/ctf/ctf_check.py not found");
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	snprintf(txt, sizeof(txt), "%s/live.txt", dir);
	snprintf(js, sizeof(js), "%s/live.json", dir);
	snprintf(sum, sizeof(sum), "%s/summary.txt", dir);
	/* Debian's python3, which has the python3-bt2 bindings */
	p = run_ok((char *const[]){ "/usr/bin/python3", py, ctf, txt, js, sum, NULL });
	printf("# %s", p->obuf);
	free(p);
}

/* The babeltrace2 CLI prints one line an event, and nothing on stderr
 * when nothing was lost (its discarded-events notice otherwise). */
static void babeltrace_cli(const char *dir, bool lossless)
{
	char ctf[PATH_MAX], txt[PATH_MAX];
	struct tproc *p;
	size_t n;
	char *text;

	if (access("/usr/bin/babeltrace2", X_OK))
		djp_test_fail(__FILE__, __LINE__, "babeltrace2 is not installed (make check installs it)");
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	snprintf(txt, sizeof(txt), "%s/live.txt", dir);
	p = run_ok((char *const[]){ "/usr/bin/babeltrace2", ctf, NULL });
	text = slurp(txt, &n);
	CHECK_EQ(tt_count(p->obuf, "\n"), tt_count(text, "\n"));
	if (lossless && p->elen)
		djp_test_fail(__FILE__, __LINE__, "babeltrace2 said: %.2000s", p->ebuf);
	if (!lossless)
		CHECK(strstr(p->ebuf, "discarded"));
	free(text);
	free(p);
}

/* djp trace --from dir/ctf: the live text and JSON again, byte for byte,
 * and a CTF trace of its own that reads back the same. */
static void from_check(const char *dir)
{
	char ctf[PATH_MAX], ctf2[PATH_MAX], live[PATH_MAX], back[PATH_MAX], out[PATH_MAX];
	const char *const fmts[] = { "text", "json" };

	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	snprintf(ctf2, sizeof(ctf2), "%s/ctf2", dir);
	for (int i = 0; i < 2; i++) {
		snprintf(live, sizeof(live), "%s/live.%s", dir, i ? "json" : "txt");
		snprintf(back, sizeof(back), "%s/back.%s", dir, i ? "json" : "txt");
		free(run_ok((char *const[]){ (char *)tt_djp(), "trace", "--from", ctf, "-f", (char *)fmts[i], "-o", back,
					     NULL }));
		same_files(live, back);
	}
	free(run_ok((char *const[]){ (char *)tt_djp(), "trace", "--from", ctf, "-f", "ctf", "-o", ctf2, NULL }));
	snprintf(live, sizeof(live), "%s/live.txt", dir);
	snprintf(out, sizeof(out), "%s/back2.txt", dir);
	free(run_ok((char *const[]){ (char *)tt_djp(), "trace", "--from", ctf2, "-o", out, NULL }));
	same_files(live, out);
}

TEST_TIMEOUT(trace_ctf_babeltrace, 120)
{
	char dir[] = "/tmp/djp-ctf-XXXXXX";
	/* strings (cut at 16 bytes, control bytes, NULL, unreadable), every
	 * size and sign, octal and hex, values too wide for their %hhd and
	 * %hx (the wide class), a child of fork's streams */
	const char *const opts[] = { "--max-string-len", "16", NULL };
	const char *const patterns[] = { "tt_*", "tt_strs=good=%s null=%s bad=%s unmapped=%s none=%s cut=%s",
					 "tt_kinds=c=%hhd s=%hx u=%o l=%ld x=%#X", "tt_burst=a=%hhd b=%hd", NULL };

	ctf_run(dir, opts, patterns, "kinds 1\nkinds 2\nevil 2\nstrings 2\nburst 300\nfork 2 3\n");
	bt2_check(dir);
	babeltrace_cli(dir, true);
	from_check(dir);
	rm_tree(dir);
}

/* A ring too small for a burst: the losses of each thread, in its
 * stream's packets, are the summary's. */
TEST_TIMEOUT(trace_ctf_lost, 120)
{
	char dir[] = "/tmp/djp-ctf-XXXXXX";
	const char *const opts[] = { "--buffer-size", "16384", NULL };
	const char *const patterns[] = { "tt_burst", "tt_main", NULL };
	unsigned long long ev, lost;
	char sum[PATH_MAX], *text;
	size_t n;

	ctf_run(dir, opts, patterns, "burst 20000\nfork 2 20000\n");
	snprintf(sum, sizeof(sum), "%s/summary.txt", dir);
	text = slurp(sum, &n);
	CHECK(tt_summary_row(text, "tt_burst", &ev, &lost));
	CHECK(lost > 0); /* the ring of 16 KiB cannot hold 20000 events */
	free(text);
	bt2_check(dir);
	babeltrace_cli(dir, false);
	from_check(dir);
	rm_tree(dir);
}

/* --snapshot: the flight recorder's events, written at the end, in CTF
 * as in text. */
TEST_TIMEOUT(trace_ctf_snapshot, 120)
{
	char dir[] = "/tmp/djp-ctf-XXXXXX";
	const char *const opts[] = { "--snapshot", "--buffer-size", "16384", NULL };
	const char *const patterns[] = { "tt_*", NULL };

	ctf_run(dir, opts, patterns, "burst 5000\nkinds 3\n");
	bt2_check(dir);
	from_check(dir);
	rm_tree(dir);
}

/* Bad input: one line naming the thing, status 2 or 1, nothing run. */
TEST(trace_ctf_errors)
{
	char dir[] = "/tmp/djp-ctf-XXXXXX", path[PATH_MAX], cmd[PATH_MAX];
	struct tproc *p;
	int st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(cmd, sizeof(cmd), "%s --ticks 1 --no-stdin", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-f", "ctf", "-c", cmd, "tt_*", NULL }, false, -1);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	CHECK(strstr(p->ebuf, "-f ctf needs -o DIR"));
	CHECK_EQ(tt_lines(p->ebuf), 1);
	CHECK(!strstr(p->obuf, "ready")); /* the command never ran */
	free(p);

	/* a directory that holds something: refused, left as it was */
	snprintf(path, sizeof(path), "%s/keep", dir);
	write_file(path, "x");
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-f", "ctf", "-o", dir, "-c", cmd, "tt_*", NULL }, false,
		     -1);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(strstr(p->ebuf, "not empty"));
	CHECK_EQ(tt_lines(p->ebuf), 1);
	CHECK(!strstr(p->obuf, "ready"));
	CHECK(access(path, F_OK) == 0);
	free(p);

	/* --from: not a trace, a trace of someone else's, a PATTERN */
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--from", dir, NULL }, false, -1);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(strstr(p->ebuf, "no CTF trace here"));
	CHECK_EQ(tt_lines(p->ebuf), 1);
	free(p);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	write_file(path, "/* CTF 1.8 */\ntrace { major = 1; minor = 8; };\n");
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--from", dir, NULL }, false, -1);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(strstr(p->ebuf, "not a CTF trace djp wrote"));
	CHECK_EQ(tt_lines(p->ebuf), 1);
	free(p);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--from", dir, "tt_*", NULL }, false, -1);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	CHECK(strstr(p->ebuf, "--from takes no PATTERN"));
	free(p);
	rm_tree(dir);
}

/* A damaged stream file (cut in the middle of its one packet): one line
 * naming the file and the byte, status 1. */
TEST_TIMEOUT(trace_ctf_damaged, 60)
{
	char dir[] = "/tmp/djp-ctf-XXXXXX", ctf[256], stream[PATH_MAX], cmd[PATH_MAX];
	struct tproc *p;
	struct stat st;
	int status;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	snprintf(cmd, sizeof(cmd), "%s --ticks 0 --no-stdin --burst 100", tt_target(false));
	free(run_ok((char *const[]){ (char *)tt_djp(), "trace", "-f", "ctf", "-o", ctf, "-c", cmd, "tt_burst", NULL }));
	p = run_ok((char *const[]){ "/bin/sh", "-c", "ls \"$0\" | grep '^stream-'", ctf, NULL });
	CHECK(tt_lines(p->obuf) == 1);
	*strchr(p->obuf, '\n') = 0;
	snprintf(stream, sizeof(stream), "%s/%.200s", ctf, p->obuf);
	free(p);
	CHECK(stat(stream, &st) == 0);
	CHECK(truncate(stream, st.st_size - 7) == 0);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--from", ctf, NULL }, false, -1);
	status = tt_finish(p, 20000);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	CHECK(strstr(p->ebuf, "a packet runs past the file's end"));
	CHECK(strstr(p->ebuf, stream + strlen(dir) + 5));
	CHECK_EQ(tt_lines(p->ebuf), 1);
	free(p);
	rm_tree(dir);
}

/* A packet that cannot be written (its file's name taken by a directory)
 * ends the trace as a failed write to a stream does ("stopped: cannot
 * write the events", not the command's end), then one line naming the
 * directory and why, status 1. */
TEST_TIMEOUT(trace_ctf_write_error_ends_the_trace, 60)
{
	char dir[] = "/tmp/djp-ctf-XXXXXX", ctf[256], cmd[PATH_MAX], taken[400];
	struct tproc *p;
	int st;
	long pid;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-f", "ctf", "-o", ctf, "-c", cmd, "tt_burst", NULL },
		     false, -1);
	CHECK(tt_wait_out(p, "ready ", 20000));
	CHECK(sscanf(strstr(p->obuf, "ready ") + 6, "%ld", &pid) == 1);
	snprintf(taken, sizeof(taken), "%s/stream-%ld-%ld", ctf, pid, pid);
	CHECK(mkdir(taken, 0755) == 0);
	/* more than a packet's 256 KiB of events: one is written, and fails */
	tt_send(p, "burst 20000\n");
	st = tt_finish(p, 20000);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 1)
		djp_test_fail(__FILE__, __LINE__, "status %#x; stderr %.2000s", st, p->ebuf);
	CHECK(strstr(p->ebuf, "djp trace: stopped: cannot write the events"));
	CHECK(strstr(p->ebuf, ": cannot write the CTF trace: Is a directory\n"));
	free(p);
	rm_tree(dir);
}

/* -x: a running process's events, in CTF as in text and JSON. */
TEST_TIMEOUT(trace_ctf_attach, 120)
{
	char dir[] = "/tmp/djp-ctf-XXXXXX", txt[300], js[300], ctf[300], sum[300], pid[16];
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, true, -1);
	struct tproc *p;
	size_t n;
	char *text;
	int st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(txt, sizeof(txt), "%s/live.txt", dir);
	snprintf(js, sizeof(js), "%s/live.json", dir);
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	snprintf(sum, sizeof(sum), "%s/summary.txt", dir);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "-f", "text", "-o", txt, "-f", "json", "-o",
				      js, "-f", "ctf", "-o", ctf, "tt_*", NULL },
		     false, -1);
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	tt_send(t, "kinds 1\nburst 50\n");
	CHECK(tt_wait_out(t, "burst 50 ", 10000));
	kill(p->pid, SIGINT); /* what was recorded is drained first */
	st = tt_finish(p, 20000);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp trace -x: status %#x; stderr %.3000s", st, p->ebuf);
	write_file(sum, p->ebuf);
	free(p);
	tt_end(t);
	text = slurp(txt, &n);
	CHECK_EQ(tt_count(text, " tt_burst a="), 50);
	CHECK_EQ(tt_count(text, "\n"), 51);
	free(text);
	bt2_check(dir);
	babeltrace_cli(dir, true);
	from_check(dir);
	rm_tree(dir);
}

/* An SDT probe's arguments are typed by their sizes: typed:vals's
 * -4@ and 8@ are a signed 32-bit and an unsigned 64-bit integer, in one
 * event class (no value needs a wider twin), and its values read back. */
TEST_TIMEOUT(trace_ctf_sdt_sizes, 60)
{
	char dir[] = "/tmp/djp-ctf-XXXXXX", txt[300], js[300], ctf[300], sum[300], meta[320], cmd[PATH_MAX];
	struct tproc *p;
	char *text, *cls;
	size_t n;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(txt, sizeof(txt), "%s/live.txt", dir);
	snprintf(js, sizeof(js), "%s/live.json", dir);
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	snprintf(sum, sizeof(sum), "%s/summary.txt", dir);
	snprintf(meta, sizeof(meta), "%s/metadata", ctf);
	snprintf(cmd, sizeof(cmd), "%s 3", tt_typed_target(false));
	p = run_ok((char *const[]){ (char *)tt_djp(), "trace", "-f", "text", "-o", txt, "-f", "json", "-o", js, "-f",
				    "ctf", "-o", ctf, "-c", cmd, "typed:*", NULL });
	write_file(sum, p->ebuf);
	free(p);
	text = slurp(meta, &n);
	CHECK_EQ(tt_count(text, "name = \"typed:vals\";"), 1);
	cls = strstr(text, "name = \"typed:vals\";");
	*strstr(cls, "};") = 0;
	if (!strstr(cls, "integer { size = 32; align = 8; signed = true; base = 10; byte_order = le; } _arg1;") ||
	    !strstr(cls, "integer { size = 64; align = 8; signed = false; base = 10; byte_order = le; } _arg2;"))
		djp_test_fail(__FILE__, __LINE__, "typed:vals is declared %s", cls);
	free(text);
	bt2_check(dir);
	rm_tree(dir);
}
