// SPDX-License-Identifier: GPL-2.0
/*
 * The kprobes fallback, literally: a site that cannot take a jump (no free
 * trampoline slot, a slot out of range) or whose probes ask for it
 * (DJP_FORCE_KPROBE, DJP_FORCE_INT3) gets register_kprobe() at its
 * address.  kprobes puts its int3 there (or, once it has optimised the
 * probe, its own jump), single-steps or emulates the NOP after the
 * pre-handler, and restores the byte on unregister_kprobe(), which also
 * waits until no pre-handler runs.  The pre-handler runs the site's
 * handlers through the same djp_dispatch() as the trampoline, with the
 * pt_regs kprobes gives (regs->ip one past the site; djp_hit_site() and
 * djp_hit_reg(16) still name the site), and returns 0: "carry on".
 *
 * The kprobe has a post-handler that does nothing, because kprobes never
 * optimises a kprobe that has one.  An optimised kprobe (a jump of its
 * own) is removed lazily: unregister_kprobe() returns with the jump still
 * there, and the optimiser puts the NOP back only after an RCU-tasks grace
 * period, so a site could neither be handed back "as the module file says"
 * when the last probe goes, nor be re-armed as a jump (the optimiser would
 * later write its copy of the NOP over our jump).  Unoptimised, the int3 is
 * gone when unregister_kprobe() returns.
 */
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/slab.h>

#include "djprobe_int.h"

atomic_long_t djp_kp_missed = ATOMIC_LONG_INIT(0);

struct djp_kp {
	struct kprobe kp;
	struct djp_ksite *site;
};

static int kp_pre(struct kprobe *p, struct pt_regs *regs)
{
	djp_dispatch(container_of(p, struct djp_kp, kp)->site, regs);
	return 0;
}
NOKPROBE_SYMBOL(kp_pre);

static void kp_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}
NOKPROBE_SYMBOL(kp_post);

/*
 * Store the site's first byte again, with the value it has now, through
 * djprobe's own alias (ktext.c's renew_first_bytes() says why): kprobes
 * wrote it through its own, and an emulator may still run a translation
 * of the old byte.  On hardware the store changes nothing.
 */
static void rewrite_first_byte(struct djp_ksite *site)
{
	struct djp_text_alias *a = djp_text_alias_map(site->addr, 1);
	u8 b = *(u8 *)site->addr;

	if (a) {
		djp_text_alias_write(a, site->addr, &b, 1);
		djp_text_alias_unmap(a);
	}
}

int djp_kp_arm(struct djp_ksite *site)
{
	struct djp_kp *k = kzalloc(sizeof(*k), GFP_KERNEL);
	int ret;

	if (!k)
		return -ENOMEM;
	k->site = site;
	k->kp.addr = (kprobe_opcode_t *)site->addr;
	k->kp.pre_handler = kp_pre;
	k->kp.post_handler = kp_post;
	ret = register_kprobe(&k->kp);
	if (ret) {
		pr_warn("djprobe: %s:%s: register_kprobe at %px failed (%d)\n", site->kmod->name, site->m->name,
			(void *)site->addr, ret);
		kfree(k);
		return ret;
	}
	site->kp = k;
	rewrite_first_byte(site);
	return 0;
}

void djp_kp_disarm(struct djp_ksite *site)
{
	if (!site->kp)
		return;
	unregister_kprobe(&site->kp->kp);
	atomic_long_add(site->kp->kp.nmissed, &djp_kp_missed);
	kfree(site->kp);
	site->kp = NULL;
	rewrite_first_byte(site);
	if (memcmp((void *)site->addr, djp_nop6, DJP_SITE_LEN))
		pr_warn("djprobe: %s:%s at %px holds %6ph after unregister_kprobe\n", site->kmod->name, site->m->name,
			(void *)site->addr, (void *)site->addr);
}
