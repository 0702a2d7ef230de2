// SPDX-License-Identifier: GPL-2.0
/*
 * The int3 of a batch: what a CPU does when it arrives at a site while the
 * bootstrap has 0xcc in its first byte.
 *
 * Before a batch, kconnect.c publishes the batch's sites here, sorted by
 * address, with what each is becoming; after the batch's last sync it
 * unpublishes them, and the table is freed after an RCU grace period.  A
 * CPU that hits one of the int3s enters exc_int3(), which is NMI-like (no
 * locks, no sleeping); kprobes looks first and, finding no kprobe of its
 * own at the address, passes it to the die notifiers, of which this
 * file's is one (DIE_INT3, regs->ip one past the 0xcc):
 *
 *   - ip-1 is a site of the table: a site being armed (or already armed,
 *     as far as this CPU knows) runs its handlers, as the trampoline would
 *     have, then, like a site being disarmed, resumes after the 6-byte
 *     instruction (regs->ip = site + 6): the NOP needs no emulation;
 *   - anything else is someone else's int3 (a debugger's, a kprobe on its
 *     way in): NOTIFY_DONE, untouched.
 *
 * A CPU can arrive late, after the batch wrote the new first byte back:
 * kprobes' own handler sees that the byte is no longer 0xcc and rewinds
 * regs->ip to re-execute it (the kernel's stale-trap rule), so that case
 * never reaches this notifier.
 *
 * The lookup is a binary search of an array published with
 * rcu_assign_pointer() and read with rcu_dereference_sched(): allocation
 * and lock free, as the context requires.
 */
#include <linux/kdebug.h>
#include <linux/kernel.h>
#include <linux/notifier.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "addr_sorted.h"
#include "djprobe_int.h"

struct trap_entry {
	unsigned long addr;	/* first: lib/addr_sorted.h */
	const struct djp_ksite *site;
	bool arming;
};

struct trap_table {
	struct rcu_head rcu;
	size_t n;
	struct trap_entry e[];
};
static_assert(offsetof(struct trap_entry, addr) == 0);

static struct trap_table __rcu *trap_table;

int djp_trap_publish(struct djp_ksite **arm, size_t narm, struct djp_ksite **disarm, size_t ndisarm)
{
	struct trap_table *t;
	size_t i, n = 0;

	t = kmalloc(struct_size(t, e, narm + ndisarm), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	for (i = 0; i < narm; i++)
		t->e[n++] = (struct trap_entry){ arm[i]->addr, arm[i], true };
	for (i = 0; i < ndisarm; i++)
		t->e[n++] = (struct trap_entry){ disarm[i]->addr, disarm[i], false };
	t->n = n;
	if (!djp_addr_sorted(t->e, n, sizeof(t->e[0])))
		sort(t->e, n, sizeof(t->e[0]), djp_addr_cmp, NULL);
	t = rcu_replace_pointer(trap_table, t, lockdep_is_held(&djp_mutex));
	if (t)
		kfree_rcu(t, rcu);
	return 0;
}

void djp_trap_unpublish(void)
{
	struct trap_table *t = rcu_replace_pointer(trap_table, NULL, lockdep_is_held(&djp_mutex));

	/* A CPU may still be looking at it: freed after a grace period,
	 * without waiting for one here (a batch costs three syncs, not a
	 * grace period more). */
	if (t)
		kfree_rcu(t, rcu);
}

/* (the search user space's SIGTRAP handler makes too) */
static const struct trap_entry *trap_find(const struct trap_table *t, unsigned long addr)
{
	return djp_addr_find(t->e, t->n, sizeof(t->e[0]), addr);
}

static int trap_notify(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	struct pt_regs *regs = args->regs;
	const struct trap_table *t;
	const struct trap_entry *e;
	int ret = NOTIFY_DONE;

	if (val != DIE_INT3 || !regs || user_mode(regs))
		return NOTIFY_DONE;
	rcu_read_lock_sched_notrace();
	t = rcu_dereference_sched(trap_table);
	e = t ? trap_find(t, regs->ip - 1) : NULL;
	if (e) {
		if (e->arming)
			djp_dispatch(e->site, regs);
		regs->ip = e->addr + DJP_SITE_LEN;
		ret = NOTIFY_STOP;
	}
	rcu_read_unlock_sched_notrace();
	return ret;
}

static struct notifier_block trap_nb = {
	.notifier_call = trap_notify,
	/* before anyone who would take an unknown int3 for their own */
	.priority = INT_MAX,
};

int djp_trap_init(void)
{
	return register_die_notifier(&trap_nb);
}

void djp_trap_exit(void)
{
	unregister_die_notifier(&trap_nb);
}
