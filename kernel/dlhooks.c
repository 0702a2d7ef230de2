/*
 * Objects that come and go: dlopen and dlclose, interposed.
 *
 * dlopen: after the loader has mapped and relocated the object, refresh the
 * registry and give every connected probe the matching sites it does not
 * have yet (one batch per probe).
 *
 * dlclose: the loader unmaps the object named and every dependency whose
 * count drops to zero with it, which from outside the loader is any object
 * loaded after startup.  So before calling it, mark each of those objects
 * `closing` and disarm their sites (text restored, lists emptied, a grace
 * period passed).  From then until the loader returns, no batch touches
 * them: connect and dlopen in other threads leave them out (a probe that
 * matches only there still connects).  Afterwards unmark them, refresh and
 * re-attach, which re-arms what is in fact still loaded (its count was
 * above one) and drops from the registry what is gone.  The marks are
 * counts: dlcloses may overlap, and a destructor may call dlclose.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/hit.h"
#include "kernel/interpose.h"
#include "kernel/lock.h"
#include "kernel/probes.h"
#include "kernel/unwind.h"
#include "lib/real_signal.h"

/* Errors of the batches dlopen and dlclose run for the application, which
 * cannot be returned to it: counted, the last one kept (djp__engine_
 * background_error). */
static atomic_uint background_errors;
static atomic_int background_last;

static void background(int err)
{
	if (!err)
		return;
	atomic_fetch_add(&background_errors, 1);
	atomic_store(&background_last, err);
}

unsigned djp__engine_background_error(int *last)
{
	if (last)
		*last = atomic_load(&background_last);
	return atomic_load(&background_errors);
}

void djp__engine_check_foreign_traps(void)
{
	int n;
	if (!djp_engine_ready() || djp_in_handler())
		return;
	djp_engine_lock_take();
	n = djp_sites_yield_to_foreign_traps();
	background(djp_sites_retake());
	djp_engine_lock_release();
	if (n < 0)
		background(n);
	while (n-- > 0)
		background(-EBUSY);
}

/* Give every probe the sites it matches but does not carry.  Lock held. */
static void reattach_all(void)
{
	DJP_LOCK_HELD();
	background(djp_objects_refresh());
	background(djp_probes_attach_all());
}

void djp__engine_objects_changed(void)
{
	if (!djp_engine_ready() || djp_in_handler())
		return;
	djp_got_interpose(); /* the new objects' calls too */
	djp_engine_lock_take();
	if (djp_probes || djp_unwind_prepared()) /* the walker's tables follow */
		reattach_all();
	djp_engine_lock_release();
}

DJP_API void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	void *h;
	if (!real)
		real = (void *(*)(const char *, int))djp_libc_sym("dlopen");
	h = real(file, mode);
	if (h) {
		/* the library's own work, on the program's thread: its calls
		 * are not the program's (the loader's above were) */
		void *q = djp__quiet_begin();
		djp__engine_objects_changed();
		djp__quiet_end(q);
	}
	return h;
}

/* May the loader unmap `o` when it closes the object at `lm`? */
static bool may_go(const struct djp_object *o, const struct link_map *lm)
{
	return !o->permanent || (o->bias == lm->l_addr && !strcmp(o->path, lm->l_name));
}

DJP_API int dlclose(void *handle)
{
	static int (*real)(void *);
	struct link_map *lm = NULL;
	struct djp_object **closing = NULL;
	size_t nclosing = 0;
	void *q;
	int r;
	if (!real)
		real = (int (*)(void *))djp_libc_sym("dlclose");
	if (!djp_engine_ready() || djp_in_handler() || dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm)
		return real(handle);
	q = djp__quiet_begin(); /* as in dlopen: around the library's work only */
	djp_engine_lock_take();
	djp_objects_refresh();
	for (struct djp_object *o = djp_objects; o; o = o->next)
		nclosing += may_go(o, lm);
	if (!(closing = calloc(nclosing ? nclosing : 1, sizeof(*closing)))) {
		/* unloading armed objects unmarked would be worse than failing */
		djp_engine_lock_release();
		djp__quiet_end(q);
		return -1;
	}
	nclosing = 0;
	for (struct djp_object *o = djp_objects; o; o = o->next)
		if (may_go(o, lm)) {
			o->closing++;
			closing[nclosing++] = o;
		}
	background(djp_objects_detach(closing, nclosing));
	djp_engine_lock_release();
	djp__quiet_end(q);
	r = real(handle);
	q = djp__quiet_begin();
	djp_engine_lock_take();
	for (size_t i = 0; i < nclosing; i++)
		closing[i]->closing--;
	free(closing);
	reattach_all();
	djp_engine_lock_release();
	djp__quiet_end(q);
	return r;
}

/* The interposers by names that resolve to them from inside the library
 * too (kernel/got_patch.c points GOT slots at them). */
extern __typeof(dlopen) djp__dlopen __attribute__((alias("dlopen"), copy(dlopen), visibility("hidden")));
extern __typeof(dlclose) djp__dlclose __attribute__((alias("dlclose"), copy(dlclose), visibility("hidden")));
