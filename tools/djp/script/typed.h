/*
 * A script's typed accesses ($p->a->b, $p->arr[i], &$p->x, $return->f):
 * resolved against the DWARF of the functions their probes name, before
 * the check; their programs sent to the target; their values read from
 * each event (tools/djp/script/typed.c has the essay).
 */
#ifndef DJP_SCRIPT_TYPED_H
#define DJP_SCRIPT_TYPED_H

#include <stdbool.h>

#include "lib/typed_compile.h"
#include "tools/djp/script/lang/lang.h"

struct run;

/* A site whose functions lay a pretty-printed access out as layout
 * (0: the ref's tmpl, k: its layouts[k - 1]). */
struct typed_site_layout {
	char *name;
	unsigned layout;
};

/* One access, as parsed (N_TYPED's tr). */
struct typed_ref {
	struct djp_typed_access acc;
	const char *text; /* as written, for messages */
	/* resolve: compiled at every function of its probe, or why not */
	bool resolved, ok;
	char *err;
	struct probe *probe;
	/* check: its index in every site's program list, -1 before */
	int idx;
	/* check: read as a string (user_string()): the bytes to copy at
	 * the hit, NUL included; 0 when not */
	unsigned str_bound;
	/* $var$ (1), $var$$ (2): a string of its members (npieces values
	 * from idx on, laid out as the first function's tmpl); 0: a number */
	unsigned pretty;
	unsigned npieces;
	struct djp_pretty tmpl;
	bool has_tmpl;
	/* ... and where the functions lay it out differently ($$parms$ at
	 * function("*")): the other layouts, each site's (by its name: the
	 * first layout's when not listed), and at run time each event
	 * descriptor's (by its id: layout + 1, 0 not looked up yet) */
	struct djp_pretty *layouts;
	unsigned nlayouts;
	struct typed_site_layout *site_layouts;
	unsigned nsite_layouts;
	unsigned *desc_layout;
	unsigned ndesc_layout;
	/* $$parms$ ('p'), $$vars$ ('v'), $$locals$ ('l'), $$return$ ('r'):
	 * every one of them, "name=value" separated by spaces; 0: one */
	char all;
	/* @cast(pointer_arg(n), ...) and its kin: the call, whose register
	 * resolve_ref finds (acc.base_loc); NULL for a $var */
	struct node *base_call;
	/* @cast(p, ...) of a local: p (also the N_TYPED node's a), until
	 * resolution makes it the context variable p holds, or refuses it
	 * (typed.c, "Script values") */
	struct node *base_value;
};

/* An access from the global @var names: spec "name@file.c" (or "name",
 * any unit) into a->global_name and a->global_file (lib/typed_compile.h),
 * kept for the script's life. */
void typed_set_global(struct djp_typed_access *a, const char *spec);

/* Resolve the typed accesses of every probe (before check_script, for
 * @defined): 0, or 1 after an error line. */
int typed_resolve(struct script *sc, struct djp_source *src);
/* check.c: the access n is read by the probe being checked; false after
 * an error said at n. */
bool typed_check(struct script *sc, struct node *n);
/* Before arm: the load programs of every function site, into
 * src->load_sites. */
void typed_load_sites(struct script *sc, struct djp_source *src);
/* The value of access n in the event being run (rt_error on a fault). */
int64_t typed_value(struct run *r, const struct node *n);
/* The string access n names, copied at the hit when the probe asked for
 * it (str_bound): its text (NULL when it could not be read) and the
 * address in *addr; false when it was not copied. */
bool typed_string(struct run *r, const struct node *n, const char **text, uint64_t *addr);
/* The text of a pretty-printed access ($var$), in the run's arena. */
const char *typed_pretty_text(struct run *r, const struct node *n);

#endif
