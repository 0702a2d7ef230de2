/*
 * Sites armed with the kernel's uprobe and a BPF program that records
 * their events in the rings' format (uprobes.c has how, record.bpf.c the
 * program): the recording backend for sites that cannot take a jump,
 * where the engine in the process would otherwise trap each hit with an
 * int3 and handle it in a SIGTRAP handler.
 */
#ifndef DJP_TOOLS_UPROBE_UPROBES_H
#define DJP_TOOLS_UPROBE_UPROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/argloc.h" /* struct djp_argloc: how an argument is read at a site */
#include "lib/ring.h"	/* struct djp_event */

struct djp_uprobes; /* one BPF object, its ring buffer, its uprobes */

struct djp_uprobe_site {
	int32_t pid;	      /* the process whose hits count (the uprobe is filtered to it) */
	const char *path;     /* the object file that holds the site */
	uint64_t file_off;    /* the site's file offset in it */
	uint64_t addr;	      /* the site's run-time address in pid: hits elsewhere are dropped */
	uint64_t ref_ctr_off; /* an SDT semaphore's file offset, 0: none (the kernel raises it while armed) */
	uint32_t marker_id;   /* written into each event */
	unsigned nargs;	      /* at most DJP_MARKER_MAX_ARGS (12) */
	const struct djp_argloc *arg; /* nargs locations, as lib/argloc.h has them */
	uint64_t bias;	      /* the object's load bias in pid: DJP_LOC_ABS addresses + bias */
	uint32_t str_mask;    /* bit i: argument i points to a string to copy into the event */
	unsigned str_bound;   /* bytes a string may take, NUL included (0: DJP_RING_STR_BOUND) */
};

/* Load the program and make the ring buffer.  -errno and one line in err
 * ("the kernel's uprobes need CAP_BPF and CAP_PERFMON", "BPF: ...") when it
 * cannot be had: the caller then keeps int3 probes. */
int djp_uprobes_open(struct djp_uprobes **out, char *err, size_t errsz);
/* Arm one site: its slot (>= 0), which each of its events names; or
 * -errno and one line in err.  A slot is taken again only after its
 * site is disarmed, and after every other free one. */
int djp_uprobes_attach(struct djp_uprobes *u, const struct djp_uprobe_site *s, char *err, size_t errsz);
/* Disarm the site of slot (nothing when it is not armed). */
void djp_uprobes_detach(struct djp_uprobes *u, int slot);
/* Disarm every site armed for pid (its process is gone or detaching). */
void djp_uprobes_detach_pid(struct djp_uprobes *u, int32_t pid);
/* The events written so far, in the order the ring has them: fn gets each
 * with its site's slot and the process and thread that hit it; ev->timestamp is CLOCK_MONOTONIC
 * nanoseconds (bpf_ktime_get_ns).  fn returning non-zero stops (the event
 * is consumed).  Returns the number handed out, or -errno. */
typedef int (*djp_uprobe_ev_fn)(void *ctx, int slot, int32_t pid, int32_t tid, const struct djp_event *ev);
long djp_uprobes_consume(struct djp_uprobes *u, djp_uprobe_ev_fn fn, void *ctx);
/* Hits whose event the ring had no room for, in all. */
uint64_t djp_uprobes_lost(const struct djp_uprobes *u);
/* How many sites are armed now. */
unsigned djp_uprobes_armed(const struct djp_uprobes *u);
/* Disarm everything and free it (NULL is fine). */
void djp_uprobes_close(struct djp_uprobes *u);

#endif
