/*
 * djprobe.ko's internal interface: the objects the engine's files share
 * (sites, modules, probes) and the calls between them.  The public API is
 * include/djprobe/djprobe.h's kernel section; the char device (a client
 * like any other kernel caller) needs nothing from here but what that
 * header and djp_for_each_marker give.
 *
 *   kmarkers.c        finds the records of a module (kallsyms), kimage.c
 *                     those of the kernel image; ksites.c parses them
 *                     with lib/markers_parse.c into sites for both
 *   kconnect.c        probes, patterns, connect/disconnect, the module
 *                     notifier, and the site state changes they cause
 *   ktext.c           writes to text through a writable alias, the sync
 *                     (IPI or stop_machine), around arch/x86/text_poke.c
 *   ktrap.c           the die notifier for the int3 of a batch
 *   ktramp.c/.S       trampoline slots inside djprobe.ko's own text
 *   kprobe_fallback.c register_kprobe() where no jump is placed
 *   khit.c            dispatch to handlers and the djp_hit_* accessors
 */
#ifndef DJP_KMOD_DJPROBE_INT_H
#define DJP_KMOD_DJPROBE_INT_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/mutex.h>
#include <asm/ptrace.h>

/*
 * The argument-location parser is user space's (lib/argloc.h), which comes
 * with user space's register view, a struct djp_hit of its own: renamed
 * here, since djprobe.ko's struct djp_hit is the one below.
 */
#define djp_hit djp_uspace_hit
#include "argloc.h"
#include "markers.h"
#undef djp_hit

#include <djprobe/djprobe.h>
#include "kernel/apply_steps.h"

#define DJP_NOP6 { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }
#define DJP_SITE_LEN 6

extern const u8 djp_nop6[DJP_SITE_LEN];

/* ---- sites, modules, probes (kconnect.c) ---- */

/* A site's way (kernel/apply_steps.h, user space's too). */
enum djp_how {
	DJP_HOW_OFF = DJP_WAY_OFF,	/* the NOP */
	DJP_HOW_JUMP = DJP_WAY_JUMP,	/* e9 rel32 to slot `slot` */
	DJP_HOW_KPROBE = DJP_WAY_TRAP,	/* register_kprobe() at the site */
};

struct djp_handler {
	djp_handler_fn fn;
	void *data;
};

/* A site's handlers, immutable once published (RCU, read with preemption
 * disabled). */
struct djp_hlist {
	unsigned int n;
	struct djp_handler h[];
};

struct djp_kmod;

struct djp_ksite {
	unsigned long addr;	     /* first: lib/addr_sorted.h */
	struct djp_kmod *kmod;
	struct djp_marker_list *rec; /* the parsed record; owns the strings */
	const struct djp_marker_info *m;
	struct djp_hlist __rcu *handlers;
	enum djp_how how;
	int slot;		     /* its trampoline slot (kept while off), or -1 */
	struct djp_kp *kp;	     /* KPROBE: the kprobe */
	unsigned int nprobes;
	/* a jump someone covered, left armed: djprobe.ko holds a reference
	 * on itself while it is, for its slot is where the jump goes */
	bool pinned;
	/* scratch of one state change (kconnect.c), under djp_mutex */
	enum djp_how to;
	struct djp_hlist *new_hl;
	bool changing;
};

struct djp_kmod {
	struct list_head node;
	struct module *mod;	     /* NULL for the kernel image */
	const char *name;	     /* mod->name, or "vmlinux" */
	unsigned int nsites;
	struct djp_ksite *sites;
};

extern struct mutex djp_mutex;

/* Module load and unload: the module notifier, the modules already there,
 * and on exit every probe disconnected and every site off. */
int djp_core_init(void);
void djp_core_exit(void);

/* ---- discovery (kmarkers.c) ---- */

/* The sites of `mod`'s markers, parsed and checked, into a new kmod (NULL
 * with nsites 0 when it has none).  Sleeps; `mod` must not go away. */
int djp_kmod_read(struct module *mod, struct djp_kmod **out);
/* The kernel image's markers (kimage.c), found through the patch series'
 * exported kernel_markers: a new kmod named "vmlinux", or NULL when the
 * kernel has no such symbol.  Sleeps. */
int djp_kimage_read(struct djp_kmod **out);
/* What both finders do alike (ksites.c): the one marker of the record at
 * `rec` (`size` bytes, of `owner`), or -errno after one warning; a site
 * filled in from it (which then owns it); the sites sorted by address,
 * each pointing at km; an exported symbol's address, as a
 * djp_sym_lookup_fn's answer.  djp_kmod_free frees what the finders made. */
int djp_ksite_parse(unsigned long rec, u16 size, const char *owner, djp_sym_lookup_fn lookup, void *ctx,
		    struct djp_marker_list **out);
void djp_ksite_init(struct djp_ksite *site, struct djp_marker_list *l);
void djp_kmod_sites_sort(struct djp_kmod *km);
int djp_ksym_exported(void *ctx, const char *name, size_t len, uint64_t *addr);
void djp_kmod_free(struct djp_kmod *km);

/* ---- text (ktext.c) ---- */

enum djp_sync_mode { DJP_SYNC_IPI, DJP_SYNC_STOP_MACHINE };
extern int djp_sync_mode;
/* Apply a batch of site changes with the int3 bootstrap (text_poke.c),
 * synchronised as the `sync` parameter says; on failure every site holds
 * its old bytes. */
struct djp_poke;
int djp_text_batch(struct djp_poke *p, size_t n);
/* Write text nobody executes (free trampoline slots) through an alias
 * mapped once for many writes. */
struct djp_text_alias;
struct djp_text_alias *djp_text_alias_map(unsigned long start, size_t len);
int djp_text_alias_write(struct djp_text_alias *a, unsigned long addr, const void *buf, size_t len);
void djp_text_alias_unmap(struct djp_text_alias *a);

/* ---- the int3 of a batch (ktrap.c) ---- */

/* While a batch runs, the sites in it, so that a CPU that hits the int3
 * runs the handlers (arming) or steps over (disarming). */
int djp_trap_publish(struct djp_ksite **arm, size_t narm, struct djp_ksite **disarm, size_t ndisarm);
void djp_trap_unpublish(void);
int djp_trap_init(void);
void djp_trap_exit(void);

/* ---- trampolines (ktramp.c) ---- */

/* A slot for `site` in range of it, written and published, or -ENOSPC /
 * -ERANGE / -ENOMEM (the caller falls back to a kprobe).  The slots'
 * alias stays mapped until djp_tramp_done(), so that a batch of a
 * thousand sites maps it once. */
int djp_tramp_get(struct djp_ksite *site);
void djp_tramp_done(void);
/* The jump from `site` to its slot. */
void djp_tramp_jump(const struct djp_ksite *site, int slot, u8 out[DJP_SITE_LEN]);
/* Unpublish a slot whose site no longer jumps there (its module is going,
 * or the slot is reclaimed): it returns to the free list after an
 * RCU-tasks grace period. */
void djp_tramp_put(int slot);
int djp_tramp_init(void);
void djp_tramp_exit(void);

/* ---- kprobes (kprobe_fallback.c) ---- */

int djp_kp_arm(struct djp_ksite *site);
void djp_kp_disarm(struct djp_ksite *site);

/* ---- dispatch (khit.c) ---- */

struct djp_hit {
	const struct djp_ksite *site;
	struct pt_regs *regs;
};

/* Run `site`'s handlers for a hit with these registers: preemption off,
 * one level deep per CPU (a hit inside a handler is a miss). */
void djp_dispatch(const struct djp_ksite *site, struct pt_regs *regs);
/* Hits not run because a handler was running on the CPU. */
DECLARE_PER_CPU(unsigned long, djp_misses);
extern atomic_long_t djp_kp_missed;

#endif
