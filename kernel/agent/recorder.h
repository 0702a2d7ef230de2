/*
 * The recorder: the built-in lean probe handler that writes each hit into
 * the calling thread's ring (kernel/agent/recorder.c has the essay).  Used by the
 * agent for every pattern a tool connects, and by the benchmark, which
 * connects it in-process through the same two calls.
 */
#ifndef DJP_KERNEL_RECORDER_H
#define DJP_KERNEL_RECORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "djprobe/djprobe.h"
#include "kernel/site.h"
#include "lib/proto.h"
#include "lib/ring.h"

struct djp_loads;

/* Marker ids below this have their own lost-event counter. */
#define DJP_RECORDER_MAX_IDS 65536u

/* djp_recorder_connect's flags: keep a pattern that matches nothing yet
 * for objects loaded later; record the user stack with each hit (a
 * script's ubacktrace()); arm as int3 breakpoints only (DJP_FORCE_INT3). */
#define DJP_RECORD_PENDING 1u
#define DJP_RECORD_USTACK 2u
#define DJP_RECORD_INT3 4u
/* the session's events carry the hit's registers (DJP_EVF_REGS), and with
 * _STACK the stack words above the return address too: rec->regs */
#define DJP_RECORD_REGS 8u
#define DJP_RECORD_REGS_STACK 16u
/* a site no jump can reach is left to the tool's uprobe, not made an int3
 * probe (DJP__KERNEL_TRAP, kernel/site.h); marker patterns only */
#define DJP_RECORD_KERNEL_TRAP 32u

/* Patterns whose markers' arguments a tool wants as strings (most). */
#define DJP_RECORDER_MAX_STR_PATTERNS 64

/* Arguments of a pattern's markers to copy as strings: what a script's
 * user_string($argN) needs of an SDT probe, whose arguments have no format. */
struct djp_recorder_strings {
	uint32_t args;	/* bit i: argument i is a pointer to a string */
	unsigned bound; /* bytes kept, NUL included (0: the recorder's) */
};

struct djp_recorder {
	struct djp_region *region;
	unsigned str_bound;	  /* %s bound, NUL included (0: the region's) */
	uint32_t *lost_by_id;	  /* DJP_RECORDER_MAX_IDS counters, or NULL */
	uint64_t lost_other;	  /* lost events of ids beyond the table */
	/* the tables region's lost counters (kernel/agent/agg.c), once a
	 * session has one: counted there instead, where the tool reads them */
	uint64_t *lost_shared;
	/* string arguments by pattern, and by marker id as computed from
	 * them and the marker's format (recorder.c) */
	struct {
		char *pattern;
		struct djp_recorder_strings want;
	} str_pat[DJP_RECORDER_MAX_STR_PATTERNS];
	unsigned nstr_pat;
	unsigned str_gen;
	uint64_t *str_cache; /* DJP_RECORDER_MAX_IDS entries, or NULL */
	/* each event carries its hit's CPU (DJP_EVF_CPU): a reader asked
	 * (DJP_CONNECT_CPU); such hits take the general entry, not the fast */
	bool cpu;
	/* each event carries its hit's registers (DJP_EVF_REGS, lib/proto.h's
	 * layout): 0 no, 1 the registers, 2 and DJP_REGS_STACK_WORDS stack
	 * words; set as cpu is, and no fast entry either */
	unsigned char regs;
	/* the words of a script's @var variables (VARS: their run-time
	 * addresses, 0 when not loaded), appended to the registers */
	unsigned nvars;
	uint64_t var_addr[DJP_VARS_MAX];
	/* a pointer whose string each event carries too, as a %s argument
	 * after the marker's: its bound, NUL included (0: none) */
	uint16_t var_str[DJP_VARS_MAX];
	/* not a variable but a register, DWARF number + 1 (0: a variable) */
	uint8_t var_reg[DJP_VARS_MAX];
	/* the call-frame tables were read for the stack handler (at the
	 * first DJP_RECORD_USTACK connect) */
	bool stack_ready;
	/* load programs by site (kernel/agent/loads.c), from the first
	 * LOADS on; NULL before */
	struct djp_loads *loads;
};

/* A recorder with a new ring region; NULL with errno set. */
struct djp_recorder *djp_recorder_create(const struct djp_ring_opts *opts);
/* Only once every probe connected with it is disconnected. */
void djp_recorder_destroy(struct djp_recorder *rec);

/* Connect the recorder to every marker matching `pattern` (DJP_GPR_ONLY),
 * with its fast entry: what djp_connect returns.  *nsites, if not NULL,
 * gets the number of sites the pattern matched.  flags: DJP_RECORD_*
 * (DJP_RECORD_USTACK reads the call-frame tables first, and connects the
 * stack handler, without a fast entry).  `strings`, if not NULL, names
 * arguments of its markers to copy as strings besides the %s of their
 * formats. */
int djp_recorder_connect(struct djp_recorder *rec, const char *pattern, unsigned flags,
			 const struct djp_recorder_strings *strings, unsigned *nsites);
/* The plan function djp_recorder_connect gives the engine (kernel/site.h):
 * a site's fast entry, a plain one or a typed one (a site with load
 * programs), or NULL for the general record. */
djp_fast_entry_fn djp_recorder_plan(void *data, const struct djp_site *s, struct djp_fast_plan *plan);

/* The sites `pattern` matches now. */
unsigned djp_recorder_count_sites(const char *pattern);

/* The handlers themselves (data is the struct djp_recorder): the event, and
 * the event with the user stack of the hit. */
void djp_recorder_hit(const struct djp_hit *hit, void *data);
void djp_recorder_hit_stack(const struct djp_hit *hit, void *data);

#endif
