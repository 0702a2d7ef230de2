/* `djp trace --format=perfetto` and `--html`: Chrome's trace-event JSON
 * checked against a JSON Schema and against what the traced program did
 * (selftests/timeline/perfetto_check.py), and the summary page rendered
 * by headless Chromium and read back (selftests/timeline/html_check.py):
 * threads and their names, markers, function calls and marker pairs as
 * slices, lost events, a trace stopped by ^C. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define REQUESTS 6

static const char *timeline_target(void)
{
	static char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", djp_test_path("trace_progs/timeline_target"));
	return path;
}

static void script_path(char *out, const char *name)
{
	char rel[128], alt[128];
	snprintf(rel, sizeof(rel), "../../selftests/timeline/%s", name);
	snprintf(alt, sizeof(alt), "selftests/timeline/%s", name);
	if (!realpath(djp_test_path(rel), out) && !realpath(alt, out))
		djp_test_fail(__FILE__, __LINE__, "selftests/timeline/%s not found", name);
}

/* The file's text so far; "" while it does not exist yet. */
static char *slurp(const char *path)
{
	return access(path, F_OK) ? strdup("") : tt_read_file(path);
}

/* Wait until the file at path holds n occurrences of needle (the tool
 * writes a round's events as it reads them); fails the test after 20 s. */
static void wait_file_count(const char *path, const char *needle, int n)
{
	for (int i = 0; i < 2000; i++) {
		char *s = slurp(path);
		int c = tt_count(s, needle);
		free(s);
		if (c >= n)
			return;
		usleep(10000);
	}
	djp_test_fail(__FILE__, __LINE__, "%s never held %d of %s", path, n, needle);
}

/* A checker of selftests/timeline, with its arguments: passes or fails
 * the test with what it printed. */
static void run_checker(char *const argv[])
{
	struct tproc *p = tt_spawn(argv, false, -1);
	int st = tt_finish(p, 280000);

	fputs(p->obuf, stdout);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		djp_test_fail(__FILE__, __LINE__, "%s found a difference (status %#x); stderr: %.2000s", argv[1], st,
			      p->ebuf);
	free(p);
}

struct run {
	char dir[64], json[128], html[128], text[128];
	struct tproc *p;
};

/* djp trace -c "timeline_target REQUESTS [hold]" --format=perfetto -o
 * DIR/t.json --html DIR/t.html with both pairs and tl_work's calls (its
 * return spelt with a glob and the object), the workers' events all
 * written while they are still there to be named. */
static void timeline_start(struct run *r, const char *hold)
{
	char cmd[PATH_MAX + 32];

	snprintf(r->dir, sizeof(r->dir), "/tmp/djp-timeline-XXXXXX");
	CHECK(mkdtemp(r->dir));
	snprintf(r->json, sizeof(r->json), "%s/t.json", r->dir);
	snprintf(r->html, sizeof(r->html), "%s/t.html", r->dir);
	snprintf(cmd, sizeof(cmd), "%s %d %s", timeline_target(), REQUESTS, hold);
	r->p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "--format=perfetto", "-o", r->json,
					 "--html", r->html, "--slice", "tl_lock,tl_unlock", "--slice",
					 "tl_req_start,tl_req_done,id", "tl_*", "func:tl_work",
					 "func:tl_w*%return@timeline_target", NULL },
			false, -1);
	CHECK(tt_wait_out(r->p, "worked", 20000));
}

static void timeline_run(struct run *r)
{
	unsigned long long ev, lost;

	timeline_start(r, "");
	/* the last events of both workers: their requests' ends */
	wait_file_count(r->json, "\"ph\":\"e\"", REQUESTS * 2);
	tt_send(r->p, "exit\n");
	CHECK_EQ(tt_finish(r->p, 20000), 0);
	/* the summary of the same run counts what the file holds */
	CHECK(tt_summary_row(r->p->ebuf, "tl_step", &ev, &lost));
	CHECK_EQ(ev, REQUESTS * 2 * 3);
	CHECK(tt_summary_row(r->p->ebuf, "func:tl_work%return", &ev, &lost));
	CHECK_EQ(ev, REQUESTS * 2 * 3);
}

/* The same program traced as text (the same patterns), into DIR/t.txt. */
static void timeline_text(struct run *r)
{
	char cmd[PATH_MAX + 32];
	struct tproc *p;

	snprintf(r->text, sizeof(r->text), "%s/t.txt", r->dir);
	snprintf(cmd, sizeof(cmd), "%s %d", timeline_target(), REQUESTS);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "-o", r->text, "tl_*", "func:tl_work",
				      "func:tl_work%return", NULL },
		     false, -1);
	CHECK(tt_wait_out(p, "worked", 20000));
	tt_send(p, "exit\n");
	CHECK_EQ(tt_finish(p, 20000), 0);
	free(p);
}

static void run_done(struct run *r)
{
	if (r->text[0])
		unlink(r->text);
	unlink(r->json);
	unlink(r->html);
	rmdir(r->dir);
	free(r->p);
}

static void perfetto_check(const char *json, const char *const *more)
{
	char py[PATH_MAX], schema[PATH_MAX];
	char *argv[32] = { "/usr/bin/python3", py, (char *)json, schema };
	int n = 4;

	script_path(py, "perfetto_check.py");
	script_path(schema, "trace_event.schema.json");
	while (*more && n < 31)
		argv[n++] = (char *)*more++;
	argv[n] = NULL;
	run_checker(argv);
}

static void html_check(const char *html, const char *const *more)
{
	char py[PATH_MAX];
	char *argv[48] = { "/usr/bin/python3", py, (char *)html };
	int n = 3;

	script_path(py, "html_check.py");
	while (*more && n < 47)
		argv[n++] = (char *)*more++;
	argv[n] = NULL;
	run_checker(argv);
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define N_CALLS STR(36) /* REQUESTS * 2 workers * 3 depths */
#define N_REQS STR(12)

TEST_TIMEOUT(trace_perfetto_timeline, 120)
{
	struct run r = { 0 };

	timeline_run(&r);
	timeline_text(&r);
	perfetto_check(r.json, (const char *const[]){ "--timeline", STR(REQUESTS), "--text", r.text, "--process",
						      "timeline_target",
						      "--count", "tl_step=" N_CALLS, "--count",
						      "func:tl_work=" N_CALLS, "--count", "tl_lock=" N_REQS,
						      "--count", "tl_req_start=" N_REQS, NULL });
	run_done(&r);
}

TEST_TIMEOUT(trace_html_page_in_chromium, 300)
{
	struct run r = { 0 };

	timeline_run(&r);
	html_check(r.html, (const char *const[]){ "--marker", "tl_step=" N_CALLS, "--marker", "tl_req_start=" N_REQS,
						  "--marker", "tl_req_done=" N_REQS, "--marker", "tl_lock=" N_REQS,
						  "--marker", "tl_unlock=" N_REQS, "--marker", "func:tl_work=" N_CALLS,
						  "--marker", "func:tl_work%return=" N_CALLS, "--slice",
						  "func:tl_work=" N_CALLS, "--slice", "tl_lock=" N_REQS, "--slice",
						  "tl_req_start=" N_REQS, NULL });
	run_done(&r);
}

/* ^C while each worker is inside a request and a lock: the file is still
 * whole JSON, and the slices left open end where the trace did. */
TEST_TIMEOUT(trace_perfetto_interrupted, 120)
{
	struct run r = { 0 };
	char *s;
	int st;

	timeline_start(&r, "hold");
	wait_file_count(r.json, "\"name\":\"tl_lock\",\"ph\":\"B\"", 2);
	kill(r.p->pid, SIGINT);
	st = tt_finish(r.p, 20000);
	CHECK(WIFEXITED(st));
	CHECK(strstr(r.p->ebuf, "stopped by Interrupt"));
	s = slurp(r.json);
	/* two locks and four requests, open when the trace stopped */
	CHECK_EQ(tt_count(s, "\"djp\":\"closed without its end\""), 6);
	free(s);
	perfetto_check(r.json, (const char *const[]){ "--count", "tl_lock=2", "--count", "tl_req_start=4", NULL });
	run_done(&r);
}

/* djp trace -c of the plain target with small rings, to a timeline and
 * a page in a directory of r's own, once the target is ready. */
static void lossy_start(struct run *r)
{
	char cmd[PATH_MAX + 32];

	snprintf(r->dir, sizeof(r->dir), "/tmp/djp-timeline-XXXXXX");
	CHECK(mkdtemp(r->dir));
	snprintf(r->json, sizeof(r->json), "%s/t.json", r->dir);
	snprintf(r->html, sizeof(r->html), "%s/t.html", r->dir);
	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	r->p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--buffer-size", "16384", "-c", cmd, "-f",
					 "perfetto", "-o", r->json, "--html", r->html, "tt_burst", NULL },
			false, -1);
	CHECK(tt_wait_out(r->p, "ready", 20000));
}

/* Events the rings dropped are on the timeline, where they were found,
 * and marked on the page: as many as the summary of the same run says. */
TEST_TIMEOUT(trace_perfetto_html_lost, 300)
{
	char ev_arg[64], lost_arg[64], mark_arg[64];
	unsigned long long ev, lost;
	struct run r = { 0 };
	int st;

	lossy_start(&r);
	/* the tool stopped while the target fills its ring: drops, however
	 * fast the machine */
	kill(r.p->pid, SIGSTOP);
	tt_send(r.p, "burst 20000\n");
	CHECK(tt_wait_out(r.p, "burst 20000 ", 20000));
	kill(r.p->pid, SIGCONT);
	tt_send(r.p, "exit 0\n");
	st = tt_finish(r.p, 30000);
	CHECK_EQ(st, 0);
	CHECK(tt_summary_row(r.p->ebuf, "tt_burst", &ev, &lost));
	printf("# tt_burst: %llu events, %llu lost\n", ev, lost);
	CHECK(lost > 0);
	CHECK_EQ(ev + lost, 20000);
	snprintf(ev_arg, sizeof(ev_arg), "tt_burst=%llu", ev);
	snprintf(lost_arg, sizeof(lost_arg), "tt_burst=%llu", lost);
	snprintf(mark_arg, sizeof(mark_arg), "tt_burst=%llu", ev);
	perfetto_check(r.json, (const char *const[]){ "--count", ev_arg, "--lost", lost_arg, NULL });
	html_check(r.html, (const char *const[]){ "--marker", mark_arg, "--lost", lost_arg, NULL });
	run_done(&r);
}

/* Bad options: one line naming the problem, nothing run. */
TEST(trace_perfetto_bad_options)
{
	static const char *const cases[][3] = {
		{ "--slice", "tl_lock", "--slice takes START,END or START,END,KEY" },
		{ "--slice", "a,b,not-a-field", "--slice takes START,END or START,END,KEY" },
		{ "-f", "svg", "-f takes text, json, perfetto, html or ctf" },
		{ "--html", "/nonexistent/dir/t.html", "/nonexistent/dir/t.html: No such file or directory" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tproc *p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", "/bin/false",
							    (char *)cases[i][0], (char *)cases[i][1], "tl_*", NULL },
					   false, -1);
		int st = tt_finish(p, 20000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0);
		if (!strstr(p->ebuf, cases[i][2]) || tt_lines(p->ebuf) != 1)
			djp_test_fail(__FILE__, __LINE__, "%s %s: %s", cases[i][0], cases[i][1], p->ebuf);
		free(p);
	}
}

/* The LOST of tt_burst in every process block of a summary, added up. */
static unsigned long long summary_lost_sum(const char *summary, unsigned long long *events)
{
	unsigned long long lost = 0, e, l;

	*events = 0;
	for (const char *s = summary; (s = strstr(s, "\n  tt_burst ")); s++)
		if (sscanf(s, "\n  tt_burst %llu %llu", &e, &l) == 2) {
			*events += e;
			lost += l;
		}
	return lost;
}

/* Children of fork that drop events and exit: their drops are on the
 * timeline, each child's on its own process, and marked on the page, as
 * many as the summary's blocks of the same run add up to. */
TEST_TIMEOUT(trace_perfetto_lost_in_children, 300)
{
	char ev_arg[64], lost_arg[64];
	unsigned long long ev, lost;
	struct run r = { 0 };
	int st;

	lossy_start(&r);
	tt_send(r.p, "fork 4 50000\n");
	CHECK(tt_wait_out(r.p, "forked 4", 60000));
	tt_send(r.p, "exit 0\n");
	st = tt_finish(r.p, 60000);
	CHECK_EQ(st, 0);
	lost = summary_lost_sum(r.p->ebuf, &ev);
	printf("# tt_burst in 4 children: %llu events, %llu lost\n", ev, lost);
	CHECK_EQ(ev + lost, 4 * 50000);
	CHECK(lost > 0);
	snprintf(ev_arg, sizeof(ev_arg), "tt_burst=%llu", ev);
	snprintf(lost_arg, sizeof(lost_arg), "tt_burst=%llu", lost);
	perfetto_check(r.json, (const char *const[]){ "--count", ev_arg, "--lost", lost_arg, NULL });
	html_check(r.html, (const char *const[]){ "--marker", ev_arg, "--lost", lost_arg, NULL });
	run_done(&r);
}

/* -f html: the page instead of the events, here with no pair at all. */
TEST_TIMEOUT(trace_f_html_writes_the_page_alone, 300)
{
	char cmd[PATH_MAX + 32];
	struct run r = { 0 };
	char *page;

	snprintf(r.dir, sizeof(r.dir), "/tmp/djp-timeline-XXXXXX");
	CHECK(mkdtemp(r.dir));
	snprintf(r.json, sizeof(r.json), "%s/none.json", r.dir);
	snprintf(r.html, sizeof(r.html), "%s/t.html", r.dir);
	snprintf(cmd, sizeof(cmd), "%s 2", timeline_target());
	r.p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "-f", "html", "-o", r.html, "tl_step",
					"tl_req_*", NULL },
		       false, -1);
	CHECK(tt_wait_out(r.p, "worked", 20000));
	tt_send(r.p, "exit\n");
	CHECK_EQ(tt_finish(r.p, 20000), 0);
	page = slurp(r.html);
	CHECK(!strncmp(page, "<!DOCTYPE html>", 15));
	free(page);
	html_check(r.html, (const char *const[]){ "--marker", "tl_step=12", "--marker", "tl_req_start=4", "--marker",
						  "tl_req_done=4", NULL });
	run_done(&r);
}
