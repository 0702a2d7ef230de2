/*
 * Probes: what decides which handler list each site gets.  A probe is a
 * pattern (or an instruction probe's points) and a handler; attaching it
 * finds its sites and gives each a list with it added (kernel/attach.c),
 * which the batch mechanism (kernel/arming.h) then arms.  Instruction
 * probes (points.c) and return probes (retprobes.c) make sites of their
 * own first.  Everything here runs with the engine lock held.
 */
#ifndef DJP_KERNEL_PROBES_H
#define DJP_KERNEL_PROBES_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/site.h"
#include "lib/func_source.h"

struct djp_probe {
	int id;
	char *pattern;
	djp_fast_plan_fn plan;
	djp_handler_fn fn;
	void *data;
	unsigned flags;
	struct djp_point *point; /* an instruction probe's points, or NULL */
	struct djp_probe *next;
};

/* An instruction probe's points, as the user gave them (point_spec.c
 * parses and checks them, points.c resolves them in each object). */
struct djp_point {
	char *object, *func, *line;
	/* func split once, when the point is made: the glob before any
	 * source qualifier, and the qualifier ("GLOB@FILE:LINE") */
	char *glob;
	bool has_src;
	struct djp_src_filter src;
	uint64_t offset;
	uintptr_t addr;
	bool retprobe;
};

/* attach.c: every probe connected, the engine's own included. */
extern struct djp_probe *djp_probes;

/* engine.c.  Everything the first connect sets up (text writer, signals,
 * sync, trampolines); lock held.  djp_engine_ready: it was, successfully. */
int djp_engine_init_locked(void);
bool djp_engine_ready(void);

/* The one attach and detach path (attach.c).  Attach gives the probe
 * every matching site it does not carry, outside closing objects;
 * `*matched` (if not NULL) counts the matches, closing ones included. */
int djp_probe_attach(const struct djp_probe *p, size_t *matched);
int djp_probes_attach_all(void);
int djp_probe_detach(int id);
int djp_objects_detach(struct djp_object *const *objs, size_t nobjs);
/* A probe of the engine's own, kept while return probes are connected
 * (pending: objects loaded later get it too): 0 and its id in *id (below
 * -1), or -errno.  djp__internal_probe_drop takes it away. */
int djp__internal_probe(struct djp_point *pt, djp_handler_fn fn, unsigned flags, int *id);
int djp__internal_probe_drop(int id);

/* site_lists.c: the pieces of an attach, below it: a vector of sites, and
 * giving each of them its list with `add` added or `remove_id` gone (one
 * batch; an SDT nop armed for the first time widened first). */
struct site_vec {
	struct djp_site **v;
	size_t n, cap;
};
int djp_site_vec_push(struct site_vec *sv, struct djp_site *s);
/* Does the site's handler list hold probe `id`? */
bool djp_site_carries(const struct djp_site *s, int id);
int djp_change_probe(struct site_vec *sv, const struct djp_probe *add, int remove_id);
/* A new list for site `s`: `l`'s handlers without probe `remove_id`, plus
 * `add` (either may be NULL / -1), sealed; NULL when it would be empty or
 * on ENOMEM. */
struct djp_handler_list *djp_list_make(const struct djp_handler_list *l, const struct djp_probe *add, int remove_id,
				       const struct djp_site *s);

/* retake.c: the sites given up to another tool's breakpoint whose bytes
 * are the file's again, the other tool gone: each given its own list
 * again, which arms it (one batch).  0 or -errno; a batch refused for a
 * site taken again meanwhile or a thread that blocks SIGTRAP is tried at
 * the next look. */
int djp_sites_retake(void);

/* points.c: instruction probes.  A probe's points resolved in every
 * object loaded: the sites that do not carry it yet (made the first time
 * a point is resolved) pushed on sv; 0, or the error of an exact point.
 * And a return site for every entry site of sv (once a site). */
int djp_point_resolve(const struct djp_probe *p, struct site_vec *sv, size_t *matched);
int djp_ret_sites(struct site_vec *sv);
/* point_spec.c: djp_connect_at's points, checked and made: 0 and *out,
 * -EINVAL or -ENOMEM. */
int djp__point_make(const struct djp_point_opts *where, struct djp_point **out);

/* func_code.c: an object's code as the jump rules read it (lock held).
 * Its function symbols (read once; NULL when it has none), the bias of
 * their addresses, the site of o or its points whose bytes hold addr, a
 * function's bytes with our armed sites' shadows laid over them (to
 * free), and how many bytes from a in function f (bytes b from start) a
 * jump may cover: 0 when none; *pre of them before a when the run starts
 * earlier (arch/x86's djp_jump_run). */
struct djp_func;
struct djp_func_table;
const struct djp_func_table *djp_object_funcs(struct djp_object *o);
uintptr_t djp_funcs_bias(const struct djp_object *o, const struct djp_func_table *t);
struct djp_site *djp_site_covering(struct djp_object *o, uintptr_t addr);
uint8_t *djp_function_bytes(struct djp_object *o, uintptr_t start, size_t size);
unsigned djp_jump_range(struct djp_object *o, const struct djp_func_table *t, const struct djp_func *f, const uint8_t *b,
			uintptr_t start, uintptr_t a, unsigned *pre);

/* sdt_widen.c: an idle SDT probe's 1-byte nop, about to be armed: widen
 * the site to the run of instructions a jump may cover from it, where the
 * rules allow (once a site; nothing changes when they do not). */
void djp_sdt_widen(struct djp_site *s);

/* retprobes.c: return probes.  djp_ret_attach gives probe p the entry
 * sites of sv (function entries that do not carry it yet): their return
 * sites (made by points.c's djp_ret_sites) get p's handler, the entries
 * the hook that diverts their returns; one batch each, undone together. */
int djp_ret_attach(struct site_vec *sv, const struct djp_probe *p);
/* ret_unwinder.c: keeps the engine's probes on the unwinder's entry
 * points while any return probe is connected. */
int djp_ret_probes_changed(int delta);
/* The return trampoline's entry (arch/x86/ret_tramp.S): a `ret` of a
 * diverted call lands there. */
extern char djp_ret_tramp[];

#endif
