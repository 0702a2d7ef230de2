/*
 * `djp flame`: folded stacks to an SVG flame graph.  flame.c reads the
 * stacks into a tree, flame_svg.c draws it.
 */
#ifndef DJP_TOOLS_FLAME_H
#define DJP_TOOLS_FLAME_H

#include <stdint.h>
#include <stdio.h>

/* A frame: a function as the stacks of its callers reached it.  Its
 * children are sorted by name; count is its samples, its children's
 * included. */
struct flame_node {
	const char *name;
	uint64_t count;
	struct flame_node *child;
	unsigned nchild, cap;
};

struct flame_graph {
	struct flame_node root; /* "all" */
	unsigned depth;		/* frames of the deepest stack */
};

/* Write g as an SVG flame graph titled title to out; 0, or -errno. */
int flame_svg_write(FILE *out, const struct flame_graph *g, const char *title);

#endif
