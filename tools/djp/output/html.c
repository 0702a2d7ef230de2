/*
 * The summary as a page (--html FILE, or -f html): one HTML file that
 * needs nothing but a browser, no network, its charts drawn by the inline
 * script below as SVG from the figures the tool writes into the page.
 *
 * While the trace runs the output keeps only counts, not events: for each
 * marker, its events in each of NBINS intervals of time (and the events
 * the rings dropped, by the drain that found them), the intervals doubling
 * in length as the trace outgrows them, two merged into one; and for each
 * slice (a function's calls whose return is traced, a --slice pair:
 * pairs.c) a histogram of its durations in powers of two of nanoseconds,
 * as bpftrace's hist() has them.  A slice closed without its end (pairs.h)
 * is counted apart, not in the histogram.  At the end it writes the page:
 * the figures as JSON in a <script> element ('<', '>' and '&' escaped, so
 * no name from the target can end it), and the script that draws, for
 * each marker, its count and its rate over time (a bar an interval, red
 * marks where events were lost, with how many), and for each slice its
 * histogram (a bar a power of two, with its count).  Every figure drawn
 * is also an attribute of its element (data-count, data-lost), for tests
 * and for whoever reads the page's source.
 */
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "pairs.h"

#define NBINS 120
#define NBUCKETS 64

struct row {
	char *name;
	uint64_t count, lost;
	uint64_t bins[NBINS], lost_bins[NBINS];
};

struct slice {
	char *name;
	uint64_t count, forced, min, max, sum;
	uint64_t buckets[NBUCKETS];
};

struct html {
	struct djp_pairs *pairs;
	uint64_t t0, width, last; /* the first interval's start, their length (0: none yet), the last time seen */
	unsigned hi;		  /* the last interval with anything in it */
	struct row **rows; /* in the order met, and by name in a tree */
	size_t nrows;
	void *by_name;
	struct slice *slices;
	size_t nslices;
	bool oom;
};

static struct html *h_of(struct djp_output *o)
{
	return o->priv;
}

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->name, ((const struct row *)b)->name);
}

static struct row *row_of(struct html *h, const char *name)
{
	struct row key = { .name = (char *)name }, *r = NULL, **v;
	void *found = tfind(&key, &h->by_name, row_cmp);

	if (found)
		return *(struct row **)found;
	if (!(v = realloc(h->rows, (h->nrows + 1) * sizeof(*v))) || !(r = calloc(1, sizeof(*r))) ||
	    !(r->name = strdup(name)) || !tsearch(r, &h->by_name, row_cmp)) {
		if (v)
			h->rows = v;
		if (v && r)
			free(r->name), free(r);
		h->oom = true;
		return NULL;
	}
	h->rows = v;
	return v[h->nrows++] = r;
}

/* The interval ts falls in, the intervals moved or merged until there is
 * one (events of several processes come in time order each, not among
 * them: an earlier one may come later). */
static unsigned bin_of(struct html *h, uint64_t ts)
{
	if (ts > h->last)
		h->last = ts;
	if (!h->width) {
		h->t0 = ts;
		h->width = 1000; /* 1 us, doubled as the trace grows */
	}
	for (;;) {
		if (ts >= h->t0 && (ts - h->t0) / h->width < NBINS) {
			unsigned b = (unsigned)((ts - h->t0) / h->width);
			if (b > h->hi)
				h->hi = b;
			return b;
		}
		if (ts < h->t0) {
			uint64_t k = (h->t0 - ts + h->width - 1) / h->width;
			if (h->hi + k < NBINS) {
				for (size_t r = 0; r < h->nrows; r++) {
					memmove(h->rows[r]->bins + k, h->rows[r]->bins, (h->hi + 1) * sizeof(uint64_t));
					memset(h->rows[r]->bins, 0, k * sizeof(uint64_t));
					memmove(h->rows[r]->lost_bins + k, h->rows[r]->lost_bins, (h->hi + 1) * sizeof(uint64_t));
					memset(h->rows[r]->lost_bins, 0, k * sizeof(uint64_t));
				}
				h->t0 -= k * h->width;
				h->hi += (unsigned)k;
				continue;
			}
		}
		for (size_t r = 0; r < h->nrows; r++)
			for (unsigned b = 0; b < NBINS; b++) {
				uint64_t c = b * 2 < NBINS ? h->rows[r]->bins[b * 2] : 0;
				uint64_t l = b * 2 < NBINS ? h->rows[r]->lost_bins[b * 2] : 0;
				if (b * 2 + 1 < NBINS)
					c += h->rows[r]->bins[b * 2 + 1], l += h->rows[r]->lost_bins[b * 2 + 1];
				h->rows[r]->bins[b] = c;
				h->rows[r]->lost_bins[b] = l;
			}
		h->width *= 2;
		h->hi /= 2;
	}
}

static struct slice *slice_of(struct html *h, const char *name)
{
	struct slice *v;

	for (size_t i = 0; i < h->nslices; i++)
		if (!strcmp(h->slices[i].name, name))
			return &h->slices[i];
	if (!(v = realloc(h->slices, (h->nslices + 1) * sizeof(*v)))) {
		h->oom = true;
		return NULL;
	}
	h->slices = v;
	memset(&v[h->nslices], 0, sizeof(*v));
	if (!(v[h->nslices].name = strdup(name))) {
		h->oom = true;
		return NULL;
	}
	v[h->nslices].min = UINT64_MAX;
	return &v[h->nslices++];
}

static void on_open(void *ctx, const struct djp_ev *ev, const char *slice, const struct djp_fmt *fmt, const char *key)
{
	(void)ctx, (void)ev, (void)slice, (void)fmt, (void)key;
}

static void on_close(void *ctx, const struct djp_ev *ev, const struct djp_fmt *fmt, uint64_t ts_ns, int32_t pid,
		     int32_t tid, const char *name, const char *key, uint64_t start_ns)
{
	struct slice *s = slice_of(ctx, name);
	uint64_t d = ts_ns - start_ns;
	unsigned b = 0;

	(void)fmt, (void)pid, (void)tid, (void)key;
	if (!s)
		return;
	if (!ev) {
		s->forced++;
		return;
	}
	while (b + 1 < NBUCKETS && d >> (b + 1))
		b++;
	s->buckets[b]++;
	s->count++;
	s->sum += d;
	if (d < s->min)
		s->min = d;
	if (d > s->max)
		s->max = d;
}

static void on_alone(void *ctx, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	(void)ctx, (void)ev, (void)name, (void)fmt;
}

static const struct djp_pairs_ops html_pairs = { on_open, on_close, on_alone };

static void html_begin(struct djp_output *o)
{
	struct html *h = calloc(1, sizeof(*h));

	if (!h || !(h->pairs = djp_pairs_new(o, &html_pairs, h))) {
		fputs("djp: out of memory\n", stderr);
		exit(1);
	}
	o->priv = h;
}

static void html_event(struct djp_output *o, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	struct html *h = h_of(o);
	struct row *r = row_of(h, name);

	if (r) {
		unsigned b = bin_of(h, ev->ts_ns);
		r->count++;
		r->bins[b]++;
	}
	djp_pairs_event(h->pairs, ev, name, fmt);
}

static void html_lost(struct djp_output *o, uint64_t ts_ns, int32_t pid, const char *name, uint64_t n)
{
	struct html *h = h_of(o);
	struct row *r = row_of(h, name ? name : "(other)");

	(void)pid;
	if (r) {
		unsigned b = bin_of(h, ts_ns);
		r->lost += n;
		r->lost_bins[b] += n;
	}
}

/* s as a JSON string that cannot end the <script> element it is in. */
static void page_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&')
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void u64_array(FILE *out, const uint64_t *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "[", v[i]);
	fputs(n ? "]" : "[]", out);
}

static const char page_head[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>djp trace summary</title>\n"
	"<style>\n"
	"body{font:14px sans-serif;margin:1.5em;color:#222}\n"
	"section{margin:0 0 1.5em}\n"
	"h2{font-size:15px;margin:0 0 .3em;font-family:monospace}\n"
	".bin{fill:#4878b0}.bar{fill:#50a060}.lost{stroke:#d02020;stroke-width:2}\n"
	".lostlabel{fill:#d02020;font-size:11px}.axis{font-size:11px;fill:#555}\n"
	".figures{color:#555;margin-left:1em}.lostnote{color:#d02020}\n"
	"</style></head><body>\n"
	"<h1>djp trace</h1>\n<p id=\"overview\"></p>\n"
	"<h2 style=\"font-family:sans-serif;font-size:18px\">Events per marker, and their rate over time</h2>\n"
	"<div id=\"markers\"></div>\n"
	"<h2 style=\"font-family:sans-serif;font-size:18px\">Latency of paired events</h2>\n"
	"<div id=\"latencies\"></div>\n"
	"<script id=\"figures\" type=\"application/json\">\n";

/* Draws the page from the figures: nothing fetched, names as text only. */
static const char page_script[] =
	"</script>\n<script>\n"
	"'use strict';\n"
	"const F = JSON.parse(document.getElementById('figures').textContent);\n"
	"const NS = 'http://www.w3.org/2000/svg';\n"
	"function el(tag, attrs, text, ns) {\n"
	"  const e = ns ? document.createElementNS(NS, tag) : document.createElement(tag);\n"
	"  for (const k in attrs) e.setAttribute(k, attrs[k]);\n"
	"  if (text !== undefined) e.textContent = text;\n"
	"  return e;\n"
	"}\n"
	"function dur(ns) {\n"
	"  if (ns < 1e3) return ns + ' ns';\n"
	"  if (ns < 1e6) return (ns / 1e3).toPrecision(3) + ' us';\n"
	"  if (ns < 1e9) return (ns / 1e6).toPrecision(3) + ' ms';\n"
	"  return (ns / 1e9).toPrecision(3) + ' s';\n"
	"}\n"
	"function plural(n, what) {\n"
	"  return n + ' ' + what + (n === 1 ? '' : 's');\n"
	"}\n"
	"function num(x) {\n"
	"  return x >= 100 ? Math.round(x).toLocaleString('en-US') : String(+x.toPrecision(3));\n"
	"}\n"
	"const span = F.nbins * F.bin_ns;\n"
	"let total = 0, lost = 0;\n"
	"for (const m of F.markers) { total += m.count; lost += m.lost; }\n"
	"const ov = document.getElementById('overview');\n"
	"ov.append(el('span', {id: 'total', 'data-count': total}, plural(total, 'event')), ', ',\n"
	"  el('span', {id: 'lost', 'data-lost': lost, class: lost ? 'lostnote' : ''}, lost + ' lost'),\n"
	"  ', over ' + dur(F.end_ns - F.t0_ns) + ' (CLOCK_MONOTONIC ' + (F.t0_ns / 1e9).toFixed(6) + ' s on); ' +\n"
	"  'intervals of ' + dur(F.bin_ns) + '.');\n"
	"const W = 720, H = 110, X0 = 60;\n"
	"const markers = document.getElementById('markers');\n"
	"for (const m of F.markers) {\n"
	"  const s = el('section', {class: 'marker', 'data-marker': m.name, 'data-count': m.count, 'data-lost': m.lost});\n"
	"  const h = el('h2', {}, m.name);\n"
	"  const rate = m.count / Math.max(F.end_ns - F.t0_ns, 1) * 1e9;\n"
	"  h.append(el('span', {class: 'figures'}, ''),\n"
	"    el('span', {class: 'count', 'data-count': m.count}, plural(m.count, 'event')),\n"
	"    el('span', {class: 'figures'}, num(rate) + '/s on average'));\n"
	"  if (m.lost) h.append(el('span', {class: 'figures lostnote', 'data-lost': m.lost}, m.lost + ' lost'));\n"
	"  s.append(h);\n"
	"  const svg = el('svg', {width: W + X0, height: H + 30, class: 'rate'}, undefined, true);\n"
	"  let max = 0;\n"
	"  for (const c of m.bins) max = Math.max(max, c);\n"
	"  const bw = W / F.nbins, perS = 1e9 / F.bin_ns;\n"
	"  m.bins.forEach((c, i) => {\n"
	"    const bh = max ? c / max * H : 0;\n"
	"    const r = el('rect', {class: 'bin', x: X0 + i * bw, y: H - bh, width: Math.max(bw - 1, 1), height: bh,\n"
	"      'data-count': c}, undefined, true);\n"
	"    r.append(el('title', {}, plural(c, 'event') + ' (' + num(c * perS) + '/s) at +' + dur(i * F.bin_ns), true));\n"
	"    svg.append(r);\n"
	"  });\n"
	"  m.lost_bins.forEach((c, i) => {\n"
	"    if (!c) return;\n"
	"    const x = X0 + (i + 0.5) * bw;\n"
	"    const l = el('line', {class: 'lost', x1: x, x2: x, y1: 0, y2: H, 'data-lost': c}, undefined, true);\n"
	"    l.append(el('title', {}, c + ' lost, found at +' + dur(i * F.bin_ns), true));\n"
	"    const right = x > X0 + W - 80; /* the label left of its mark, not past the chart */\n"
	"    svg.append(l, el('text', {class: 'lostlabel', x: right ? x - 3 : x + 3, y: 10,\n"
	"      'text-anchor': right ? 'end' : 'start'}, c + ' lost', true));\n"
	"  });\n"
	"  svg.append(el('text', {class: 'axis', x: 0, y: 10}, num(max * perS) + '/s', true),\n"
	"    el('text', {class: 'axis', x: 0, y: H}, '0', true),\n"
	"    el('text', {class: 'axis', x: X0, y: H + 14}, '+0', true),\n"
	"    el('text', {class: 'axis', x: X0 + W - 60, y: H + 14}, '+' + dur(span), true));\n"
	"  s.append(svg);\n"
	"  markers.append(s);\n"
	"}\n"
	"const lat = document.getElementById('latencies');\n"
	"if (!F.slices.length) lat.append(el('p', {}, 'No pairs: trace a function and its return (func:NAME and '\n"
	"  + 'func:NAME%return), or name a pair with --slice START,END[:KEY].'));\n"
	"for (const sl of F.slices) {\n"
	"  const s = el('section', {class: 'latency', 'data-slice': sl.name, 'data-count': sl.count,\n"
	"    'data-unfinished': sl.unfinished});\n"
	"  const h = el('h2', {}, sl.name);\n"
	"  h.append(el('span', {class: 'count', 'data-count': sl.count}, ' ' + plural(sl.count, 'slice')));\n"
	"  if (sl.count) h.append(el('span', {class: 'figures'}, 'min ' + dur(sl.min_ns) + ', mean ' +\n"
	"    dur(Math.round(sl.sum_ns / sl.count)) + ', max ' + dur(sl.max_ns)));\n"
	"  if (sl.unfinished) h.append(el('span', {class: 'figures'}, sl.unfinished + ' closed without their end'));\n"
	"  s.append(h);\n"
	"  let lo = sl.buckets.findIndex(c => c > 0), hi = sl.buckets.length - 1;\n"
	"  while (hi > 0 && !sl.buckets[hi]) hi--;\n"
	"  if (lo >= 0) {\n"
	"    let max = 0;\n"
	"    for (let b = lo; b <= hi; b++) max = Math.max(max, sl.buckets[b]);\n"
	"    const rh = 18, svg = el('svg', {width: W + X0 + 120, height: (hi - lo + 1) * rh + 4, class: 'hist'},\n"
	"      undefined, true);\n"
	"    for (let b = lo; b <= hi; b++) {\n"
	"      const c = sl.buckets[b], y = (b - lo) * rh, from = b ? 2 ** b : 0, to = 2 ** (b + 1);\n"
	"      const r = el('rect', {class: 'bar', x: X0 + 50, y: y + 2, width: max ? c / max * W * 0.8 : 0,\n"
	"        height: rh - 4, 'data-lo': from, 'data-hi': to, 'data-count': c}, undefined, true);\n"
	"      r.append(el('title', {}, c + ' of ' + dur(from) + ' to ' + dur(to), true));\n"
	"      svg.append(el('text', {class: 'axis', x: 0, y: y + rh - 5}, '[' + dur(from) + ',', true),\n"
	"        el('text', {class: 'axis', x: X0, y: y + rh - 5}, dur(to) + ')', true), r,\n"
	"        el('text', {class: 'axis', x: X0 + 56 + (max ? c / max * W * 0.8 : 0), y: y + rh - 5}, c, true));\n"
	"    }\n"
	"    s.append(svg);\n"
	"  }\n"
	"  lat.append(s);\n"
	"}\n"
	"document.body.setAttribute('data-drawn', '1');\n"
	"</script>\n</body></html>\n";

static void html_end(struct djp_output *o)
{
	struct html *h = h_of(o);
	FILE *out = o->out;

	djp_pairs_end(h->pairs, h->last);
	if (h->oom)
		fputs("djp: out of memory: the page leaves some markers or slices out\n", stderr);
	fputs(page_head, out);
	fprintf(out, "{\"t0_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"bin_ns\":%" PRIu64 ",\"nbins\":%u,\n\"markers\":[",
		h->t0, h->last, h->width ? h->width : 1000, h->width ? h->hi + 1 : 0);
	for (size_t i = 0; i < h->nrows; i++) {
		struct row *r = h->rows[i];
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
		page_string(out, r->name);
		fprintf(out, ",\"count\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"bins\":", r->count, r->lost);
		u64_array(out, r->bins, h->width ? h->hi + 1 : 0);
		fputs(",\"lost_bins\":", out);
		u64_array(out, r->lost_bins, h->width ? h->hi + 1 : 0);
		fputs("}", out);
	}
	fputs("],\n\"slices\":[", out);
	for (size_t i = 0; i < h->nslices; i++) {
		struct slice *s = &h->slices[i];
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", out);
		page_string(out, s->name);
		fprintf(out,
			",\"count\":%" PRIu64 ",\"unfinished\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			",\"sum_ns\":%" PRIu64 ",\"buckets\":",
			s->count, s->forced, s->count ? s->min : 0, s->max, s->sum);
		u64_array(out, s->buckets, NBUCKETS);
		fputs("}", out);
		free(s->name);
	}
	fputs("]}\n", out);
	fputs(page_script, out);
	for (size_t i = 0; i < h->nrows; i++)
		free(h->rows[i]->name);
	tdestroy(h->by_name, free);
	free(h->rows);
	free(h->slices);
	free(h);
	o->priv = NULL;
}

const struct djp_output_ops djp_output_html = {
	.name = "html",
	.begin = html_begin,
	.event = html_event,
	.lost = html_lost,
	.end = html_end,
};
