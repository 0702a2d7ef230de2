/*
 * The kernel's uprobes as djp's recording backend (tools/djp/uprobe/),
 * through its API, on progs/uprobe_target: an SDT probe no jump can take
 * (a 1-byte NOP before a ret) whose twelve arguments are of every kind a
 * location has, behind an SDT semaphore.  Each event must carry what the
 * program says it passed, argument by argument, hit by hit; the kernel
 * must raise the semaphore in the process armed and in no other, and
 * leave the site's bytes as they were when it is disarmed; hits of a
 * process the site is not armed for must not be recorded.  Needs root
 * (CAP_BPF, CAP_PERFMON and, on current kernels, CAP_SYS_ADMIN), else
 * skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/func_symbols.h"
#include "lib/markers.h"
#include "lib/ring.h"
#include "test_trace_util.h"
#include "tools/djp/uprobe/uprobes.h"

#define MARKER_ID 77u
#define THREADS 4
#define HITS 250 /* a thread */
#define BOUND DJP_RING_STR_BOUND

/* The probe in the target's file. */
struct site_file {
	char path[PATH_MAX];
	struct djp_marker_list *l;
	const struct djp_marker_info *m;
	uint64_t site_off, sem_off;
};

static void read_site(struct site_file *f)
{
	struct djp_func_table *t;
	char err[512];

	CHECK(realpath(djp_test_path("progs/uprobe_target"), f->path) != NULL);
	CHECK_EQ(djp_markers_read_file(f->path, DJP_READ_NO_DWARF, &f->l, err, sizeof(err)), 0);
	f->m = NULL;
	for (size_t i = 0; i < f->l->count; i++)
		if (f->l->v[i].provider && !strcmp(f->l->v[i].provider, "uprobe_target") &&
		    !strcmp(f->l->v[i].name, "hit"))
			f->m = &f->l->v[i];
	CHECK(f->m && f->m->nargs == 12 && f->m->site_len == 1 && f->m->semaphore);
	CHECK_EQ(djp_funcs_read(f->path, &t, err, sizeof(err)), 0);
	CHECK_EQ(djp_funcs_file_offset(t, f->m->site, &f->site_off), 0);
	CHECK_EQ(djp_funcs_file_offset(t, f->m->semaphore, &f->sem_off), 0);
	djp_funcs_free(t);
}

/* A running copy of the target. */
struct target {
	struct tproc *p;
	pid_t pid;
	uintptr_t site;
	uint64_t global;
	int sshort;
	unsigned byte;
};

static void start(struct target *t)
{
	char *argv[] = { (char *)djp_test_path("progs/uprobe_target"), NULL };
	const char *r;

	t->p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(t->p, "\n", 5000));
	CHECK((r = strstr(t->p->obuf, "ready ")) != NULL);
	CHECK(sscanf(r, "ready %d %" SCNxPTR " %" SCNx64 " %d %u", &t->pid, &t->site, &t->global, &t->sshort,
		     &t->byte) == 5);
}

/* Send cmd and wait for the line it answers, which begins with prefix:
 * where it is in the output. */
static const char *ask(struct target *t, const char *cmd, const char *prefix)
{
	size_t mark = t->p->olen;
	long long waited = 0;
	char want[64];
	const char *r;

	CHECK(mark > 0); /* after the "ready" line */
	snprintf(want, sizeof(want), "\n%s", prefix);
	tt_send(t->p, cmd);
	for (;;) {
		tt_read_now(t->p);
		if ((r = strstr(t->p->obuf + mark - 1, want)) && strchr(r + 1, '\n'))
			return r + 1;
		CHECK(waited < 20000);
		CHECK(kill(t->pid, 0) == 0);
		usleep(2000);
		waited += 2;
	}
}

static long ask_num(struct target *t, const char *cmd, const char *prefix)
{
	long v;
	CHECK(sscanf(ask(t, cmd, prefix) + strlen(prefix), "%ld", &v) == 1);
	return v;
}

static struct djp_uprobes *open_or_skip(void)
{
	struct djp_uprobes *u;
	char err[512] = "";
	int r = djp_uprobes_open(&u, err, sizeof(err));

	if ((r == -EPERM || r == -EACCES) && !strncmp(err, "the kernel's uprobes need", 25))
		SKIP(err);
	if (r < 0)
		djp_test_fail(__FILE__, __LINE__, "djp_uprobes_open: %d %s", r, err);
	CHECK(!strchr(err, '\n'));
	return u;
}

static int arm(struct djp_uprobes *u, const struct site_file *f, const struct target *t)
{
	struct djp_uprobe_site s = {
		.pid = t->pid,
		.path = f->path,
		.file_off = f->site_off,
		.addr = t->site,
		.ref_ctr_off = f->sem_off,
		.marker_id = MARKER_ID,
		.nargs = f->m->nargs,
		.arg = f->m->arg,
		.bias = t->site - f->m->site,
		.str_mask = 1u << 1,
	};
	char err[512] = "";
	int r = djp_uprobes_attach(u, &s, err, sizeof(err));

	if (r < 0)
		djp_test_fail(__FILE__, __LINE__, "djp_uprobes_attach: %d %s", r, err);
	return r;
}

/* ---- the events ------------------------------------------------------- */

struct got {
	int slot;
	int32_t pid, tid;
	struct djp_event *ev;
};

struct events {
	struct got *v;
	size_t n, cap;
};

static int keep(void *ctx, int slot, int32_t pid, int32_t tid, const struct djp_event *ev)
{
	struct events *e = ctx;

	if (e->n == e->cap) {
		e->cap = e->cap ? 2 * e->cap : 1024;
		CHECK((e->v = realloc(e->v, e->cap * sizeof(*e->v))) != NULL);
	}
	CHECK((e->v[e->n].ev = malloc(ev->size)) != NULL);
	memcpy(e->v[e->n].ev, ev, ev->size);
	e->v[e->n].slot = slot;
	e->v[e->n].pid = pid;
	e->v[e->n].tid = tid;
	e->n++;
	return 0;
}

/* Everything the ring holds now: the hits are written by the hitting
 * thread before it goes on, so once the target has answered they are all
 * there. */
static void drain(struct djp_uprobes *u, struct events *e)
{
	long got;
	do
		CHECK((got = djp_uprobes_consume(u, keep, e)) >= 0);
	while (got > 0);
}

/* keep(), and stop at the tenth. */
static int keep_ten(void *ctx, int slot, int32_t pid, int32_t tid, const struct djp_event *ev)
{
	struct events *e = ctx;
	keep(ctx, slot, pid, tid, ev);
	return e->n == 10;
}

static void events_free(struct events *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].ev);
	free(e->v);
	*e = (struct events){ 0 };
}

/* ---- what the target passed ------------------------------------------- */

struct passed {
	long tid;
	uint64_t reg, ptr, s7;
	char kind[8], text[128];
	int neg;
	unsigned ch, tab;
	long idx;
	int64_t s8;
	bool seen;
};

/* The "hit" lines of the target's output, by thread and hit. */
static void parse_hits(const char *out, struct passed p[THREADS][HITS])
{
	int n = 0;
	for (const char *s = out; (s = strstr(s, "\nhit ")); s++) {
		struct passed h = { 0 };
		unsigned t;
		long i;
		CHECK(sscanf(s + 1, "hit %u %ld %ld %" SCNx64 " %" SCNx64 " %7s %127s %d %u %ld %u %" SCNx64 " %" SCNd64,
			     &t, &i, &h.tid, &h.reg, &h.ptr, h.kind, h.text, &h.neg, &h.ch, &h.idx, &h.tab, &h.s7,
			     &h.s8) == 13);
		CHECK(t < THREADS && i >= 0 && i < HITS && !p[t][i].tid);
		p[t][i] = h;
		n++;
	}
	CHECK_EQ(n, THREADS * HITS);
}

/* The text the recorder would have copied for p's string, and its flags. */
static void expected_string(const struct passed *p, char *text, uint64_t *flags)
{
	*flags = 0;
	if (!strcmp(p->kind, "null")) {
		strcpy(text, DJP_STR_NULL_TEXT);
		*flags = DJP_STR_NULL;
	} else if (!strcmp(p->kind, "bad")) {
		strcpy(text, DJP_STR_BAD_TEXT);
		*flags = DJP_STR_FAULT;
	} else if (!strcmp(p->kind, "edge")) {
		/* what lies before the unreadable page: all the recorder
		 * reads when it fills the bound */
		snprintf(text, BOUND, "%s", p->text);
		*flags = strlen(p->text) >= BOUND - 1 ? DJP_STR_TRUNCATED : DJP_STR_FAULT;
	} else {
		snprintf(text, BOUND, "%s", p->text);
		if (strlen(p->text) >= BOUND - 1)
			*flags = DJP_STR_TRUNCATED;
	}
}

/* Event g is hit p of target t, argument by argument. */
static void check_event(const struct got *g, const struct passed *p, const struct target *t)
{
	const struct djp_event *ev = g->ev;
	uint64_t want[12] = {
		p->reg,
		0, /* the string's descriptor */
		(uint64_t)(int64_t)p->neg,
		(p->ch >> 8) & 0xff,
		p->tab,
		p->s7,
		(uint64_t)p->s8,
		(uint64_t)(int64_t)-12345,
		t->global,
		(uint64_t)(int64_t)t->sshort,
		t->byte,
		(uint32_t)p->reg,
	};
	char text[BOUND];
	uint64_t flags, wflags;
	uint32_t len;
	const char *s;

	CHECK_EQ(g->pid, t->pid);
	CHECK_EQ(g->tid, p->tid);
	CHECK_EQ(ev->marker_id, MARKER_ID);
	CHECK_EQ(ev->nargs, 12);
	CHECK_EQ(ev->flags, DJP_EVF_STRINGS);
	CHECK(ev->size % 8 == 0);
	for (unsigned i = 0; i < 12; i++)
		if (i != 1 && ev->args[i] != want[i])
			djp_test_fail(__FILE__, __LINE__, "hit %s: argument %u is %#" PRIx64 ", passed %#" PRIx64,
				      p->text, i + 1, ev->args[i], want[i]);
	expected_string(p, text, &wflags);
	CHECK((s = djp_event_str(ev, 1, &len, &flags)) != NULL);
	CHECK_STR(s, text);
	CHECK_EQ(len, strlen(text));
	CHECK_EQ(flags, wflags);
	CHECK(ev->args[1] & DJP_STR_ADDR);
	CHECK_EQ(djp_event_str_addr(ev, 1), p->ptr);
	/* nothing after the string but its padding */
	CHECK_EQ(ev->size, DJP_STR_OFFSET(ev->args[1]) + 8 + ((len + 1 + 7) & ~7u));
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TEST_TIMEOUT(uprobes_every_argument_kind_every_hit, 60)
{
	static struct passed p[THREADS][HITS];
	struct djp_uprobes *u = open_or_skip();
	struct events e = { 0 };
	struct site_file f;
	struct target t;
	uint64_t t0, t1;
	char cmd[32];

	read_site(&f);
	start(&t);
	CHECK_EQ(ask_num(&t, "sem\n", "sem "), 0);
	/* the semaphore down, the program does not fire */
	CHECK_EQ(ask_num(&t, "go 10 1\n", "done "), 0);
	arm(u, &f, &t);
	CHECK_EQ(djp_uprobes_armed(u), 1);
	CHECK_EQ(ask_num(&t, "sem\n", "sem "), 1); /* the kernel raised it */
	t0 = monotonic_ns();
	snprintf(cmd, sizeof(cmd), "go %d %d\n", HITS, THREADS);
	CHECK_EQ(ask_num(&t, cmd, "done "), THREADS * HITS);
	t1 = monotonic_ns();
	parse_hits(t.p->obuf, p);
	drain(u, &e);
	CHECK_EQ(e.n, THREADS * HITS);
	CHECK_EQ(djp_uprobes_lost(u), 0);
	for (size_t k = 0; k < e.n; k++) {
		const struct djp_event *ev = e.v[k].ev;
		unsigned th = (unsigned)(ev->args[0] >> 32) & 0xff;
		long i = (long)(ev->args[0] & 0xffff);
		CHECK(th < THREADS && i < HITS && !p[th][i].seen);
		p[th][i].seen = true;
		check_event(&e.v[k], &p[th][i], &t);
		CHECK(ev->timestamp >= t0 && ev->timestamp <= t1);
	}
	djp_uprobes_detach_pid(u, t.pid);
	CHECK_EQ(djp_uprobes_armed(u), 0);
	CHECK_EQ(ask_num(&t, "sem\n", "sem "), 0);
	djp_uprobes_close(u);
	events_free(&e);
	tt_end(t.p);
}

/* n bytes of the target at addr (/proc/PID/mem). */
static void read_mem(pid_t pid, uintptr_t addr, uint8_t *b, size_t n)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	CHECK((fd = open(path, O_RDONLY)) >= 0);
	CHECK_EQ(pread(fd, b, n, (off_t)addr), (ssize_t)n);
	close(fd);
}

TEST(uprobes_detach_leaves_the_site_as_it_was)
{
	struct djp_uprobes *u = open_or_skip();
	struct events e = { 0 };
	uint8_t file[32], mem[32];
	struct site_file f;
	struct target t;
	int fd;

	read_site(&f);
	CHECK((fd = open(f.path, O_RDONLY)) >= 0);
	CHECK_EQ(pread(fd, file, sizeof(file), (off_t)f.site_off - 8), (ssize_t)sizeof(file));
	close(fd);
	CHECK(file[8] == 0x90 && file[9] == 0xc3); /* nop; ret */
	start(&t);
	read_mem(t.pid, t.site - 8, mem, sizeof(mem));
	CHECK(!memcmp(mem, file, sizeof(file)));
	arm(u, &f, &t);
	read_mem(t.pid, t.site - 8, mem, sizeof(mem));
	CHECK_EQ(mem[8], 0xcc); /* the kernel's breakpoint */
	CHECK(!memcmp(mem, file, 8) && !memcmp(mem + 9, file + 9, sizeof(file) - 9));
	CHECK_EQ(ask_num(&t, "force 50\n", "done "), 50);
	djp_uprobes_detach_pid(u, t.pid);
	CHECK_EQ(djp_uprobes_armed(u), 0);
	read_mem(t.pid, t.site - 8, mem, sizeof(mem));
	CHECK(!memcmp(mem, file, sizeof(file)));
	CHECK_EQ(ask_num(&t, "sem\n", "sem "), 0);
	/* it runs on, unrecorded */
	CHECK_EQ(ask_num(&t, "force 100\n", "done "), 100);
	/* the 50 hits before, and none since; a reader that stops has
	 * taken the event it stopped at */
	CHECK_EQ(djp_uprobes_consume(u, keep_ten, &e), 10);
	drain(u, &e);
	CHECK_EQ(e.n, 50);
	for (size_t i = 1; i < e.n; i++)
		CHECK(e.v[i].ev->timestamp >= e.v[i - 1].ev->timestamp);
	djp_uprobes_close(u);
	events_free(&e);
	tt_end(t.p);
}

/* Of e, how many are of process pid; every one is of pid or other. */
static size_t count_of(const struct events *e, pid_t pid, pid_t other)
{
	size_t n = 0;
	for (size_t i = 0; i < e->n; i++) {
		CHECK(e->v[i].pid == pid || e->v[i].pid == other);
		n += e->v[i].pid == pid;
	}
	return n;
}

TEST(uprobes_only_the_process_armed_is_recorded)
{
	struct djp_uprobes *u = open_or_skip();
	struct events e = { 0 };
	struct site_file f;
	struct target a, b;
	int sa, sb;

	read_site(&f);
	start(&a);
	start(&b);
	sa = arm(u, &f, &a);
	CHECK_EQ(ask_num(&a, "sem\n", "sem "), 1);
	CHECK_EQ(ask_num(&b, "sem\n", "sem "), 0); /* raised in the process armed alone */
	CHECK_EQ(ask_num(&b, "force 300\n", "done "), 300);
	CHECK_EQ(ask_num(&a, "go 50 2\n", "done "), 100);
	drain(u, &e);
	CHECK_EQ(e.n, 100);
	CHECK_EQ(count_of(&e, a.pid, a.pid), 100);
	events_free(&e);

	/* both armed, two uprobes on one site: each hit recorded once, for
	 * its own process */
	sb = arm(u, &f, &b);
	CHECK(sb != sa);
	CHECK_EQ(djp_uprobes_armed(u), 2);
	CHECK_EQ(ask_num(&b, "sem\n", "sem "), 1);
	CHECK_EQ(ask_num(&b, "force 200\n", "done "), 200);
	CHECK_EQ(ask_num(&a, "go 10 1\n", "done "), 10);
	drain(u, &e);
	CHECK_EQ(e.n, 210);
	CHECK_EQ(count_of(&e, b.pid, a.pid), 200);
	for (size_t i = 0; i < e.n; i++) /* each names its own process's site */
		CHECK_EQ(e.v[i].slot, e.v[i].pid == a.pid ? sa : sb);
	events_free(&e);

	djp_uprobes_detach(u, sa);
	CHECK_EQ(djp_uprobes_armed(u), 1);
	CHECK_EQ(ask_num(&a, "sem\n", "sem "), 0);
	CHECK_EQ(ask_num(&b, "sem\n", "sem "), 1);
	CHECK_EQ(ask_num(&a, "force 100\n", "done "), 100);
	drain(u, &e);
	CHECK_EQ(e.n, 0);
	djp_uprobes_close(u);
	CHECK_EQ(ask_num(&b, "sem\n", "sem "), 0);
	tt_end(a.p);
	tt_end(b.p);
}

/* err holds one line that says something. */
static void check_one_line(const char *err)
{
	printf("# %s\n", err);
	CHECK(err[0] && !strchr(err, '\n'));
}

TEST(uprobes_bad_sites_are_refused_in_one_line)
{
	struct djp_uprobes *u = open_or_skip();
	struct djp_argloc saved[12];
	struct djp_uprobe_site s;
	struct site_file f;
	struct target t;
	struct stat st;
	char err[512];

	read_site(&f);
	start(&t);
	s = (struct djp_uprobe_site){ .pid = t.pid, .path = f.path, .marker_id = MARKER_ID, .nargs = f.m->nargs,
				      .arg = f.m->arg, .bias = t.site - f.m->site };
	CHECK_EQ(stat(f.path, &st), 0);
	s.file_off = (uint64_t)st.st_size + 4096; /* past the end of the file */
	err[0] = 0;
	CHECK(djp_uprobes_attach(u, &s, err, sizeof(err)) < 0);
	check_one_line(err);
	s.file_off = f.site_off;
	s.path = "/nonexistent/uprobe_target";
	err[0] = 0;
	CHECK(djp_uprobes_attach(u, &s, err, sizeof(err)) < 0);
	check_one_line(err);
	s.path = f.path;
	s.nargs = 13;
	err[0] = 0;
	CHECK_EQ(djp_uprobes_attach(u, &s, err, sizeof(err)), -EINVAL);
	check_one_line(err);
	/* a return probe's saved value is not there to read */
	memcpy(saved, f.m->arg, sizeof(saved));
	saved[3] = (struct djp_argloc){ .kind = DJP_LOC_SAVED, .size = 8 };
	s.nargs = f.m->nargs;
	s.arg = saved;
	err[0] = 0;
	CHECK_EQ(djp_uprobes_attach(u, &s, err, sizeof(err)), -EINVAL);
	check_one_line(err);
	CHECK_EQ(djp_uprobes_armed(u), 0);
	/* and the refusals left nothing behind: the site arms as ever */
	arm(u, &f, &t);
	CHECK_EQ(djp_uprobes_armed(u), 1);
	CHECK_EQ(ask_num(&t, "sem\n", "sem "), 1);
	djp_uprobes_close(u);
	CHECK_EQ(ask_num(&t, "sem\n", "sem "), 0);
	tt_end(t.p);
}

/* What a hit costs, armed and not, and a ring too small for the hits:
 * every hit is an event or counted lost. */
TEST_TIMEOUT(uprobes_hit_cost_and_lost_events, 60)
{
	struct djp_uprobes *u = open_or_skip();
	struct events e = { 0 };
	struct site_file f;
	struct target t;
	double bare, armed;
	const long n = 200000;
	char cmd[32];

	read_site(&f);
	start(&t);
	snprintf(cmd, sizeof(cmd), "bench %ld\n", n);
	CHECK(sscanf(ask(&t, cmd, "bench ") + 6, "%lf", &bare) == 1);
	arm(u, &f, &t);
	CHECK(sscanf(ask(&t, cmd, "bench ") + 6, "%lf", &armed) == 1);
	printf("# a hit: %.1f ns armed with a uprobe, %.1f ns not\n", armed, bare);
	drain(u, &e);
	printf("# %zu events, %" PRIu64 " lost\n", e.n, djp_uprobes_lost(u));
	CHECK(e.n > 0);
	CHECK_EQ(e.n + djp_uprobes_lost(u), (uint64_t)n);
	djp_uprobes_close(u);
	events_free(&e);
	tt_end(t.p);
}
