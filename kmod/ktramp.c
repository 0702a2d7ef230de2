// SPDX-License-Identifier: GPL-2.0
/*
 * Trampolines: where an armed site's jump goes.
 *
 * A jump from a marker site (e9 rel32) reaches ±2 GiB.  module_alloc() is
 * not exported, but every module is loaded in the modules area, 1-2 GiB
 * wide, and djprobe.ko is a module too: so the trampolines live in a
 * region reserved inside djprobe.ko's own text (ktramp_entry.S), 4096
 * slots of 32 bytes of int3, always in range of any module's site (the
 * distance is still checked, and a site out of range falls back to a
 * kprobe).  Being text, the region is written like a site, through the
 * writable alias of ktext.c.
 *
 * A slot holds four instructions (ktramp_entry.S): it pushes its own
 * index, calls the common entry, which builds a struct pt_regs and calls
 * djp_tramp_dispatch(), drops the index and jumps back to site + 6.  The
 * index names the site through slot_site[], an RCU-published pointer, so
 * a slot's site can be unpublished before the site memory goes.  A slot is
 * written while it is free, before its site's batch starts: the batch's
 * first sync serialises every CPU before any of them can take the jump.
 * The slots of one state change are written through one alias of the
 * region (djp_tramp_done() unmaps it): a vmap and a vunmap per slot made
 * arming a thousand sites ten times slower.
 *
 * Lifetime.  A task can be preempted inside a slot (between its push and
 * its call, or in the dispatcher), so a slot that leaves its site returns
 * to the free list only after an RCU-tasks grace period (call_rcu_tasks):
 * by then every task has scheduled voluntarily or run in user space since
 * the site's last jump there, so none is inside.  Grace periods of RCU
 * tasks are slow (a second is common), so a site keeps its slot while
 * disarmed (kconnect.c): arming a thousand sites again right after
 * disarming them would otherwise find no slot free.  Unloading djprobe.ko
 * waits for the same (rcu_barrier_tasks in djp_tramp_exit).
 */
#include <linux/bitmap.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "djprobe_int.h"
#include "ktramp.h"

extern u8 djp_tramp_slots[];
extern u8 djp_tramp_common[];
void djp_tramp_dispatch(struct pt_regs *regs, unsigned long index);

static const struct djp_ksite __rcu *slot_site[DJP_TRAMP_SLOTS];
/* The region's writable alias while slots are being written (djp_mutex). */
static struct djp_text_alias *slots_alias;
static DECLARE_BITMAP(slot_used, DJP_TRAMP_SLOTS);
static DEFINE_SPINLOCK(slot_lock);

struct slot_release {
	struct rcu_head rcu;
	int slot;
};

static unsigned long slot_addr(int slot)
{
	return (unsigned long)djp_tramp_slots + (unsigned long)slot * DJP_TRAMP_SLOT_SIZE;
}

static bool rel32_reaches(unsigned long from_end, unsigned long to)
{
	long d = (long)(to - from_end);

	return d == (s32)d;
}

static void put_rel32(u8 *p, unsigned long from_end, unsigned long to)
{
	s32 d = (s32)(to - from_end);

	memcpy(p, &d, sizeof(d));
}

int djp_tramp_get(struct djp_ksite *site)
{
	unsigned long a;
	u8 code[20];
	int slot, ret;

	spin_lock(&slot_lock);
	slot = find_first_zero_bit(slot_used, DJP_TRAMP_SLOTS);
	if (slot < DJP_TRAMP_SLOTS)
		__set_bit(slot, slot_used);
	spin_unlock(&slot_lock);
	if (slot >= DJP_TRAMP_SLOTS)
		return -ENOSPC;

	a = slot_addr(slot);
	if (!rel32_reaches(site->addr + 5, a) || !rel32_reaches(a + 20, site->addr + DJP_SITE_LEN)) {
		ret = -ERANGE;
		goto free;
	}
	code[0] = 0x68;				/* push $slot */
	put_rel32(code + 1, 0, slot);
	code[5] = 0xe8;				/* call djp_tramp_common */
	put_rel32(code + 6, a + 10, (unsigned long)djp_tramp_common);
	memcpy(code + 10, "\x48\x8d\x64\x24\x08", 5); /* lea 8(%rsp),%rsp */
	code[15] = 0xe9;			/* jmp site + 6 */
	put_rel32(code + 16, a + 20, site->addr + DJP_SITE_LEN);
	if (!slots_alias)
		slots_alias = djp_text_alias_map((unsigned long)djp_tramp_slots,
						 DJP_TRAMP_SLOTS * DJP_TRAMP_SLOT_SIZE);
	ret = slots_alias ? djp_text_alias_write(slots_alias, a, code, sizeof(code)) : -ENOMEM;
	if (ret)
		goto free;
	rcu_assign_pointer(slot_site[slot], site);
	return slot;
free:
	spin_lock(&slot_lock);
	__clear_bit(slot, slot_used);
	spin_unlock(&slot_lock);
	return ret;
}

void djp_tramp_done(void)
{
	djp_text_alias_unmap(slots_alias);
	slots_alias = NULL;
}

void djp_tramp_jump(const struct djp_ksite *site, int slot, u8 out[DJP_SITE_LEN])
{
	out[0] = 0xe9;
	put_rel32(out + 1, site->addr + 5, slot_addr(slot));
	/* Never executed (the slot returns to site + 6), but decoded: kprobes
	 * walks a function's instructions from its start before it probes an
	 * address (can_probe), and the NOP's 00 after a 5-byte jump would
	 * make it read "add" across the next instruction and refuse every
	 * address after the site with -EILSEQ.  A one-byte NOP keeps the
	 * walk on the instruction boundaries. */
	out[5] = 0x90;
}

static void slot_release_cb(struct rcu_head *rcu)
{
	struct slot_release *r = container_of(rcu, struct slot_release, rcu);

	spin_lock(&slot_lock);
	__clear_bit(r->slot, slot_used);
	spin_unlock(&slot_lock);
	kfree(r);
}

void djp_tramp_put(int slot)
{
	struct slot_release *r;

	RCU_INIT_POINTER(slot_site[slot], NULL);
	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!r) {
		synchronize_rcu_tasks();
		spin_lock(&slot_lock);
		__clear_bit(slot, slot_used);
		spin_unlock(&slot_lock);
		return;
	}
	r->slot = slot;
	call_rcu_tasks(&r->rcu, slot_release_cb);
}

/* Called by djp_tramp_common with the frame it built (ktramp_entry.S). */
notrace void djp_tramp_dispatch(struct pt_regs *regs, unsigned long index)
{
	const struct djp_ksite *site;

	if (index >= DJP_TRAMP_SLOTS)
		return;
	preempt_disable_notrace();
	site = rcu_dereference_sched(slot_site[index]);
	if (site) {
		regs->ip = site->addr;
		djp_dispatch(site, regs);
	}
	preempt_enable_notrace();
}
NOKPROBE_SYMBOL(djp_tramp_dispatch);

int djp_tramp_init(void)
{
	return 0;
}

void djp_tramp_exit(void)
{
	/* No site jumps here any more: once every task has passed a
	 * voluntary switch none is inside a slot, and the slots put earlier
	 * have their callbacks run. */
	synchronize_rcu_tasks();
	rcu_barrier_tasks();
}
