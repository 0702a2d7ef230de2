/*
 * The CTF output (tools/djp/output/ctf.c) and the CTF source that reads it
 * back (tools/djp/source/ctf.c), over events made here: each value, string
 * and name must come back as it went in, in the same order, whatever the
 * trace's shape: a thread of many packets, values too wide for their
 * conversion's size, markers nobody could name under one descriptor that
 * the source renames for each (as the process source's "marker#ID"),
 * losses of a thread and of no thread.  babeltrace2 must read the same
 * trace.  The tool's files are compiled in here: the selftests do not link
 * the tool.
 */
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"
#include "tools/djp/json.c"
#include "tools/djp/output/ctf.c"
#include "tools/djp/output/ctf_metadata.c"
#include "tools/djp/output/output.c"
#include "tools/djp/source/ctf.c"

/* output.c's table names the other formats, which are not compiled in */
const struct djp_output_ops djp_output_text = { .name = "text" }, djp_output_json = { .name = "json" },
			    djp_output_perfetto = { .name = "perfetto" }, djp_output_html = { .name = "html" };

#define NEV 30000

struct lost_seen {
	int32_t pid, tid;
	uint64_t n;
} seen[8];
static unsigned nseen;

static void on_lost(void *ctx, int32_t pid, int32_t tid, uint64_t n)
{
	(void)ctx;
	if (nseen < 8)
		seen[nseen++] = (struct lost_seen){ pid, tid, n };
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* event i: its thread, values and name, the same when written and read */
static void make_event(unsigned i, struct djp_ev *ev, const struct djp_ev_desc *a, struct djp_ev_desc *u,
		       char *str, size_t strsz)
{
	memset(ev, 0, sizeof(*ev));
	ev->ts_ns = 1000000000ull + i * 10ull;
	ev->pid = 4242;
	/* thread 1 has most of them: several packets */
	ev->tid = i % 5 ? 4243 : 4244 + (int32_t)(i % 3);
	ev->cpu = (int32_t)(i % 4) - 1;
	if (i % 7 == 3) {
		/* an unnamed marker, one descriptor renamed for each id */
		snprintf((char *)u->name, 32, "marker#%u", 7 + i % 2);
		ev->desc = u;
		ev->nargs = 1;
		ev->args[0] = (int64_t)i * 0x100000001ll;
		return;
	}
	ev->desc = a;
	ev->nargs = 3;
	ev->args[0] = (int64_t)(i % 300) - 150; /* %hhd: some do not fit */
	ev->args[1] = -(int64_t)i;		 /* %u: a negative one does not */
	snprintf(str, strsz, "s%u%s", i, i % 11 ? "" : " a\nb\\");
	ev->strs[2] = str;
	ev->str_cut[2] = i % 13 == 0; /* written with its "..." */
}

TEST_TIMEOUT(ctf_output_reads_back_every_value, 60)
{
	char dir[] = "/tmp/djp-ctf-unit-XXXXXX", ctf[256], err[512], str[64], unknown_name[32] = "";
	struct djp_ev_desc a = { .name = "req", .label = "prov:req", .nargs = 3 }, u = { .name = unknown_name };
	struct djp_output o;
	struct djp_source *src;
	struct djp_ev ev, want;
	struct tproc *p;
	unsigned n = 0, lines, m7, m8;
	char out[300];
	int st;

	u.label = unknown_name;
	u.unknown = true;
	CHECK(djp_format_parse("x=%hhd y=%u s=%s", &a.fmt, NULL) == 3);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	CHECK(djp_output_init(&o, "ctf", NULL));
	CHECK(o.ops->open_dir(&o, ctf, err, sizeof(err)) == 0);
	for (unsigned i = 0; i < NEV; i++) {
		make_event(i, &ev, &a, &u, str, sizeof(str));
		djp_output_event(&o, &ev);
	}
	o.ops->lost_thread(&o, 4242, 4243, 5);
	o.ops->lost_thread(&o, 4242, -1, 2);
	o.ops->end(&o);
	CHECK(!o.failed);
	o.ops->close(&o);

	CHECK(djp_ctf_source_open(ctf, &src, err, sizeof(err)) == 0);
	while (src->ops->next(src, &ev, UINT64_MAX) == DJP_SRC_EVENT) {
		const char *name = ev.desc->label ? ev.desc->label : ev.desc->name;
		char cut[80];
		make_event(n, &want, &a, &u, str, sizeof(str));
		if (want.str_cut[2]) {
			snprintf(cut, sizeof(cut), "%s...", str);
			want.strs[2] = cut;
		}
		if (ev.ts_ns != want.ts_ns || ev.pid != want.pid || ev.tid != want.tid || ev.cpu != want.cpu ||
		    ev.nargs != want.nargs || strcmp(name, want.desc->label) ||
		    memcmp(ev.args, want.args, sizeof(int64_t) * (want.nargs < 2 ? want.nargs : 2)) ||
		    (want.nargs == 3 && strcmp(ev.strs[2], want.strs[2])))
			djp_test_fail(__FILE__, __LINE__,
				      "event %u: read %s tid %d cpu %d %" PRId64 " %" PRId64 " %s, wrote %s tid %d cpu %d "
				      "%" PRId64 " %" PRId64 " %s",
				      n, name, ev.tid, ev.cpu, ev.args[0], ev.args[1], ev.nargs > 2 ? ev.strs[2] : "",
				      want.desc->label, want.tid, want.cpu, want.args[0], want.args[1],
				      want.nargs > 2 ? want.strs[2] : "");
		if (ev.nargs == 3)
			CHECK_STR(ev.desc->fmt.field[0].name, "x");
		n++;
	}
	CHECK_EQ(n, NEV);
	src->ops->lost_threads(src, on_lost, NULL);
	CHECK_EQ(nseen, 2);
	for (unsigned i = 0; i < nseen; i++)
		CHECK(seen[i].tid == 4243 ? seen[i].n == 5 : seen[i].tid == -1 && seen[i].n == 2);
	src->ops->close(src);

	/* babeltrace2: every event, no warning but the losses */
	snprintf(out, sizeof(out), "%s/bt.out", dir);
	p = tt_spawn((char *const[]){ "/bin/sh", "-c",
				      "/usr/bin/babeltrace2 \"$0\" >\"$1\" || exit 1; wc -l <\"$1\"; "
				      "grep -c ' marker#7: ' \"$1\"; grep -c ' marker#8: ' \"$1\"",
				      ctf, out, NULL },
		     false, -1);
	st = tt_finish(p, 30000);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "babeltrace2: status %#x: %.2000s", st, p->ebuf);
	/* every event; the unnamed ones under their own names (i % 7 == 3:
	 * 4286 of them, 8 + i % 2 alternating from marker#8) */
	CHECK_EQ(sscanf(p->obuf, "%u %u %u", &lines, &m7, &m8), 3);
	CHECK_EQ(lines, NEV);
	CHECK_EQ(m7 + m8, (NEV - 3 + 6) / 7);
	CHECK(m7 && m8 && (m7 == m8 || m7 + 1 == m8 || m8 + 1 == m7));
	CHECK_EQ(tt_count(p->ebuf, "WARNING: Tracer discarded 5 events"), 1);
	CHECK_EQ(tt_count(p->ebuf, "WARNING: Tracer discarded 2 events"), 1);
	CHECK_EQ(tt_lines(p->ebuf), 2);
	free(p);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
