// SPDX-License-Identifier: GPL-2.0
/*
 * Probes and the sites they arm: djp_connect, djp_disconnect, the modules
 * coming and going, and the one routine that moves sites between states.
 *
 * A probe is a pattern ("NAMEGLOB" or "MODGLOB:NAMEGLOB", matched by
 * lib/marker_match.c, user space's, with glob_match()'s globs), a handler
 * and flags.  A site's state follows from the probes that match it, in
 * connect order: none, it is off (the NOP); some, it holds a jump
 * to a trampoline slot; some, and one of them forces a kprobe (or no slot
 * can be had), it is a kprobe.  An armed site keeps its way while it has
 * probes: moving from one to the other leaves it a bare NOP in between
 * (kprobes must find the instruction, not our jump), and the probes that
 * stay would miss the hits of that window.  Every event that changes the probes or
 * the sites (connect, disconnect, a module coming, a module going) takes
 * djp_mutex, collects the sites concerned and calls sites_apply(), which
 * moves each to its new state in this order (the state machine of
 * kernel/apply_steps.c, which user space runs too; these are its steps
 * here):
 *
 *   step 1: compute each site's new handler list and state; on connect,
 *           check that every site about to be armed holds what its state
 *           says (the NOP, or our jump): anything else is someone else's
 *           (a kprobe's int3, an optimised kprobe's jump) and the whole
 *           connect fails with -EBUSY before anything changes;
 *   step 2: give a trampoline slot to each site becoming a jump that has
 *           none (none free, or out of range: the site becomes a kprobe
 *           instead).  A site keeps its slot when disarmed, until its
 *           module goes: re-arming it then writes nothing but the site,
 *           and a task still inside the slot from an earlier arming finds
 *           it as it was.  When the slots run out, those of sites that are
 *           not jumps now are reclaimed (free again after an RCU-tasks
 *           grace period) and this change falls back to kprobes;
 *   step 3: leave old states: one batch disarms the jumps that go
 *           (ktrap.c steps CPUs that hit the int3 over the site), and
 *           unregister_kprobe() removes the kprobes that go;
 *   step 4: publish the new handler lists (RCU);
 *   step 5: enter new states: register_kprobe() for the new kprobes, then
 *           one batch arms every new jump (a CPU that hits the int3 runs
 *           the new handlers, as the jump will);
 *   step 6: an expedited grace period: no CPU still runs an old handler
 *           list (all run with preemption disabled), so they are freed,
 *           and a disconnected handler runs nowhere once djp_disconnect
 *           returns.  It is started as step 4 publishes and runs beside
 *           the batches; a disconnect or a module event publishes before
 *           step 3 (its sites leave with the new lists, NULL or shorter,
 *           which the trampoline and the kprobe handler both take), a
 *           connect after it, since step 3 may still fail it.
 *
 * Each site's `how` says what its bytes are at every point, so a failure
 * at any step leaves a consistent state; connect then removes its probe
 * and applies again, which returns every site to what the other probes
 * want (and, for a site that was off, to the NOP).  Disconnect cannot be
 * allowed to fail: a jump whose disarm batch fails (no memory for the
 * alias) stays armed with the handler list of the remaining probes,
 * possibly empty, and is retried by the next change.
 *
 * Modules: djprobe.ko registers a module notifier, then walks the modules
 * already loaded (the `modules` list is not exported, but this module's
 * own node is on it; the list head is the one node outside the modules
 * area).  COMING reads the module's markers (kmarkers.c) and arms the
 * sites connected probes match, before the module's init runs; GOING
 * disarms them and forgets the module before its text is freed.  Probes
 * stay: they arm the module's sites again when it comes back.
 */
#include <linux/delay.h>
#include <linux/idr.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/version.h>
#include <asm/pgtable.h>

#include "arch/x86/arch.h"
#include "djprobe_int.h"
#include "marker_match.h"

DEFINE_MUTEX(djp_mutex);
static LIST_HEAD(kmods);
static LIST_HEAD(probes);
static DEFINE_IDR(probe_ids);

#define DJP_KNOWN_FLAGS (DJP_GPR_ONLY | DJP_FORCE_INT3 | DJP_FORCE_KPROBE)

struct djp_probe {
	struct list_head node;
	int id;
	char *pattern;		/* "NAMEGLOB" or "MODGLOB:NAMEGLOB" */
	djp_handler_fn fn;
	void *data;
	unsigned int flags;
};

/* A module on its way out: its sites are turned off whatever the probes. */
static struct djp_kmod *going_kmod;

static bool probe_matches(const struct djp_probe *p, const struct djp_ksite *s)
{
	return djp_marker_match(p->pattern, s->kmod->name, s->m->name);
}

static const char *how_name(enum djp_how how)
{
	return how == DJP_HOW_JUMP ? "jump" : how == DJP_HOW_KPROBE ? "kprobe" : "off";
}

/* Step 1 for one site: its new handler list and state.  The probes that
 * match go to `scratch` (room for every probe) on the one walk that asks
 * each of them, since matching globs is most of this step's cost. */
static int site_target(struct djp_ksite *s, struct djp_probe **scratch)
{
	struct djp_probe *p;
	unsigned int n = 0, i;
	bool force = false;

	s->new_hl = NULL;
	if (s->kmod != going_kmod)
		list_for_each_entry(p, &probes, node)
			if (probe_matches(p, s)) {
				scratch[n++] = p;
				force |= !!(p->flags & (DJP_FORCE_KPROBE | DJP_FORCE_INT3));
			}
	if (n) {
		s->new_hl = kmalloc(struct_size(s->new_hl, h, n), GFP_KERNEL);
		if (!s->new_hl)
			return -ENOMEM;
		s->new_hl->n = n;
		for (i = 0; i < n; i++)
			s->new_hl->h[i] = (struct djp_handler){ scratch[i]->fn, scratch[i]->data };
	}
	s->nprobes = n;
	/* an armed site keeps its way (the essay): only an off site chooses */
	s->to = (enum djp_how)djp_way_wanted(n, force, (enum djp_way)s->how, true);
	return 0;
}

/* What the site's bytes must be in its current state. */
static bool site_bytes_ok(const struct djp_ksite *s)
{
	u8 jump[DJP_SITE_LEN];

	if (s->how == DJP_HOW_OFF)
		return !memcmp((void *)s->addr, djp_nop6, DJP_SITE_LEN);
	if (s->how == DJP_HOW_JUMP) {
		djp_tramp_jump(s, s->slot, jump);
		return !memcmp((void *)s->addr, jump, DJP_SITE_LEN);
	}
	return true;	/* kprobes owns the bytes */
}

/* One batch: every site of v[] whose `changing` is set goes from off to
 * its jump (arm) or from its jump to off (!arm). */
static int jump_batch(struct djp_ksite **v, size_t n, bool arm)
{
	struct djp_ksite **sel;
	struct djp_poke *p;
	size_t i, k = 0;
	int ret;

	for (i = 0; i < n; i++)
		k += v[i]->changing;
	if (!k)
		return 0;
	sel = kmalloc_array(k, sizeof(*sel), GFP_KERNEL);
	p = kcalloc(k, sizeof(*p), GFP_KERNEL);
	if (!sel || !p) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0, k = 0; i < n; i++) {
		struct djp_ksite *s = v[i];
		u8 jump[DJP_SITE_LEN];

		if (!s->changing)
			continue;
		sel[k] = s;
		p[k].addr = s->addr;
		p[k].len = DJP_SITE_LEN;
		djp_tramp_jump(s, s->slot, jump);
		memcpy(p[k].old, arm ? djp_nop6 : jump, DJP_SITE_LEN);
		memcpy(p[k].new, arm ? jump : djp_nop6, DJP_SITE_LEN);
		k++;
	}
	ret = arm ? djp_trap_publish(sel, k, NULL, 0) : djp_trap_publish(NULL, 0, sel, k);
	if (!ret) {
		ret = djp_text_batch(p, k);
		djp_trap_unpublish();
	}
out:
	kfree(sel);
	kfree(p);
	return ret;
}

static void site_pin(struct djp_ksite *s, bool pin);

/*
 * Step 4: each site's new list replaces its old one, which goes to new_hl
 * to be freed in step 6.  Returns whether any old list was there, and
 * then has started the expedited grace period step 6 waits for (its
 * cookie in *gp), so that it runs while the batches do.
 */
static bool publish(struct djp_ksite **v, size_t n, unsigned long *gp)
{
	bool sync = false;

	for (size_t i = 0; i < n; i++) {
		struct djp_ksite *s = v[i];

		s->new_hl = rcu_replace_pointer(s->handlers, s->new_hl, lockdep_is_held(&djp_mutex));
		sync |= s->new_hl != NULL;
	}
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 19, 0)
	if (sync)
		*gp = start_poll_synchronize_rcu_expedited();
#endif
	return sync;
}

static void gp_wait(unsigned long gp)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 19, 0)
	cond_synchronize_rcu_expedited(gp);
#else
	synchronize_rcu_expedited();
#endif
}

/* The site's slot, if it keeps one, goes back to the free list (after an
 * RCU-tasks grace period: this call does not wait for it). */
static void site_drop_slot(struct djp_ksite *s)
{
	if (s->slot >= 0) {
		djp_tramp_put(s->slot);
		s->slot = -1;
	}
}

/* Every slot kept by a site that is not a jump now goes back. */
static void reclaim_slots(void)
{
	struct djp_kmod *km;
	unsigned int i;

	list_for_each_entry(km, &kmods, node)
		for (i = 0; i < km->nsites; i++)
			if (km->sites[i].how != DJP_HOW_JUMP)
				site_drop_slot(&km->sites[i]);
}

/* One change of sites_apply, for the steps' ops. */
struct change {
	struct djp_ksite **v;
	size_t n;
	bool connect;		/* checks busy sites; publishes after step 3 */
	unsigned long gp;	/* step 4's grace period, which step 6 waits for */
};

/* Step 1. */
static int change_decide(void *ctx)
{
	struct change *c = ctx;
	struct djp_probe **scratch, *p;
	size_t i, nprobes = 0;
	int ret = 0;

	list_for_each_entry(p, &probes, node)
		nprobes++;
	scratch = kmalloc_array(nprobes ?: 1, sizeof(*scratch), GFP_KERNEL);
	if (!scratch)
		return -ENOMEM;
	for (i = 0; i < c->n && !ret; i++)
		ret = site_target(c->v[i], scratch);
	kfree(scratch);
	for (i = 0; i < c->n && !ret && c->connect; i++)
		if (c->v[i]->to != DJP_HOW_OFF && !site_bytes_ok(c->v[i])) {
			pr_warn("djprobe: %s:%s at %px holds %6ph, not what djprobe left there: busy\n",
				c->v[i]->kmod->name, c->v[i]->m->name, (void *)c->v[i]->addr, (void *)c->v[i]->addr);
			ret = -EBUSY;
		}
	return ret;
}

/* Step 2. */
static int change_tramps(void *ctx)
{
	struct change *c = ctx;
	int reclaimed = 0;
	size_t i;

	for (i = 0; i < c->n; i++) {
		struct djp_ksite *s = c->v[i];

		if (s->to == DJP_HOW_JUMP && s->slot < 0) {
			s->slot = djp_tramp_get(s);
			if (s->slot == -ENOSPC && !reclaimed++)
				reclaim_slots();
			if (s->slot < 0) {
				s->slot = -1;
				s->to = DJP_HOW_KPROBE;
			}
		}
	}
	djp_tramp_done();
	return 0;
}

/* Step 3.  A jump someone has since covered (a kprobe put over it keeps
 * our bytes as its "original" and writes them back when it goes) is left
 * alone: it stays a jump, to a slot the site keeps.  A disarm that fails
 * refuses a connect (nothing published); for the other changes the sites
 * stay armed, with the new lists, and the next change tries again. */
static int change_leave(void *ctx)
{
	struct change *c = ctx;
	size_t i;
	int ret;

	for (i = 0; i < c->n; i++) {
		struct djp_ksite *s = c->v[i];

		s->changing = s->how == DJP_HOW_JUMP && s->to != DJP_HOW_JUMP;
		if (s->changing && !site_bytes_ok(s)) {
			pr_warn("djprobe: %s:%s at %px holds %6ph over its jump: left armed, with no handler\n",
				s->kmod->name, s->m->name, (void *)s->addr, (void *)s->addr);
			s->changing = false;
			s->to = DJP_HOW_JUMP;
			site_pin(s, true);
		}
	}
	ret = jump_batch(c->v, c->n, false);
	for (i = 0; i < c->n; i++) {
		struct djp_ksite *s = c->v[i];

		if (s->changing && ret) {
			/* still armed: keep the jump, with the new list */
			s->to = DJP_HOW_JUMP;
		} else if (s->changing) {
			s->how = DJP_HOW_OFF;	/* the slot stays the site's */
			site_pin(s, false);
		} else if (s->how == DJP_HOW_KPROBE && s->to != DJP_HOW_KPROBE) {
			djp_kp_disarm(s);
			s->how = DJP_HOW_OFF;
		}
	}
	if (ret && c->connect)
		return ret;
	if (ret)
		pr_warn("djprobe: disarming failed (%d); the sites stay armed with no handler\n", ret);
	return 0;
}

static bool change_publish(void *ctx)
{
	struct change *c = ctx;

	return publish(c->v, c->n, &c->gp);
}

/* Step 5. */
static int change_enter(void *ctx)
{
	struct change *c = ctx;
	size_t i;
	int ret = 0;

	for (i = 0; i < c->n && !ret; i++) {
		struct djp_ksite *s = c->v[i];

		if (s->to == DJP_HOW_KPROBE && s->how == DJP_HOW_OFF) {
			ret = djp_kp_arm(s);
			if (!ret)
				s->how = DJP_HOW_KPROBE;
		}
	}
	for (i = 0; i < c->n; i++)
		c->v[i]->changing = !ret && c->v[i]->to == DJP_HOW_JUMP && c->v[i]->how == DJP_HOW_OFF;
	if (!ret)
		ret = jump_batch(c->v, c->n, true);
	for (i = 0; i < c->n; i++) {
		struct djp_ksite *s = c->v[i];

		if (s->changing && !ret)
			s->how = DJP_HOW_JUMP;
	}
	return ret;
}

/* Step 6: expedited, as the batch's syncs already interrupt every CPU; a
 * normal grace period would be most of a disconnect's time.  Started when
 * step 4 published, it has been running since. */
static void change_retire(void *ctx, bool grace, int err)
{
	struct change *c = ctx;
	size_t i;

	if (grace)
		gp_wait(c->gp);
	for (i = 0; i < c->n; i++) {
		kfree(c->v[i]->new_hl);
		c->v[i]->new_hl = NULL;
	}
}

/* Before step 4: the new lists, never published. */
static void change_discard(void *ctx)
{
	change_retire(ctx, false, 0);
}

/* No unpublish: a failed connect is undone by applying again without
 * its probe (djp_connect). */
static const struct djp_apply_ops change_ops = {
	.decide = change_decide,
	.tramps = change_tramps,
	.leave = change_leave,
	.publish = change_publish,
	.enter = change_enter,
	.retire = change_retire,
	.discard = change_discard,
};

static int sites_apply(struct djp_ksite **v, size_t n, bool check_busy)
{
	struct change c = { .v = v, .n = n, .connect = check_busy };

	/* a disconnect or a module event publishes before step 3 (the essay) */
	return djp_apply_steps(&change_ops, &c, check_busy ? 0 : DJP_APPLY_PUBLISH_FIRST);
}

/* The sites that `match` (or, with NULL, that hold any probe or state) in
 * every known module; *out is a new array. */
static int collect_sites(const struct djp_probe *match, struct djp_kmod *only, struct djp_ksite ***out,
			 size_t *count)
{
	struct djp_kmod *km;
	struct djp_ksite **v;
	size_t n = 0, cap = 0, i;

	list_for_each_entry(km, &kmods, node)
		cap += km->nsites;
	v = kvmalloc_array(cap ?: 1, sizeof(*v), GFP_KERNEL);
	if (!v)
		return -ENOMEM;
	list_for_each_entry(km, &kmods, node) {
		if (only && km != only)
			continue;
		for (i = 0; i < km->nsites; i++) {
			struct djp_ksite *s = &km->sites[i];

			if (match ? probe_matches(match, s) : s->nprobes || s->how != DJP_HOW_OFF)
				v[n++] = s;
		}
	}
	*out = v;
	*count = n;
	return 0;
}

/* A pattern with an empty module or marker glob is refused. */
static int pattern_check(const char *pattern)
{
	long colon = djp_marker_pattern_colon(pattern);

	if (!*pattern || (colon >= 0 && (colon == 0 || !pattern[colon + 1]))) {
		pr_warn("djprobe: pattern \"%s\": empty module or marker name\n", pattern);
		return -EINVAL;
	}
	return 0;
}

static void probe_free(struct djp_probe *p)
{
	kfree(p->pattern);
	kfree(p);
}

int djp_connect(const char *pattern, djp_handler_fn fn, void *data, unsigned int flags)
{
	struct djp_ksite **v = NULL;
	struct djp_probe *p;
	size_t n;
	int ret;

	might_sleep();
	if (!pattern || !fn || (flags & ~DJP_KNOWN_FLAGS))
		return -EINVAL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = pattern_check(pattern);
	if (!ret) {
		p->pattern = kstrdup(pattern, GFP_KERNEL);
		ret = p->pattern ? 0 : -ENOMEM;
	}
	if (ret) {
		probe_free(p);
		return ret;
	}
	p->fn = fn;
	p->data = data;
	p->flags = flags;

	mutex_lock(&djp_mutex);
	ret = collect_sites(p, NULL, &v, &n);
	if (!ret && !n)
		ret = -ENOENT;
	if (!ret) {
		p->id = idr_alloc(&probe_ids, p, 0, INT_MAX, GFP_KERNEL);
		ret = p->id < 0 ? p->id : 0;
	}
	if (!ret) {
		list_add_tail(&p->node, &probes);
		ret = sites_apply(v, n, true);
		if (ret) {
			list_del(&p->node);
			idr_remove(&probe_ids, p->id);
			sites_apply(v, n, false);
		}
	}
	mutex_unlock(&djp_mutex);
	kvfree(v);
	if (ret) {
		probe_free(p);
		return ret;
	}
	return p->id;
}
EXPORT_SYMBOL_GPL(djp_connect);

int djp_disconnect(int id)
{
	struct djp_ksite **v = NULL;
	struct djp_probe *p;
	size_t n = 0;
	int ret;

	might_sleep();
	mutex_lock(&djp_mutex);
	p = id >= 0 ? idr_find(&probe_ids, id) : NULL;
	if (!p) {
		mutex_unlock(&djp_mutex);
		return -ENOENT;
	}
	ret = collect_sites(p, NULL, &v, &n);
	idr_remove(&probe_ids, id);
	list_del(&p->node);
	if (!ret)
		ret = sites_apply(v, n, false);
	if (ret) {
		/* no memory to tell the sites apart: every site with a state */
		kvfree(v);
		v = NULL;
		if (!collect_sites(NULL, NULL, &v, &n))
			sites_apply(v, n, false);
		synchronize_rcu();
	}
	mutex_unlock(&djp_mutex);
	kvfree(v);
	probe_free(p);
	return 0;
}
EXPORT_SYMBOL_GPL(djp_disconnect);

int djp_for_each_marker(int (*fn)(const struct djp_kmarker *m, void *data), void *data)
{
	struct djp_kmod *km;
	unsigned int i;
	int ret = 0;

	mutex_lock(&djp_mutex);
	list_for_each_entry(km, &kmods, node) {
		for (i = 0; i < km->nsites && !ret; i++) {
			const struct djp_ksite *s = &km->sites[i];
			struct djp_kmarker m = {
				.module = km->name,
				.name = s->m->name,
				.format = s->m->format,
				.args = s->m->args,
				.site = s->addr,
				.nargs = s->m->nargs,
				.probes = s->nprobes,
				.how = how_name(s->how),
			};

			ret = fn(&m, data);
		}
		if (ret)
			break;
	}
	mutex_unlock(&djp_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(djp_for_each_marker);

static struct djp_kmod *kmod_find(struct module *mod)
{
	struct djp_kmod *km;

	list_for_each_entry(km, &kmods, node)
		if (km->mod == mod)
			return km;
	return NULL;
}

/* A module came (or was there when djprobe.ko loaded): read its markers
 * and arm what the probes match.  Sites whose bytes are not the NOP are
 * listed but not armed now. */
static void module_add(struct module *mod)
{
	struct djp_kmod *km;
	struct djp_ksite **v;
	size_t n, i, k;
	struct djp_probe *p;

	if (kmod_find(mod) || djp_kmod_read(mod, &km))
		return;
	if (!km->nsites) {
		djp_kmod_free(km);
		return;
	}
	list_add_tail(&km->node, &kmods);
	if (list_empty(&probes))
		return;
	v = kvmalloc_array(km->nsites, sizeof(*v), GFP_KERNEL);
	if (!v)
		return;
	for (i = 0, k = 0; i < km->nsites; i++) {
		struct djp_ksite *s = &km->sites[i];

		list_for_each_entry(p, &probes, node)
			if (probe_matches(p, s))
				break;
		if (list_entry_is_head(p, &probes, node))
			continue;
		if (!site_bytes_ok(s)) {
			pr_warn("djprobe: %s:%s at %px holds %6ph, not the NOP: left alone\n", km->name, s->m->name,
				(void *)s->addr, (void *)s->addr);
			continue;
		}
		v[k++] = s;
	}
	n = k;
	if (n && sites_apply(v, n, false))
		pr_warn("djprobe: %s: arming its markers failed\n", km->name);
	kvfree(v);
}

static void module_remove(struct module *mod)
{
	struct djp_kmod *km = kmod_find(mod);
	struct djp_ksite **v;
	size_t n, i;

	if (!km)
		return;
	going_kmod = km;
	if (!collect_sites(NULL, km, &v, &n)) {
		sites_apply(v, n, false);
		kvfree(v);
	}
	going_kmod = NULL;
	for (i = 0; i < km->nsites; i++) {
		site_pin(&km->sites[i], false); /* its text goes, and the jump */
		site_drop_slot(&km->sites[i]);
	}
	list_del(&km->node);
	/* the trap table and the kprobes are gone; a trampoline may still be
	 * reading the sites through its slot until a grace period ends */
	synchronize_rcu();
	djp_kmod_free(km);
}

static int module_notify(struct notifier_block *nb, unsigned long state, void *data)
{
	struct module *mod = data;

	if (state != MODULE_STATE_COMING && state != MODULE_STATE_GOING)
		return NOTIFY_DONE;
	mutex_lock(&djp_mutex);
	if (state == MODULE_STATE_COMING)
		module_add(mod);
	else
		module_remove(mod);
	mutex_unlock(&djp_mutex);
	return NOTIFY_DONE;
}

static struct notifier_block module_nb = {
	.notifier_call = module_notify,
	/* on GOING, before kprobes forgets the kprobes of the module */
	.priority = 1,
};

/*
 * A jump that someone covered (a kprobe over it) cannot be taken back
 * until they go, and it leads into djprobe.ko's own text: while one is
 * left so, djprobe.ko holds a reference on itself and cannot be unloaded
 * from under it.  The reference goes when the site is disarmed at last,
 * or when its module goes with its text.
 */
static void site_pin(struct djp_ksite *s, bool pin)
{
	if (pin == s->pinned)
		return;
	s->pinned = pin;
	if (pin)
		__module_get(THIS_MODULE);
	else
		module_put(THIS_MODULE);
}

/* Is this node of the modules list a module's (and not the list head,
 * which is in the kernel image)? */
static bool node_is_module(const struct list_head *node)
{
	unsigned long a = (unsigned long)node;

	return a >= MODULES_VADDR && a < MODULES_END;
}

/* The modules loaded before djprobe.ko, each with a reference held. */
static struct module **loaded_modules(size_t *count)
{
	struct module **v, *m;
	size_t n = 0, cap = 0;

	rcu_read_lock_sched();
	list_for_each_entry_rcu(m, &THIS_MODULE->list, list)
		cap++;
	rcu_read_unlock_sched();
	v = kvmalloc_array(cap + 16, sizeof(*v), GFP_KERNEL);
	if (!v)
		return NULL;
	rcu_read_lock_sched();
	list_for_each_entry_rcu(m, &THIS_MODULE->list, list) {
		if (n == cap + 16)
			break;
		if (!node_is_module(&m->list))
			continue;
		if ((m->state == MODULE_STATE_LIVE || m->state == MODULE_STATE_COMING) && try_module_get(m))
			v[n++] = m;
	}
	rcu_read_unlock_sched();
	*count = n;
	return v;
}

int djp_core_init(void)
{
	struct djp_kmod *km = NULL;
	struct module **v;
	size_t n, i;
	int ret;

	ret = djp_kimage_read(&km);
	if (ret)
		return ret;
	if (km && km->nsites) {
		/* no probe yet: listed, armed when one connects */
		mutex_lock(&djp_mutex);
		list_add_tail(&km->node, &kmods);
		mutex_unlock(&djp_mutex);
	} else {
		djp_kmod_free(km);
	}
	ret = register_module_notifier(&module_nb);
	if (ret)
		goto err_image;
	v = loaded_modules(&n);
	if (!v) {
		unregister_module_notifier(&module_nb);
		ret = -ENOMEM;
		goto err_image;
	}
	for (i = 0; i < n; i++) {
		mutex_lock(&djp_mutex);
		module_add(v[i]);
		mutex_unlock(&djp_mutex);
		module_put(v[i]);
	}
	kvfree(v);
	return 0;

err_image:
	mutex_lock(&djp_mutex);
	list_for_each_entry(km, &kmods, node)
		if (!km->mod) {
			list_del(&km->node);
			djp_kmod_free(km);
			break;
		}
	mutex_unlock(&djp_mutex);
	return ret;
}

void djp_core_exit(void)
{
	struct djp_probe *p, *tmp;
	struct djp_kmod *km, *kt;
	struct djp_ksite **v;
	size_t n;
	unsigned int i;
	int tries;

	unregister_module_notifier(&module_nb);
	mutex_lock(&djp_mutex);
	list_for_each_entry_safe(p, tmp, &probes, node) {
		list_del(&p->node);
		idr_remove(&probe_ids, p->id);
		probe_free(p);
	}
	/* every site off: retried, since the text must not keep a jump into
	 * this module's trampolines once it is gone */
	for (tries = 0; tries < 100; tries++) {
		if (collect_sites(NULL, NULL, &v, &n)) {
			msleep(10);
			continue;
		}
		if (n)
			sites_apply(v, n, false);
		kvfree(v);
		if (!n)
			break;
	}
	list_for_each_entry(km, &kmods, node)
		for (i = 0; i < km->nsites; i++)
			site_drop_slot(&km->sites[i]);
	/* no trampoline finds a site now; wait for any that did */
	synchronize_rcu();
	list_for_each_entry_safe(km, kt, &kmods, node) {
		list_del(&km->node);
		djp_kmod_free(km);
	}
	idr_destroy(&probe_ids);
	mutex_unlock(&djp_mutex);
}
