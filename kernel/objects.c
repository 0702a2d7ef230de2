/*
 * The marker registry: which objects are loaded and which sites they have.
 *
 * Each object the loader lists (kernel/refresh.c) is read with the marker
 * reader (lib/markers.h, no DWARF) from its file
 * (the main program through /proc/self/exe), and gets one struct djp_site
 * per marker: the site's runtime address, a shadow copy of its original
 * bytes taken from the file's record (`66 0f 1f 44 00 00`, or `90` for an
 * SDT probe), a process-wide id, and state idle.  The shadow is checked
 * against memory when the object is first seen: an object whose sites do
 * not hold the bytes the file says (another patcher was first) keeps those
 * sites out of reach (state unknown = never armed).  Objects loaded before
 * the library's constructor ran (the program and what it needs) are
 * `permanent`: no dlclose unloads them.  Sites live as long as their
 * object; the trampolines they used are never unmapped (tramp_pool.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/arming.h"
#include "kernel/lock.h"
#include "lib/func_params.h"
#include "lib/func_symbols.h"
#include "lib/mapped_file.h"

struct djp_object *djp_objects;
static uint32_t next_site_id = 1;

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

struct djp_object *djp_object_load(const char *name, uintptr_t bias, uintptr_t text, bool permanent)
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
	o->permanent = permanent;
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

void djp_object_free(struct djp_object *o)
{
	/* Handler lists are NULL: the object's sites were disarmed first. */
	object_code_free(o);
	if (o->markers)
		djp_marker_list_free(o->markers);
	for (size_t i = 0; o->sites && i < o->nsites; i++)
		free(o->sites[i].code);
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

uint32_t djp_site_id_next(void)
{
	return next_site_id++;
}

void djp_site_announce(const struct djp_site *s)
{
	DJP_LOCK_HELD();
	if (watch_fn)
		watch_fn(watch_ctx, s->id, s->obj->path, s->addr, s->m);
}

void djp_object_add(struct djp_object *o)
{
	DJP_LOCK_HELD();
	o->next = djp_objects;
	djp_objects = o;
	for (size_t k = 0; watch_fn && k < o->nsites; k++)
		djp_site_announce(&o->sites[k]);
}

struct djp_site *djp_site_by_id(uint32_t id)
{
	for (struct djp_object *o = djp_objects; o; o = o->next)
		for (size_t i = 0; i < o->nsites; i++)
			if (o->sites[i].id == id)
				return &o->sites[i];
	return NULL;
}

/* What the object's code keeps in vector registers, decoded once; a file
 * that cannot be read is assumed to use everything. */
int djp_object_vec_use(struct djp_object *o)
{
	if (o->vec_use < 0) {
		int u = djp_vector_use_of_file(o->file ? o->file : o->path);
		o->vec_use = u < 0 ? DJP_VEC_AVX512 | DJP_VEC_X87 : u;
	}
	return o->vec_use;
}
