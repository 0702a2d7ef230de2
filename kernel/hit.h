/*
 * What runs at a hit: the dispatch of a site's handlers (kernel/dispatch.c)
 * and what a handler may ask of the hit's registers (kernel/callee_saved.c,
 * kernel/hit_info.c).
 */
#ifndef DJP_KERNEL_HIT_H
#define DJP_KERNEL_HIT_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/site.h"

/* dispatch.c */
void djp_dispatch_lean(struct djp_hit *hit);
void djp_dispatch_full(struct djp_hit *hit);
void djp_trap_probe(struct djp_hit *hit);
bool djp_in_handler(void);
/* Fill in l->lean, l->full and l->prefetch (and l->plan, l->wants_prefetch)
 * from the handlers of a new list for site `s` (djp_list_make does). */
void djp_list_seal(struct djp_handler_list *l, const struct djp_site *s);
/* A return's hit (retprobes.c): its handlers, lean or as a trap's, with
 * the values its entry kept; and argument i of those while they run on
 * this thread (DJP_LOC_SAVED), 0 elsewhere. */
void djp_dispatch_return(struct djp_hit *hit, const uint64_t *vals, bool lean);
uint64_t djp_ret_saved(unsigned i);

/* callee_saved.c: an instruction probe's %rbx, %rbp or %r12-%r15 (DWARF
 * number) at a lean hit, from where the handler's frames keep them; 0
 * when a frame on the way has no call-frame information.  _prepare sets
 * up the unwinder outside any handler (connect time). */
uint64_t djp_callee_saved_reg(const struct djp_hit *hit, int dwarf_reg);
void djp_callee_saved_prepare(void);

/* retprobes.c, "Values read at the entry": what a return site's handler
 * asked to read at each call's entry (a script's $p->len at a .return is
 * the value it had then), kept in the call's pending return.  The entry
 * function (one, the agent's) is called at each diverted entry with the
 * entry's hit and both sites, and fills `out` (owner: whose values they
 * are, NULL: none); a return's handlers find them through
 * djp_ret_entry_values() while they run on this thread, NULL elsewhere. */
#define DJP_RET_ENTRY_MAX 64
struct djp_ret_entry {
	const void *owner;
	uint64_t faulted; /* bit i: v[i] is the address that could not be read */
	uint64_t v[DJP_RET_ENTRY_MAX];
};
typedef void (*djp_ret_entry_fn)(const struct djp_hit *hit, const struct djp_site *entry,
				 const struct djp_site *ret, struct djp_ret_entry *out);
void djp_ret_set_entry_fn(djp_ret_entry_fn fn);
const struct djp_ret_entry *djp_ret_entry_values(void);

/* retprobes.c: the return address that the stack word at `slot` held before this
 * thread's call there was diverted (it holds djp_ret_tramp's now), or 0
 * when no pending return of the thread has that slot: for a stack walk
 * in a handler.  Async-signal-safe. */
uintptr_t djp_ret_diverted(uintptr_t slot);
/* The handlers of the engine's probes on the unwinder's entry points
 * (ret_unwinder.c): every pending frame of the thread given its return
 * address back (parked), and a catch's frames above it diverted again. */
void djp_ret_unwinder_hook(const struct djp_hit *hit, void *data);
void djp_ret_catch_hook(const struct djp_hit *hit, void *data);

#endif
