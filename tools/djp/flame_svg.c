/*
 * A flame graph as an SVG file that a browser opens and a person explores,
 * as the ones flamegraph.pl draws.
 *
 * The drawing.  Each frame of the tree (flame.h) is a box: the root,
 * "all", along the bottom at the full width, each frame's callees on top
 * of it, side by side in the order of their names, each as wide as its
 * share of the samples (count / all's count of the width between the
 * margins).  What a frame's callees leave of its width is the time spent
 * in the frame itself.  A box narrower than a tenth of a pixel is left
 * out, and its callees with it (they are narrower still): that keeps a
 * graph of a million stacks small, and it cannot be seen anyway.  A
 * box's colour comes from a hash of its name, on flamegraph.pl's warm
 * palette, so that a function has one colour wherever it is and from
 * one run to the next.
 *
 * Each frame is a group of three elements, in document order:
 *
 *     <g><title>NAME (N samples, P%)</title><rect .../><text>LABEL</text></g>
 *
 * The title is what a browser shows on hover; the label is the name cut
 * to the box ("pars.." when the box is narrow, nothing when it holds
 * fewer than three letters).  Above the frames, the title of the graph;
 * below them, a line of details.
 *
 * The script (inline, as in flamegraph.pl's SVGs, so that the file is the
 * whole thing): hovering a frame writes its name and samples into the
 * details line; clicking one zooms on it: it and its callees are spread
 * over the full width, its callers stretched below it, everything else
 * hidden, and "Reset Zoom" undoes that.  Ctrl-F (or F3, or the Search
 * button) asks for a regular expression and paints every frame whose name
 * matches in purple, and writes the share of the samples the matches
 * cover (a match inside another counted once) at the bottom right; Escape
 * or "Reset Search" undoes that.  The script reads the geometry back from
 * the boxes, so the file has no second copy of the data.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "flame.h"

#define WIDTH 1200.0
#define XPAD 10.0
#define FRAME_H 16.0
#define FONT_SIZE 12.0
#define FONT_W 0.59 /* a letter's width, in font sizes (Verdana, as flamegraph.pl) */
#define YPAD_TOP (FONT_SIZE * 3)
#define YPAD_BOTTOM (FONT_SIZE * 2 + 10)
#define MIN_WIDTH 0.1

struct svg {
	FILE *out;
	double scale; /* pixels a sample */
	double height;
};

/* s as XML text: the five special characters as entities, control
 * characters (which XML 1.0 has no way to write) and bytes that are not
 * UTF-8 as '?'.  At most max characters when max >= 0. */
static void xml_text(FILE *out, const char *s, long max)
{
	const unsigned char *p = (const unsigned char *)s;
	for (long n = 0; *p && (max < 0 || n < max); n++) {
		unsigned len = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
		bool ok = len > 0;
		for (unsigned i = 1; ok && i < len; i++)
			ok = (p[i] & 0xc0) == 0x80;
		if (!ok || (len == 1 && (*p < 0x20 || *p == 0x7f))) {
			fputc('?', out);
			p++;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: fwrite(p, 1, len, out);
		}
		p += len;
	}
}

/* Characters of s (UTF-8 sequences count one). */
static long chars(const char *s)
{
	long n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n;
}

/* The name cut to a box w pixels wide, as the script cuts it too. */
static void label(FILE *out, const char *name, double w)
{
	long fit = (long)((w - 3) / (FONT_SIZE * FONT_W));
	if (fit < 3)
		return;
	if (chars(name) <= fit) {
		xml_text(out, name, -1);
		return;
	}
	xml_text(out, name, fit - 2);
	fputs("..", out);
}

/* flamegraph.pl's "hot" palette, from a hash of the name (FNV-1a). */
static void colour(FILE *out, const char *name)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	fprintf(out, "rgb(%u,%u,%u)", 205 + 50 * (h >> 24) / 255, 230 * (h & 0xff) / 255, 55 * (h >> 8 & 0xff) / 255);
}

static void frame(struct svg *s, const struct flame_node *n, uint64_t total, uint64_t start, unsigned level)
{
	double x = XPAD + (double)start * s->scale, w = (double)n->count * s->scale;
	double y = s->height - YPAD_BOTTOM - (level + 1) * FRAME_H;

	if (w < MIN_WIDTH)
		return;
	fputs("<g><title>", s->out);
	xml_text(s->out, n->name, -1);
	fprintf(s->out, " (%" PRIu64 " sample%s, %.2f%%)</title>", n->count, n->count == 1 ? "" : "s",
		100.0 * (double)n->count / (double)total);
	fprintf(s->out, "<rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" height=\"%.1f\" rx=\"2\" ry=\"2\" fill=\"", x, y, w,
		FRAME_H - 1);
	colour(s->out, n->name);
	fprintf(s->out, "\"/><text x=\"%.3f\" y=\"%.1f\">", x + 3, y + FRAME_H - 5.5);
	label(s->out, n->name, w);
	fputs("</text></g>\n", s->out);
	for (unsigned i = 0; i < n->nchild; i++) {
		frame(s, &n->child[i], total, start, level + 1);
		start += n->child[i].count;
	}
}

/* The script of the essay; its constants are the drawing's. */
static const char script[] =
	"\"use strict\";\n"
	"var frames, details, searchbtn, unzoombtn, matched, searching = null;\n"
	"function init(evt) {\n"
	"  frames = document.getElementById(\"frames\");\n"
	"  details = document.getElementById(\"details\").firstChild;\n"
	"  searchbtn = document.getElementById(\"search\");\n"
	"  unzoombtn = document.getElementById(\"unzoom\");\n"
	"  matched = document.getElementById(\"matched\");\n"
	"  for (var f = frames.firstElementChild; f; f = f.nextElementSibling) {\n"
	"    var r = f.querySelector(\"rect\"), t = f.querySelector(\"title\").textContent;\n"
	"    f.ox = parseFloat(r.getAttribute(\"x\"));\n"
	"    f.ow = parseFloat(r.getAttribute(\"width\"));\n"
	"    f.oy = parseFloat(r.getAttribute(\"y\"));\n"
	"    f.fill = r.getAttribute(\"fill\");\n"
	"    f.fname = t.substring(0, t.lastIndexOf(\" (\"));\n"
	"  }\n"
	"  frames.addEventListener(\"click\", function (e) { var f = frame_of(e.target); if (f) zoom(f); });\n"
	"  frames.addEventListener(\"mouseover\", function (e) {\n"
	"    var f = frame_of(e.target);\n"
	"    if (f) details.nodeValue = \"Function: \" + f.querySelector(\"title\").textContent;\n"
	"  });\n"
	"  frames.addEventListener(\"mouseout\", function () { details.nodeValue = \" \"; });\n"
	"  unzoombtn.addEventListener(\"click\", unzoom);\n"
	"  searchbtn.addEventListener(\"click\", search_prompt);\n"
	"  window.addEventListener(\"keydown\", function (e) {\n"
	"    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {\n"
	"      e.preventDefault();\n"
	"      search_prompt();\n"
	"    } else if (e.keyCode === 27) {\n"
	"      reset_search();\n"
	"    }\n"
	"  });\n"
	"}\n"
	"function frame_of(e) {\n"
	"  while (e && e.parentNode !== frames) e = e.parentNode;\n"
	"  return e;\n"
	"}\n"
	"function place(f, x, w) {\n"
	"  var r = f.querySelector(\"rect\"), t = f.querySelector(\"text\"), fit = Math.floor((w - 3) / (FONT_SIZE * FONT_W));\n"
	"  var s = Array.from(f.fname);\n"
	"  f.style.display = \"\";\n"
	"  r.setAttribute(\"x\", x.toFixed(3));\n"
	"  r.setAttribute(\"width\", w.toFixed(3));\n"
	"  t.setAttribute(\"x\", (x + 3).toFixed(3));\n"
	"  t.textContent = fit < 3 ? \"\" : s.length <= fit ? f.fname : s.slice(0, fit - 2).join(\"\") + \"..\";\n"
	"}\n"
	"function zoom(z) {\n"
	"  var eps = 0.002, full = WIDTH - 2 * XPAD, scale = full / z.ow;\n"
	"  for (var f = frames.firstElementChild; f; f = f.nextElementSibling) {\n"
	"    var inside = f.ox >= z.ox - eps && f.ox + f.ow <= z.ox + z.ow + eps;\n"
	"    var around = f.ox <= z.ox + eps && f.ox + f.ow >= z.ox + z.ow - eps;\n"
	"    if (f.oy > z.oy && around) place(f, XPAD, full);\n"
	"    else if (f.oy <= z.oy && inside) place(f, XPAD + (f.ox - z.ox) * scale, f.ow * scale);\n"
	"    else f.style.display = \"none\";\n"
	"  }\n"
	"  unzoombtn.classList.remove(\"hide\");\n"
	"}\n"
	"function unzoom() {\n"
	"  for (var f = frames.firstElementChild; f; f = f.nextElementSibling) place(f, f.ox, f.ow);\n"
	"  unzoombtn.classList.add(\"hide\");\n"
	"}\n"
	"function search_prompt() {\n"
	"  if (searching !== null) {\n"
	"    reset_search();\n"
	"    return;\n"
	"  }\n"
	"  var term = prompt(\"Search for frames whose name matches (a regular expression):\", \"\");\n"
	"  if (term) search(term);\n"
	"}\n"
	"function search(term) {\n"
	"  var re, spans = [], covered = 0, end = -1;\n"
	"  try { re = new RegExp(term); } catch (e) { return; }\n"
	"  for (var f = frames.firstElementChild; f; f = f.nextElementSibling) {\n"
	"    if (!re.test(f.fname)) continue;\n"
	"    f.querySelector(\"rect\").setAttribute(\"fill\", \"rgb(230,0,230)\");\n"
	"    spans.push([f.ox, f.ox + f.ow]);\n"
	"  }\n"
	"  searching = term;\n"
	"  searchbtn.firstChild.nodeValue = \"Reset Search\";\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  for (var i = 0; i < spans.length; i++) {\n"
	"    var a = Math.max(spans[i][0], end);\n"
	"    if (spans[i][1] > a) covered += spans[i][1] - a;\n"
	"    end = Math.max(end, spans[i][1]);\n"
	"  }\n"
	"  matched.firstChild.nodeValue = spans.length ? \"Matched: \" + (100 * covered / (WIDTH - 2 * XPAD)).toFixed(1) + \"%\" : \"No match\";\n"
	"  matched.classList.remove(\"hide\");\n"
	"}\n"
	"function reset_search() {\n"
	"  for (var f = frames.firstElementChild; f; f = f.nextElementSibling) f.querySelector(\"rect\").setAttribute(\"fill\", f.fill);\n"
	"  searching = null;\n"
	"  searchbtn.firstChild.nodeValue = \"Search\";\n"
	"  matched.classList.add(\"hide\");\n"
	"}\n";

int flame_svg_write(FILE *out, const struct flame_graph *g, const char *title)
{
	struct svg s = { .out = out };

	s.height = (g->depth + 1) * FRAME_H + YPAD_TOP + YPAD_BOTTOM;
	s.scale = g->root.count ? (WIDTH - 2 * XPAD) / (double)g->root.count : 0;
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" onload=\"init(evt)\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n",
		WIDTH, s.height, WIDTH, s.height);
	fprintf(out,
		"<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%%\"/>"
		"</linearGradient></defs>\n"
		"<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %.0fpx; fill: rgb(0,0,0); }\n"
		"#title { text-anchor: middle; font-size: %.0fpx; }\n"
		"#search, #unzoom { cursor: pointer; opacity: 0.8; }\n"
		"#search:hover, #unzoom:hover { opacity: 1; }\n"
		".hide { display: none; }\n"
		"#frames > g { cursor: pointer; }\n"
		"#frames > g:hover > rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
		"#frames text { pointer-events: none; }\n"
		"</style>\n",
		FONT_SIZE, FONT_SIZE + 5);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\nvar WIDTH = %.0f, XPAD = %.0f, FONT_SIZE = %.0f, FONT_W = %.2f;\n%s]]></script>\n",
		WIDTH, XPAD, FONT_SIZE, FONT_W, script);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"url(#background)\"/>\n", WIDTH, s.height);
	fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"%.0f\">", WIDTH / 2, FONT_SIZE * 2);
	xml_text(out, title, -1);
	fprintf(out, "</text>\n<text id=\"details\" x=\"%.0f\" y=\"%.0f\"> </text>\n", XPAD, s.height - FONT_SIZE / 2 - 5);
	fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%.0f\" y=\"%.0f\">Reset Zoom</text>\n", XPAD, FONT_SIZE * 2);
	fprintf(out, "<text id=\"search\" x=\"%.0f\" y=\"%.0f\">Search</text>\n", WIDTH - XPAD - 100, FONT_SIZE * 2);
	fprintf(out, "<text id=\"matched\" class=\"hide\" x=\"%.0f\" y=\"%.0f\"> </text>\n", WIDTH - XPAD - 100,
		s.height - FONT_SIZE / 2 - 5);
	fputs("<g id=\"frames\">\n", out);
	frame(&s, &g->root, g->root.count, 0, 0);
	fputs("</g>\n</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}
