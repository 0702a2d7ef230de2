// SPDX-License-Identifier: GPL-2.0
/*
 * Someone else's kprobe at a marker's site.
 *
 * Before a connect: the site holds kprobes' int3, not the NOP, so the
 * connect fails with -EBUSY and changes nothing.  Over an armed jump:
 * kprobes keeps our jump as the instruction it displaced and writes it
 * back when it goes, so djprobe.ko cannot take its jump back while the
 * kprobe is there.  The disconnect then leaves the jump armed with no
 * handler, and djprobe.ko holds a reference on itself, because the jump
 * leads into its text: unloading it would leave the jump pointing at
 * freed memory.  Once the kprobe goes, the next change disarms the site
 * and drops the reference.  The kprobe has a post-handler, so kprobes
 * never optimises it into a jump of its own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/string.h>
#include <djprobe/djprobe.h>
#include <djprobe/marker.h>
#include "kselftest.h"

static const u8 nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static atomic_t covered_hits, kprobe_hits;

static noinline void ks_covered_fn(int i)
{
	MARK(ks_covered, "i=%d", i);
}

static void covered_handler(const struct djp_hit *hit, void *data)
{
	atomic_inc(&covered_hits);
}

static int kp_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_inc(&kprobe_hits);
	return 0;
}

static void kp_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

static int find_site(const struct djp_kmarker *m, void *data)
{
	if (strcmp(m->module, KS_MODULE) || strcmp(m->name, "ks_covered"))
		return 0;
	*(unsigned long *)data = m->site;
	return 1;
}

/* djprobe.ko's reference count, as lsmod shows it. */
static unsigned int djprobe_refs(void)
{
	return (unsigned int)ks_read_number("/sys/module/djprobe/refcnt");
}

void ks_covered_run(void)
{
	struct kprobe kp = { .pre_handler = kp_pre, .post_handler = kp_post };
	unsigned long site = 0;
	unsigned int refs;
	u8 before[6];
	int id, id2, err;
	bool ok;

	djp_for_each_marker(find_site, &site);
	if (!site) {
		ks_tap(false, "a kprobe at a site: connect says -EBUSY # ks_covered not listed");
		ks_tap(false, "a kprobe over an armed jump pins djprobe.ko until it goes # ks_covered not listed");
		return;
	}
	/* before a connect */
	kp.addr = (void *)site;
	err = register_kprobe(&kp);
	memcpy(before, (void *)site, sizeof(before));
	id = err ? err : djp_connect(KS_MODULE ":ks_covered", covered_handler, NULL, 0);
	ok = !err && id == -EBUSY && !memcmp(before, (void *)site, sizeof(before));
	if (id >= 0)
		djp_disconnect(id);
	if (!err)
		unregister_kprobe(&kp);
	ks_tap(ok, "a kprobe at a site: connect says -EBUSY and changes nothing # register_kprobe %d, connect %d",
	       err, id);

	/* over an armed jump */
	memset(&kp, 0, sizeof(kp));
	kp.pre_handler = kp_pre;
	kp.post_handler = kp_post;
	kp.addr = (void *)site;
	refs = djprobe_refs();
	atomic_set(&covered_hits, 0);
	atomic_set(&kprobe_hits, 0);
	id = djp_connect(KS_MODULE ":ks_covered", covered_handler, NULL, 0);
	ok = id >= 0 && *(u8 *)site == 0xe9;
	err = ok ? register_kprobe(&kp) : -EINVAL;
	ok = ok && !err;
	ks_covered_fn(1); /* the kprobe's int3, then our jump run out of line */
	ok = ok && atomic_read(&covered_hits) == 1 && atomic_read(&kprobe_hits) == 1;
	if (id >= 0)
		ok = !djp_disconnect(id) && ok;
	ok = ok && djprobe_refs() == refs + 1; /* pinned */
	ks_covered_fn(2); /* the jump, with no handler */
	ok = ok && atomic_read(&covered_hits) == 1 && atomic_read(&kprobe_hits) == 2;
	if (!err)
		unregister_kprobe(&kp);
	ok = ok && *(u8 *)site == 0xe9; /* kprobes put our jump back */
	/* the next change disarms it and unpins */
	id2 = djp_connect(KS_MODULE ":ks_covered", covered_handler, NULL, 0);
	if (id2 >= 0)
		djp_disconnect(id2);
	ok = ok && id2 >= 0 && !memcmp((void *)site, nop6, sizeof(nop6)) && djprobe_refs() == refs;
	ks_covered_fn(3);
	ok = ok && atomic_read(&covered_hits) == 1;
	ks_tap(ok, "a kprobe over an armed jump: the disconnect leaves it, pinning djprobe.ko, until the kprobe goes "
		   "# connect %d, register_kprobe %d, hits %d/%d, refs %u -> %u, site %*ph",
	       id, err, atomic_read(&covered_hits), atomic_read(&kprobe_hits), refs, djprobe_refs(), 6,
	       (void *)site);
}
