/*
 * `djp flame [-o OUT.svg] [--title TEXT] [FILE]`: an SVG flame graph of
 * folded stacks (a script's print_folded(), stackcollapse's output).
 *
 * The input is a line a stack, root first, frames joined by ';', then
 * white space and a whole number of samples:
 *
 *     main;parse;lex 12
 *
 * Lines of the same stack add up; empty lines are skipped.  Anything
 * else is an error that names the line, before a byte is written: no
 * count at the end, a count that is no whole number or too large, a
 * stack with no frame or with an empty one.
 *
 * The stacks become a tree, as a flame graph shows them: the stacks are
 * sorted frame by frame, by name, so that the callees of each frame come
 * together and in alphabetical order, and each stack goes down the tree
 * along the path the one before it made, branching where its frames
 * differ.  A frame's count is its stacks', its children's included; the
 * root, "all", has every sample.  flame_svg.c draws it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "flame.h"

struct stack {
	char **frame;
	unsigned n;
	uint64_t count;
};

struct input {
	const char *name; /* for messages */
	struct stack *v;
	size_t n, cap;
	unsigned long line;
	char err[512];
};

void djp_usage_flame(FILE *out)
{
	fprintf(out, "usage: djp flame [-o OUT.svg] [--title TEXT] [FILE]\n"
		     "\n"
		     "Draw the folded stacks of FILE (standard input without one) as an SVG\n"
		     "flame graph: a line a stack, root first, frames joined by ';', then its\n"
		     "count (\"main;parse;lex 12\"), as a script's print_folded() writes them and\n"
		     "flamegraph.pl reads them.  Click a frame to zoom, Ctrl-F or Search to\n"
		     "highlight frames by a regular expression.\n"
		     "\n"
		     "  -o OUT.svg     write the SVG to OUT.svg instead of standard output\n"
		     "  --title TEXT   the graph's title (\"Flame Graph\")\n");
}

static int bad(struct input *in, const char *why)
{
	snprintf(in->err, sizeof(in->err), "%s:%lu: %s", in->name, in->line, why);
	return -EINVAL;
}

/* One line (its newline gone), into in->v; 0 or -EINVAL with in->err. */
static int parse_line(struct input *in, char *s)
{
	size_t len = strlen(s);
	char *sp, *end, *p;
	struct stack st = { 0 };

	while (len && (s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t'))
		s[--len] = 0;
	if (!len)
		return 0;
	sp = s + len;
	while (sp > s && sp[-1] != ' ' && sp[-1] != '\t')
		sp--;
	if (sp == s)
		return bad(in, "no count at the end of the line (expected 'FRAME;FRAME... COUNT')");
	if (!strchr("0123456789", *sp))
		return bad(in, "the count at the end of the line is not a whole number");
	errno = 0;
	st.count = strtoull(sp, &end, 10);
	if (*end)
		return bad(in, "the count at the end of the line is not a whole number");
	if (errno == ERANGE)
		return bad(in, "the count at the end of the line is too large");
	while (sp > s && (sp[-1] == ' ' || sp[-1] == '\t'))
		*--sp = 0;
	if (sp == s)
		return bad(in, "no frames before the count");
	for (p = s;; p++) {
		char *semi = strchr(p, ';');
		char **f;
		if (semi)
			*semi = 0;
		if (!*p)
			return free(st.frame), bad(in, "an empty frame name (two ';' in a row, or one at an end)");
		if (!(f = realloc(st.frame, (st.n + 1) * sizeof(*f))))
			abort();
		st.frame = f;
		st.frame[st.n++] = p;
		if (!semi)
			break;
		p = semi;
	}
	if (in->n == in->cap) {
		in->cap = in->cap ? in->cap * 2 : 256;
		if (!(in->v = realloc(in->v, in->cap * sizeof(*in->v))))
			abort();
	}
	in->v[in->n++] = st;
	return 0;
}

static int read_input(struct input *in, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	int err = 0;

	while (getline(&line, &cap, f) >= 0) {
		char *copy;
		in->line++;
		line[strcspn(line, "\n")] = 0;
		if (!(copy = strdup(line)))
			abort();
		if ((err = parse_line(in, copy)) < 0) {
			free(copy);
			break;
		}
		if (!in->n || in->v[in->n - 1].frame[0] != copy)
			free(copy); /* an empty line: nothing points into it */
	}
	free(line);
	if (!err && ferror(f)) {
		snprintf(in->err, sizeof(in->err), "%s: %s", in->name, strerror(errno));
		err = -EIO;
	}
	if (!err && !in->n) {
		snprintf(in->err, sizeof(in->err), "%s: no stacks (an empty input)", in->name);
		err = -EINVAL;
	}
	return err;
}

static int by_frames(const void *pa, const void *pb)
{
	const struct stack *a = pa, *b = pb;
	for (unsigned i = 0; i < a->n && i < b->n; i++) {
		int c = strcmp(a->frame[i], b->frame[i]);
		if (c)
			return c;
	}
	return (a->n > b->n) - (a->n < b->n);
}

/* The sorted stacks into the tree, each along the path of the one before. */
static int build(struct input *in, struct flame_graph *g)
{
	qsort(in->v, in->n, sizeof(*in->v), by_frames);
	g->root.name = "all";
	for (size_t i = 0; i < in->n; i++) {
		const struct stack *st = &in->v[i];
		struct flame_node *at = &g->root;

		if (__builtin_add_overflow(at->count, st->count, &at->count)) {
			snprintf(in->err, sizeof(in->err), "%s: the counts add up to more than %llu", in->name,
				 (unsigned long long)UINT64_MAX);
			return -EINVAL;
		}
		for (unsigned k = 0; k < st->n; k++) {
			struct flame_node *last = at->nchild ? &at->child[at->nchild - 1] : NULL;
			if (!last || strcmp(last->name, st->frame[k])) {
				if (at->nchild == at->cap) {
					at->cap = at->cap ? at->cap * 2 : 4;
					if (!(at->child = realloc(at->child, at->cap * sizeof(*at->child))))
						abort();
				}
				last = &at->child[at->nchild++];
				memset(last, 0, sizeof(*last));
				last->name = st->frame[k];
			}
			last->count += st->count; /* below the root's, which did not overflow */
			at = last;
		}
		if (st->n > g->depth)
			g->depth = st->n;
	}
	if (!g->root.count) {
		snprintf(in->err, sizeof(in->err), "%s: no samples (every count is 0)", in->name);
		return -EINVAL;
	}
	return 0;
}

static void free_node(struct flame_node *n)
{
	for (unsigned i = 0; i < n->nchild; i++)
		free_node(&n->child[i]);
	free(n->child);
}

static void free_all(struct input *in, struct flame_graph *g, char *svg)
{
	for (size_t i = 0; i < in->n; i++) {
		free(in->v[i].frame[0]); /* the line the frames are in */
		free(in->v[i].frame);
	}
	free(in->v);
	free_node(&g->root);
	free(svg);
}

/* OUT.svg whole or not at all: written beside it, then renamed over it. */
static int write_file(const char *path, const char *svg, size_t len)
{
	size_t n = strlen(path) + 5;
	char *tmp = malloc(n);
	FILE *o;
	int status = 0;

	if (!tmp)
		abort();
	snprintf(tmp, n, "%s.tmp", path);
	if (!(o = fopen(tmp, "we"))) {
		fprintf(stderr, "djp: %s: %s\n", tmp, strerror(errno));
		free(tmp);
		return 1;
	}
	if (fwrite(svg, 1, len, o) != len || fflush(o) || ferror(o)) {
		fprintf(stderr, "djp: %s: %s\n", tmp, strerror(errno));
		status = 1;
	}
	if (fclose(o) && !status) {
		fprintf(stderr, "djp: %s: %s\n", tmp, strerror(errno));
		status = 1;
	}
	if (!status && rename(tmp, path)) {
		fprintf(stderr, "djp: %s: %s\n", path, strerror(errno));
		status = 1;
	}
	if (status)
		unlink(tmp);
	free(tmp);
	return status;
}

int djp_cmd_flame(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out_path = NULL, *title = "Flame Graph";
	struct input in = { .name = "stdin" };
	struct flame_graph g = { 0 };
	char *svg = NULL;
	size_t svg_len = 0;
	FILE *f = stdin, *mem;
	int c, err, status = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out_path = optarg;
			break;
		case 't':
			title = optarg;
			break;
		case 'h':
			djp_usage_flame(stdout);
			return 0;
		default:
			fprintf(stderr, "djp flame: %s '%s' (djp flame --help)\n",
				optopt ? "option needs an argument:" : "unknown option", argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "djp flame: one input file at most, not %d (djp flame --help)\n", argc - optind);
		return 2;
	}
	if (optind < argc && strcmp(argv[optind], "-")) {
		in.name = argv[optind];
		if (!(f = fopen(in.name, "re"))) {
			fprintf(stderr, "djp: %s: %s\n", in.name, strerror(errno));
			return 1;
		}
	}
	err = read_input(&in, f);
	if (f != stdin)
		fclose(f);
	if (!err)
		err = build(&in, &g);
	if (err) {
		fprintf(stderr, "djp: %s\n", in.err);
		free_all(&in, &g, NULL);
		return 1;
	}
	/* the whole SVG first: a failed write leaves no half of one */
	if (!(mem = open_memstream(&svg, &svg_len)))
		abort();
	err = flame_svg_write(mem, &g, title);
	if (fclose(mem) || err)
		abort();
	if (out_path)
		status = write_file(out_path, svg, svg_len);
	else if (fwrite(svg, 1, svg_len, stdout) != svg_len || fflush(stdout)) {
		fprintf(stderr, "djp: standard output: %s\n", strerror(errno));
		status = 1;
	}
	free_all(&in, &g, svg);
	return status;
}
