/*
 * The engine's front door: djp_connect and djp_disconnect.
 *
 * One global lock (the kernel's text_mutex and kprobe_mutex in one:
 * kernel/lock.c) serialises every change of probes and text.  The first
 * connect initialises everything (text writer, SIGTRAP handler,
 * trampolines, sync) so nothing has to be called first, linked or
 * preloaded alike.
 *
 * connect: refresh the registry of loaded objects, find every site whose
 * marker name matches the glob, and give each a new handler list with the
 * probe added; djp_sites_apply arms what needs arming in one batch.
 * disconnect: the same with the probe removed; djp_sites_apply waits for an
 * RCU grace period before it returns, so the handler is running nowhere.
 * Either fails as a whole: on error, the text and the lists are as before.
 *
 * fork: the child is single-threaded and nobody consumes its probes, so it
 * starts with every site restored to its original bytes and no probes.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/hit.h"
#include "kernel/interpose.h"
#include "kernel/lock.h"
#include "kernel/probes.h"
#include "kernel/rcu.h"

/* The public entries refuse, rather than deadlock, from a handler or from a
 * signal handler that interrupted this thread inside the engine. */
static bool engine_busy_here(void)
{
	if (djp_engine_lock_mine)
		return true;
	/* inside a handler, unless it was left by a jump (kernel/rcu.c) */
	return djp_in_handler() && !djp_rcu_recover(0);
}
static int next_probe_id;
static atomic_int ready;
static int init_err;

bool djp_engine_ready(void)
{
	return atomic_load_explicit(&ready, memory_order_acquire) == 1;
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&djp_engine_lock);
	djp_rcu_fork_prepare();
}

static void fork_parent(void)
{
	djp_rcu_fork_parent();
	pthread_mutex_unlock(&djp_engine_lock);
}

/* The child: put back every byte, forget every probe. */
static void fork_child(void)
{
	void *q;
	djp_rcu_fork_child();
	/* the child's probes going, on its one thread: not its hits (the
	 * parent's rings are still mapped here) */
	q = djp__quiet_begin();
	for (struct djp_object *o = djp_objects; o; o = o->next)
		for (size_t i = 0; i < o->nsites; i++) {
			struct djp_site *s = &o->sites[i];
			struct djp_text_session ts;
			uintptr_t a = s->addr;
			s->yielded = false;
			if (s->state == SITE_IDLE) {
				atomic_store(&s->handlers, NULL); /* a site given up keeps them */
				continue;
			}
			if (arch_text_open(&ts, &a, &s->len, 1) == 0) {
				arch_text_write(&ts, s->addr + 1, s->orig + 1, s->len - 1);
				arch_text_write(&ts, s->addr, s->orig, 1);
				arch_text_close(&ts);
			}
			if (s->m->semaphore)
				__atomic_fetch_sub((uint16_t *)(o->bias + s->m->semaphore), 1, __ATOMIC_RELAXED);
			s->state = SITE_IDLE;
			atomic_store(&s->handlers, NULL); /* the parent's copy frees them */
		}
	djp_probes = NULL; /* likewise */
	arch_trap_publish(NULL);
	djp__quiet_end(q);
	pthread_mutex_unlock(&djp_engine_lock);
}

/* Called with the lock held. */
int djp_engine_init_locked(void)
{
	DJP_LOCK_HELD();
	int err;
	if (atomic_load(&ready))
		return init_err;
	/* an injected library: the program's calls reach our interposers
	 * only once their GOT slots say so (kernel/got_patch.c) */
	djp_got_interpose();
	if ((err = arch_text_init()) || (err = djp_engine_signal_init()) || (err = djp_sync_init()) ||
	    (err = arch_trap_init(djp_trap_probe))) {
		init_err = err;
		atomic_store(&ready, 2);
		return err;
	}
	{
		struct djp_rcu_fast rf;
		djp_rcu_fast_path(&rf);
		/* Without XSAVE only lean trampolines and int3 probes are made. */
		arch_tramp_init(&(struct djp_tramp_ops){ .lean_slow = djp_dispatch_lean,
							 .full_slow = djp_dispatch_full,
							 .full_call = offsetof(struct djp_handler_list, full),
							 .prefetch_call = offsetof(struct djp_handler_list, prefetch),
							 .reader_tls = rf.reader_tls,
							 .entry_sp_tls = rf.entry_sp_tls,
							 .gp_ctr = rf.gp_ctr,
							 .need_mb = rf.need_mb });
	}
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atomic_store_explicit(&ready, 1, memory_order_release);
	return 0;
}

static int fail(int err)
{
	errno = -err;
	return err;
}

DJP_API int djp_connect(const char *pattern, djp_handler_fn fn, void *data, unsigned flags)
{
	return djp__connect(pattern, fn, data, flags, NULL);
}

DJP_API int djp_connect_at(const struct djp_point_opts *where, djp_handler_fn fn, void *data, unsigned flags)
{
	struct djp_point *pt;
	int err = djp__point_make(where, &pt);
	if (err)
		return fail(err);
	return djp__connect(NULL, fn, data, flags, &(struct djp_connect_opts){ .point = pt });
}

int djp__connect(const char *pattern, djp_handler_fn fn, void *data, unsigned flags,
		 const struct djp_connect_opts *opts)
{
	struct djp_probe *p = NULL;
	size_t matched = 0;
	bool counted = false;
	int err;

	struct djp_point *point = opts ? opts->point : NULL;
	if ((!pattern && !point) || !fn || (flags & ~(DJP_GPR_ONLY | DJP_FORCE_INT3 | DJP_NO_ARGS))) {
		djp_point_free(point);
		return fail(-EINVAL);
	}
	if (engine_busy_here()) {
		djp_point_free(point);
		return fail(-EDEADLK);
	}
	/* djp_hit_reg's unwinder, set up before any handler may need it.  A
	 * flag, not pthread_once: a connect from a signal handler that
	 * interrupted this very call would wait on itself forever; a handler
	 * racing the first connect just waits inside libgcc's own once. */
	static atomic_bool unwinder_ready;
	if (!atomic_exchange(&unwinder_ready, true))
		djp_callee_saved_prepare();
	djp_engine_lock_take();
	if ((err = djp_engine_init_locked()) || (err = djp_objects_refresh()))
		goto out;
	if (!(p = calloc(1, sizeof(*p))) || !(p->pattern = strdup(pattern ? pattern : ""))) {
		err = -ENOMEM;
		goto out;
	}
	p->point = point;
	point = NULL;
	/* the unwinder's hooks before any return is diverted (retprobes.c) */
	if (djp_point_is_return(p->point)) {
		if ((err = djp_ret_probes_changed(1)))
			goto out;
		counted = true;
	}
	p->id = next_probe_id;
	p->fn = fn;
	p->data = data;
	p->flags = flags | (opts && opts->once ? DJP__ONCE : 0) | (opts && opts->stack ? DJP__STACK : 0) |
		   (opts && opts->kernel_trap ? DJP__KERNEL_TRAP : 0);
	p->plan = opts ? opts->plan : NULL;
	err = djp_probe_attach(p, &matched);
	/* the connect's sites only: objects loaded later, whose sites no
	 * client hears of, get int3 probes */
	p->flags &= ~DJP__KERNEL_TRAP;
	if (err || (err = matched || (opts && opts->pending) ? 0 : -ENOENT))
		goto out;
	next_probe_id++;
	p->next = djp_probes;
	djp_probes = p;
	p = NULL;
	err = djp_probes->id;
out:
	if (p) { /* under the lock: see kernel/lock.c */
		if (counted)
			djp_ret_probes_changed(-1);
		free(p->pattern);
		djp_point_free(p->point);
	}
	djp_point_free(point);
	free(p);
	djp_engine_lock_release();
	return err < 0 ? fail(err) : err;
}

DJP_API int djp_disconnect(int id)
{
	struct djp_probe **pp, *p = NULL;
	int err;

	if (engine_busy_here())
		return fail(-EDEADLK);
	djp_engine_lock_take();
	for (pp = &djp_probes; *pp && id >= 0; pp = &(*pp)->next) /* below 0: the engine's own */
		if ((*pp)->id == id) {
			p = *pp;
			break;
		}
	if (!p) {
		err = -ENOENT;
		goto out;
	}
	if ((err = djp_probe_detach(id)))
		goto out;
	if (djp_point_is_return(p->point))
		djp_ret_probes_changed(-1);
	*pp = p->next;
	free(p->pattern);
	djp_point_free(p->point);
	free(p);
out:
	djp_engine_lock_release();
	return err < 0 ? fail(err) : 0;
}

int djp__kernel_trap_sites(int probe, djp_site_visit_fn fn, void *ctx)
{
	int err = 0;
	djp_engine_lock_take();
	for (struct djp_object *o = djp_objects; !err && o; o = o->next)
		for (size_t i = 0; !err && i < o->nsites; i++) {
			struct djp_site *s = &o->sites[i];
			if (s->kernel_trap && s->state == SITE_IDLE && djp_site_carries(s, probe))
				err = fn(ctx, s->id, o->path, djp_site_pc(s), s->m);
		}
	djp_engine_lock_release();
	return err;
}

int djp__sites_foreach(djp_site_visit_fn fn, void *ctx)
{
	int err;
	djp_engine_lock_take();
	err = djp_engine_init_locked();
	if (!err)
		err = djp_objects_refresh();
	for (struct djp_object *o = djp_objects; !err && o; o = o->next)
		for (size_t i = 0; !err && i < o->nsites; i++)
			err = fn(ctx, o->sites[i].id, o->path, djp_site_pc(&o->sites[i]), o->sites[i].m);
	djp_engine_lock_release();
	return err;
}
