/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rings /dev/djprobe fills (kring.c has the essay; the layout is
 * <djprobe/kdev.h>'s, which is lib/ring.h's).
 */
#ifndef DJP_KMOD_KRING_H
#define DJP_KMOD_KRING_H

#include <linux/irq_work.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <djprobe/kdev.h>

/* One CPU's producer: its own positions and counts, never read back from
 * the mapping. */
struct djp_kring_cpu {
	u64 head;	/* end of the last event committed */
	u64 tail;	/* what the tool said it has read (DJP_KIOC_CONSUMED) */
	u64 nevents;
	u64 lost_full;
	u64 lost_nested;
	unsigned int nesting;
	struct djp_kslot_hdr *slot;
	u8 *data;
} ____cacheline_aligned;

struct djp_kring {
	void *region;		/* vmalloc_user: what the tool maps */
	size_t size;
	u32 nslots, nsubbufs;
	u64 ring_size, sb_size;
	struct djp_kring_cpu *cpu; /* nslots of them */
	/* poll: a sleeping reader is woken through an irq_work, which a
	 * handler may queue from any context, an int3 trap included */
	wait_queue_head_t wait;
	struct irq_work wake_work;
	int sleeping;
};

int djp_kring_create(struct djp_kring *kr, u64 ring_size, u32 nsubbufs);
/* Only once no handler can record into it any more. */
void djp_kring_destroy(struct djp_kring *kr);
/* One event on this CPU; preemption disabled, any context.  Bit i of
 * str_mask: args[i] points to a string in kernel memory, copied in. */
void djp_kring_record(struct djp_kring *kr, u32 marker_id, const u64 *args, unsigned int nargs, u32 str_mask,
		      u64 task);
/* The tool has read CPU cpu's ring up to position tail. */
void djp_kring_consumed(struct djp_kring *kr, unsigned int cpu, u64 tail);
/* Is there an event the tool has not said it read?  Arms the wake-up. */
bool djp_kring_poll_ready(struct djp_kring *kr);

#endif
