// SPDX-License-Identifier: GPL-2.0
/*
 * The rings of /dev/djprobe: per-CPU event rings the kernel fills and the
 * djp tool maps read-only.
 *
 * How it works.  The layout is the user-space rings' (lib/ring.h, written
 * out for the kernel in <djprobe/kdev.h>, and written with the user-space
 * recorder's lib/ring_write.h), so that the tool drains both with one
 * reader: a header page, then one slot per possible CPU, each a
 * slot header and a ring cut into sub-buffers that no event straddles.
 * A slot is a CPU, not a thread: the handler runs with preemption
 * disabled, so the CPU it runs on is the only writer of that ring, and the
 * only thing that can come between two of its stores is an interrupt (or
 * an int3 trap) that hits a marker itself.  A per-CPU nesting count turns
 * such an inner hit into a counted loss (lost_nested), as the user-space
 * recorder does for a signal handler: no reservation protocol, no atomic
 * read-modify-write on the way, and an outer event is never torn.
 *
 * The event is written, then its header word, then the slot's head with a
 * release store; the reader loads head with acquire and reads below it.
 * Entering a sub-buffer, the producer announces it (seq = k + 1, then the
 * count of events so far), as the user-space producer does, although only
 * discard mode is used here.  The kernel trusts nothing in the mapping:
 * positions and counts live in struct djp_kring_cpu and are only written
 * out.  The tool maps the region read-only and says how far it has read
 * with an ioctl (djp_kring_consumed), which only ever moves the private
 * tail forward, up to the head.  A full ring drops the event and counts it
 * (lost_full): a handler never waits.
 *
 * A %s argument is copied into the event after the arguments, as the
 * user-space recorder lays strings out (its word a descriptor, then the
 * pointer and the text), with copy_from_kernel_nofault() (6.1 does not
 * export strncpy_from_kernel_nofault), which returns an error at an
 * unmapped address instead of faulting and may be called from any
 * context: "<bad>" then, with the fault bit.  It is asked for no more than
 * the rest of a page at a time, so that a string that ends just before an
 * unmapped page is still read whole.  The room reserved is that of
 * the longest strings; the head moves by what was written.
 *
 * Timestamps are ktime_get_mono_fast_ns(): CLOCK_MONOTONIC, the clock of
 * the user-space rings, and safe in NMI-like context where ktime_get_ns()
 * could spin on the timekeeper's sequence count it interrupted.
 *
 * Waking the tool.  poll() sets `sleeping` before it looks at the rings;
 * a handler that commits an event, after a full barrier, queues an
 * irq_work when it sees the flag (irq_work_queue is NMI-safe, wake_up is
 * not), and the irq_work wakes the wait queue.  The flag is cleared when
 * poll finds data, so a busy tool costs the handlers a load and a barrier.
 */
#include <linux/bitops.h>
#include <linux/cpumask.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "kring.h"
#include "ring_write.h"

/* The layout is lib/ring.h's, which <djprobe/kdev.h> spells for the tool. */
static_assert(DJP_KEVF_PAD == DJP_EVF_PAD && DJP_KEVF_STRINGS == DJP_EVF_STRINGS && DJP_KEVF_CPU == DJP_EVF_CPU &&
	      DJP_KEVF_TASK == DJP_EVF_TASK && DJP_KMARKER_PAD == DJP_MARKER_PAD);
static_assert(DJP_KSTR_TRUNCATED == DJP_STR_TRUNCATED && DJP_KSTR_FAULT == DJP_STR_FAULT &&
	      DJP_KSTR_NULL == DJP_STR_NULL && DJP_KSTR_ADDR == DJP_STR_ADDR);

#define SLOT_HDR_BYTES(nsb) \
	ALIGN(offsetof(struct djp_kslot_hdr, sb) + (nsb) * sizeof(struct djp_ksubbuf_rec), 4096)

static void djp_kring_wake(struct irq_work *w)
{
	struct djp_kring *kr = container_of(w, struct djp_kring, wake_work);

	wake_up_interruptible(&kr->wait);
}

int djp_kring_create(struct djp_kring *kr, u64 ring_size, u32 nsubbufs)
{
	struct djp_kregion_hdr *h;
	u64 slot_hdr = SLOT_HDR_BYTES(nsubbufs), stride = slot_hdr + ring_size;
	unsigned int i;

	BUILD_BUG_ON(sizeof(struct djp_kregion_hdr) > DJP_KRING_HDR_SIZE);
	BUILD_BUG_ON(offsetof(struct djp_kslot_hdr, head) != 128);
	BUILD_BUG_ON(offsetof(struct djp_kslot_hdr, tail) != 256);
	if (!is_power_of_2(ring_size) || !is_power_of_2(nsubbufs) || ring_size / nsubbufs < 1024)
		return -EINVAL;
	memset(kr, 0, sizeof(*kr));
	kr->nslots = nr_cpu_ids;
	kr->nsubbufs = nsubbufs;
	kr->ring_size = ring_size;
	kr->sb_size = ring_size / nsubbufs;
	kr->size = DJP_KRING_HDR_SIZE + kr->nslots * stride;
	kr->cpu = kcalloc(kr->nslots, sizeof(*kr->cpu), GFP_KERNEL);
	kr->region = vmalloc_user(kr->size);
	if (!kr->cpu || !kr->region) {
		kfree(kr->cpu);
		vfree(kr->region);
		return -ENOMEM;
	}
	h = kr->region;
	h->magic = DJP_KRING_MAGIC;
	h->version = DJP_KRING_VERSION;
	h->hdr_size = sizeof(*h);
	h->slot_hdr_size = slot_hdr;
	h->nslots = kr->nslots;
	h->ring_size = ring_size;
	h->subbuf_size = kr->sb_size;
	h->nsubbufs = nsubbufs;
	h->mode = 0; /* discard */
	h->slot_stride = stride;
	h->slots_offset = DJP_KRING_HDR_SIZE;
	h->total_size = kr->size;
	h->str_bound = DJP_KRING_STR_BOUND;
	h->clock.kind = 1; /* CLOCK_MONOTONIC ns */
	h->clock.mult = 1;
	h->clock.raw_hz = NSEC_PER_SEC;
	h->slots_used = kr->nslots;
	for (i = 0; i < kr->nslots; i++) {
		struct djp_kring_cpu *c = &kr->cpu[i];

		c->slot = (struct djp_kslot_hdr *)((u8 *)kr->region + DJP_KRING_HDR_SIZE + i * stride);
		c->data = (u8 *)c->slot + slot_hdr;
		c->slot->owner = (u64)i << 32 | DJP_KSLOT_ACTIVE;
	}
	init_waitqueue_head(&kr->wait);
	init_irq_work(&kr->wake_work, djp_kring_wake);
	return 0;
}

void djp_kring_destroy(struct djp_kring *kr)
{
	if (!kr->region)
		return;
	irq_work_sync(&kr->wake_work);
	vfree(kr->region);
	kfree(kr->cpu);
	kr->region = NULL;
	kr->cpu = NULL;
}

/* Up to bound bytes of the string at src into dst, NUL-terminated within
 * them: its length with the NUL (bound when it goes on, dst[bound - 1]
 * then made a NUL), or -EFAULT; page by page (see the top). */
static long copy_kstr(char *dst, const char *src, long bound)
{
	long got = 0;

	while (got < bound) {
		unsigned long a = (unsigned long)src + got;
		long n = min_t(long, bound - got, PAGE_SIZE - (a & ~PAGE_MASK));
		const char *z;

		if (copy_from_kernel_nofault(dst + got, (const void *)a, n))
			return -EFAULT;
		z = memchr(dst + got, 0, n);
		if (z)
			return z - dst + 1;
		got += n;
	}
	dst[bound - 1] = 0;
	return bound;
}

/* The string at kernel address ptr into dst (DJP_KRING_STR_BOUND bytes),
 * NUL-terminated: its length and DJP_STR_* bits (lib/ring_write.h). */
static u64 copy_string(char *dst, u64 ptr)
{
	const char *src = (const char *)(unsigned long)ptr;
	long n;
	char c;

	if (!ptr) {
		memcpy(dst, DJP_STR_NULL_TEXT, sizeof(DJP_STR_NULL_TEXT));
		return (sizeof(DJP_STR_NULL_TEXT) - 1) | DJP_STR_NULL;
	}
	n = copy_kstr(dst, src, DJP_KRING_STR_BOUND);
	if (n <= 0) {
		memcpy(dst, DJP_STR_BAD_TEXT, sizeof(DJP_STR_BAD_TEXT));
		return (sizeof(DJP_STR_BAD_TEXT) - 1) | DJP_STR_FAULT;
	}
	/* n counts the NUL; at the bound, the source may go on */
	if (n == DJP_KRING_STR_BOUND &&
	    (copy_from_kernel_nofault(&c, src + DJP_KRING_STR_BOUND - 1, 1) || c))
		return (n - 1) | DJP_STR_TRUNCATED;
	return n - 1;
}

/* The strings of the event at e after its nargs words; returns where the
 * next word goes, in bytes from e. */
static u32 put_strings(u64 *e, const u64 *args, unsigned int nargs, u32 str_mask)
{
	u32 off = DJP_EV_HDR_SIZE + 8 * nargs;
	unsigned int i;

	for (i = 0; i < nargs; i++)
		if (str_mask & (1u << i))
			off = djp_ring_str_put(e, i, off, copy_string(djp_ring_str_text(e, off, args[i]), args[i]));
	return off;
}

void djp_kring_record(struct djp_kring *kr, u32 marker_id, const u64 *args, unsigned int nargs, u32 str_mask,
		      u64 task)
{
	unsigned int cpu = smp_processor_id(), i;
	struct djp_kring_cpu *c;
	u64 pos, at, *e, sb_mask = kr->sb_size - 1;
	u32 size, flags = DJP_EVF_TASK | DJP_EVF_CPU;

	if (unlikely(cpu >= kr->nslots))
		return;
	c = &kr->cpu[cpu];
	if (c->nesting) {
		WRITE_ONCE(c->slot->lost_nested, ++c->lost_nested);
		return;
	}
	c->nesting = 1;
	barrier();
	if (nargs > DJP_KRING_MAX_ARGS)
		nargs = DJP_KRING_MAX_ARGS;
	str_mask &= (1u << nargs) - 1;
	/* header, args, the longest strings, task, cpu */
	size = DJP_EV_HDR_SIZE + 8 * nargs + hweight32(str_mask) * (8 + DJP_KRING_STR_BOUND) + 16;
	pos = c->head;
	if (!djp_ring_place(pos, size, kr->sb_size, &at) || at + size - READ_ONCE(c->tail) > kr->ring_size) {
		WRITE_ONCE(c->slot->lost_full, ++c->lost_full);
		goto out;
	}
	djp_ring_pad(c->data, kr->ring_size, kr->sb_size, pos, at, 0);
	if ((at & sb_mask) == 0) {
		/* entering sub-buffer k: announce it before writing into it */
		u64 k = at / kr->sb_size;
		struct djp_ksubbuf_rec *rec = &c->slot->sb[k & (kr->nsubbufs - 1)];

		WRITE_ONCE(rec->seq, k + 1);
		smp_wmb();
		WRITE_ONCE(rec->count, c->nevents);
	}
	e = (u64 *)(c->data + (at & (kr->ring_size - 1)));
	e[0] = ktime_get_mono_fast_ns();
	for (i = 0; i < nargs; i++)
		e[2 + i] = args[i];
	if (str_mask) {
		size = put_strings(e, args, nargs, str_mask) + 16;
		flags |= DJP_EVF_STRINGS;
	}
	e[size / 8 - 2] = task;
	e[size / 8 - 1] = cpu;
	e[1] = djp_ev_word(marker_id, size, nargs, flags);
	WRITE_ONCE(c->slot->nevents, ++c->nevents);
	WRITE_ONCE(c->head, at + size);
	smp_store_release(&c->slot->head, at + size);
	smp_mb(); /* the event before the look at `sleeping`: poll's mirror */
	if (READ_ONCE(kr->sleeping))
		irq_work_queue(&kr->wake_work);
out:
	barrier();
	c->nesting = 0;
}

void djp_kring_consumed(struct djp_kring *kr, unsigned int cpu, u64 tail)
{
	struct djp_kring_cpu *c;
	u64 head;

	if (cpu >= kr->nslots)
		return;
	c = &kr->cpu[cpu];
	head = READ_ONCE(c->head);
	if (tail > head)
		tail = head;
	if (tail > READ_ONCE(c->tail))
		WRITE_ONCE(c->tail, tail);
}

bool djp_kring_poll_ready(struct djp_kring *kr)
{
	unsigned int i;

	WRITE_ONCE(kr->sleeping, 1);
	smp_mb(); /* the flag before the look at the heads: the handler's mirror */
	for (i = 0; i < kr->nslots; i++)
		if (READ_ONCE(kr->cpu[i].head) != READ_ONCE(kr->cpu[i].tail)) {
			WRITE_ONCE(kr->sleeping, 0);
			return true;
		}
	return false;
}
