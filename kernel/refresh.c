/*
 * Bringing the registry in step with the loader.
 *
 * dl_iterate_phdr lists the loaded objects with their load bias; each one
 * the registry does not have yet is read and added (kernel/objects.c).
 * Objects that are gone from the list are dropped; the dlclose hook
 * (dlhooks.c) disarms the sites of every object that may go before the
 * loader unmaps anything, and keeps them out of every batch until it is
 * done (`closing`).  One unloaded without the hook seeing it (glibc's own
 * dlclose of an NSS module) is forgotten without a text write, its text
 * being gone (djp_sites_forget, kernel/arm.c): so this lies above the
 * batch code, and the registry below it.  Once the stack walker is
 * prepared, every refresh also brings its call-frame tables in step with
 * the list: it asks to be told (djp_objects_on_refresh), so that the
 * registry names no stack walker (kernel/unwind.c).
 */
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/init_order.h"
#include "kernel/arming.h"
#include "kernel/lock.h"

struct seen_obj {
	char *name;
	uintptr_t bias;
	uintptr_t text; /* an address of its executable segment */
};

struct scan {
	struct seen_obj *v;
	size_t n, cap;
};

/* The objects mapped when the library's constructor ran. */
static struct scan startup;
static int collect(struct dl_phdr_info *info, size_t size, void *arg);

DJP_ENGINE_INIT static void note_startup_objects(void)
{
	dl_iterate_phdr(collect, &startup);
}

static bool at_startup(const char *name, uintptr_t bias)
{
	for (size_t i = 0; i < startup.n; i++)
		if (startup.v[i].bias == bias && !strcmp(startup.v[i].name, name))
			return true;
	return false;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;
	const char *name = info->dlpi_name;
	int has_exec = 0;
	uintptr_t text = 0;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !has_exec; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
			has_exec = 1;
			text = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
		}
	if (!has_exec || !name || strstr(name, "linux-vdso") || strstr(name, "linux-gate"))
		return 0;
	if (sc->n == sc->cap) {
		void *v = realloc(sc->v, (sc->cap = sc->cap ? 2 * sc->cap : 32) * sizeof(*sc->v));
		if (!v)
			return 1;
		sc->v = v;
	}
	sc->v[sc->n].name = strdup(name[0] ? name : "/proc/self/exe");
	sc->v[sc->n].bias = info->dlpi_addr;
	sc->v[sc->n].text = text;
	if (sc->v[sc->n].name)
		sc->n++;
	return 0;
}

static void (*refreshed)(void);

void djp_objects_on_refresh(void (*fn)(void))
{
	DJP_LOCK_HELD();
	refreshed = fn;
}

int djp_objects_refresh(void)
{
	DJP_LOCK_HELD();
	struct scan sc = { 0 };
	struct djp_object **pp;
	int err = 0;

	dl_iterate_phdr(collect, &sc);
	for (struct djp_object *o = djp_objects; o; o = o->next)
		o->seen = false;
	for (size_t i = 0; i < sc.n; i++) {
		struct djp_object *o;
		bool main_prog = !strcmp(sc.v[i].name, "/proc/self/exe");
		/* The program is the program until an exec: known by its
		 * flag, not by its path, which /proc/self/exe no longer gives
		 * once the main thread has called pthread_exit (a zombie
		 * leader has no files; the loader's list has not changed) */
		for (o = djp_objects; o; o = o->next)
			if (!o->parent && o->bias == sc.v[i].bias &&
			    (main_prog ? o->is_main : !o->is_main && !strcmp(o->path, sc.v[i].name)))
				break;
		if (!o) {
			if (!(o = djp_object_load(sc.v[i].name, sc.v[i].bias, sc.v[i].text,
						  at_startup(sc.v[i].name, sc.v[i].bias)))) {
				err = -ENOMEM;
				continue;
			}
			djp_object_add(o);
		}
		o->seen = true;
	}
	/* Point objects (kernel/points.c) are where their code is. */
	for (struct djp_object *o = djp_objects; o; o = o->next)
		if (o->parent)
			o->seen = o->parent->seen;
	/* Objects that are gone: nothing of theirs is mapped now.  One a
	 * dlclose is still closing stays until that dlclose is done with it. */
	for (pp = &djp_objects; *pp;) {
		struct djp_object *o = *pp;
		int armed = 0;
		if (o->seen || o->closing) {
			pp = &o->next;
			continue;
		}
		for (size_t i = 0; i < o->nsites; i++)
			armed |= o->sites[i].state != SITE_IDLE;
		if (armed)
			djp_sites_forget(o);
		*pp = o->next;
		djp_object_free(o);
	}
	for (size_t i = 0; i < sc.n; i++)
		free(sc.v[i].name);
	free(sc.v);
	if (refreshed)
		refreshed(); /* the stack walker's tables (kernel/unwind.c) */
	return err;
}
