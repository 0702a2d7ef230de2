/*
 * The marker registry: which objects are loaded and which sites they have.
 *
 * dl_iterate_phdr lists the loaded objects with their load bias; each new
 * one is read with the marker reader (lib/markers.h, no DWARF) from its file
 * (the main program through /proc/self/exe), and gets one struct djp_site
 * per marker: the site's runtime address, a shadow copy of its original
 * bytes taken from the file's record (`66 0f 1f 44 00 00`, or `90` for an
 * SDT probe), a process-wide id, and state idle.  The shadow is checked
 * against memory when the object is first seen: an object whose sites do
 * not hold the bytes the file says (another patcher was first) keeps those
 * sites out of reach (state unknown = never armed).  Once the stack walker
 * is prepared, every refresh also brings its call-frame tables in step
 * with the list: it asks to be told (djp_objects_on_refresh), so that the
 * registry below it names no stack walker (kernel/unwind.c).
 *
 * Objects that are gone from the list are dropped; the dlclose hook
 * (dlhooks.c) disarms the sites of every object that may go before the
 * loader unmaps anything, and keeps them out of every batch until it is
 * done (`closing`).  One unloaded without the hook seeing it (glibc's own
 * dlclose of an NSS module) is forgotten without a text write: its text is
 * gone.  Objects loaded before the library's constructor ran (the program
 * and what it needs) are `permanent`: no dlclose unloads them.  Sites live
 * as long as their object; the trampolines they used are never unmapped
 * (tramp_pool.c).
 */
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/arming.h"
#include "kernel/lock.h"
#include "lib/func_params.h"
#include "lib/func_symbols.h"
#include "lib/mapped_file.h"

struct seen_obj {
	char *name;
	uintptr_t bias;
	uintptr_t text; /* an address of its executable segment */
};

struct scan {
	struct seen_obj *v;
	size_t n, cap;
};

struct djp_object *djp_objects;
static uint32_t next_site_id = 1;

/* The objects mapped when the library's constructor ran. */
static struct scan startup;
static int collect(struct dl_phdr_info *info, size_t size, void *arg);

__attribute__((constructor)) static void note_startup_objects(void)
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

/* The file to read for the object whose code is mapped at `text`: the
 * main program through /proc/self/exe; a library by its path only while
 * that is still the file mapped (lib/mapped_file.c).  NULL: out of reach. */
static char *object_file(const char *name, uintptr_t text)
{
	struct djp_mapping m;
	char file[4096];
	if (!strcmp(name, "/proc/self/exe"))
		return strdup(name);
	if (djp_mapping_at(0, text, &m) || djp_mapping_file(0, &m, file, sizeof(file)))
		return NULL;
	return strdup(file);
}

static struct djp_object *object_load(const char *name, uintptr_t bias, uintptr_t text)
{
	char path[4096], err[512];
	struct djp_object *o = calloc(1, sizeof(*o));
	ssize_t n;
	if (!o)
		return NULL;
	if (!strcmp(name, "/proc/self/exe") && (n = readlink(name, path, sizeof(path) - 1)) > 0)
		path[n] = 0;
	else
		snprintf(path, sizeof(path), "%s", name);
	o->path = strdup(path);
	o->file = object_file(name, text);
	o->bias = bias;
	o->vec_use = -1;
	o->permanent = at_startup(name, bias);
	o->is_main = !strcmp(name, "/proc/self/exe");
	if (!o->path || !o->file ||
	    djp_markers_read_file(o->file, DJP_READ_NO_DWARF, &o->markers, err, sizeof(err))) {
		/* Not readable as ELF, or replaced on disk and the mapped file
		 * out of reach: an object with no markers. */
		o->markers = NULL;
		return o;
	}
	o->sites = calloc(o->markers->count ? o->markers->count : 1, sizeof(*o->sites));
	if (!o->sites) {
		djp_marker_list_free(o->markers);
		free(o->path);
		free(o->file);
		free(o);
		return NULL;
	}
	for (size_t i = 0; i < o->markers->count; i++) {
		const struct djp_marker_info *m = &o->markers->v[i];
		struct djp_site *s = &o->sites[o->nsites];
		if (m->site_len == 0 || m->site_len > DJP_SITE_MAX_LEN)
			continue;
		s->addr = (uintptr_t)m->site + (o->markers->is_dyn ? bias : 0);
		s->len = m->site_len;
		if (m->site_len == 6)
			memcpy(s->orig, x86_nop6, 6);
		else if (m->site_len == 1)
			s->orig[0] = X86_NOP1;
		else
			continue;
		/* A site that does not hold what the file says is not ours to touch. */
		if (memcmp((void *)s->addr, s->orig, s->len))
			continue;
		s->state = SITE_IDLE;
		s->m = m;
		s->obj = o;
		s->id = next_site_id++;
		o->nsites++;
	}
	return o;
}

/* What instruction probes read of its code (kernel/points.c). */
static void object_code_free(struct djp_object *o)
{
	if (o->funcs)
		djp_funcs_free(o->funcs);
	o->funcs = NULL;
	djp_branch_map_free(&o->map);
	o->map_ok = false;
	if (o->params)
		djp_params_close(o->params);
	o->params = NULL;
}

static void object_free(struct djp_object *o)
{
	/* Handler lists are NULL: the object's sites were disarmed first. */
	object_code_free(o);
	if (o->markers)
		djp_marker_list_free(o->markers);
	free(o->sites);
	free(o->path);
	free(o->file);
	free(o);
}

static djp_site_visit_fn watch_fn;
static void *watch_ctx;

void djp__sites_watch(djp_site_visit_fn fn, void *ctx)
{
	djp_engine_lock_take();
	watch_fn = fn;
	watch_ctx = ctx;
	djp_engine_lock_release();
}

static void (*refreshed)(void);

void djp_objects_on_refresh(void (*fn)(void))
{
	DJP_LOCK_HELD();
	refreshed = fn;
}

uint32_t djp_site_id_next(void)
{
	return next_site_id++;
}

void djp_object_add(struct djp_object *o)
{
	DJP_LOCK_HELD();
	o->next = djp_objects;
	djp_objects = o;
	for (size_t k = 0; watch_fn && k < o->nsites; k++)
		watch_fn(watch_ctx, o->sites[k].id, o->path, o->sites[k].addr, o->sites[k].m);
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
		char path[4096];
		const char *want = sc.v[i].name;
		ssize_t n;
		if (!strcmp(want, "/proc/self/exe") && (n = readlink(want, path, sizeof(path) - 1)) > 0) {
			path[n] = 0;
			want = path;
		}
		for (o = djp_objects; o; o = o->next)
			if (!o->parent && o->bias == sc.v[i].bias && !strcmp(o->path, want))
				break;
		if (!o) {
			if (!(o = object_load(sc.v[i].name, sc.v[i].bias, sc.v[i].text))) {
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
		object_free(o);
	}
	for (size_t i = 0; i < sc.n; i++)
		free(sc.v[i].name);
	free(sc.v);
	if (refreshed)
		refreshed(); /* the stack walker's tables (kernel/unwind.c) */
	return err;
}

struct djp_site *djp_site_by_id(uint32_t id)
{
	for (struct djp_object *o = djp_objects; o; o = o->next)
		for (size_t i = 0; i < o->nsites; i++)
			if (o->sites[i].id == id)
				return &o->sites[i];
	return NULL;
}
