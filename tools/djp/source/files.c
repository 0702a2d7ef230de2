/*
 * The files source: the markers of the files that process("PATH") points
 * name, read from the files themselves, for listing them (-l, -L) with no
 * process, as stap lists the probe points of a binary without running it.
 * Each marker is a descriptor with its link-time site; the source has no
 * events and arms nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/markers.h"
#include "source.h"

void djp_desc_from_file(struct djp_ev_desc *d, uint32_t id, const struct djp_marker_info *m, const char *object)
{
	const char *why;
	d->id = id;
	d->name = m->name;
	d->provider = m->provider;
	d->provider_len = m->provider ? (unsigned)strlen(m->provider) : 0;
	d->format = m->format;
	d->object = object;
	d->nargs = m->nargs;
	d->site = m->site;
	d->site_runtime = false;
	if (djp_format_parse(m->format, &d->fmt, &why) < 0)
		memset(&d->fmt, 0, sizeof(d->fmt));
}

struct files {
	struct djp_source src;
	struct djp_ev_desc *descs;
	struct djp_marker_list **lists;
	char **objects;
	unsigned nlists;
};

static int files_arm(struct djp_source *src, const uint32_t *ids, unsigned n, const struct djp_arm_glob *globs,
		     unsigned nglobs)
{
	(void)src, (void)ids, (void)n, (void)globs, (void)nglobs;
	return 0;
}

static int files_next(struct djp_source *src, struct djp_ev *ev, uint64_t deadline)
{
	(void)src, (void)ev, (void)deadline;
	return DJP_SRC_END;
}

static void files_close(struct djp_source *src)
{
	struct files *f = (struct files *)src;
	for (unsigned i = 0; i < f->nlists; i++) {
		djp_marker_list_free(f->lists[i]);
		free(f->objects[i]);
	}
	free(f->lists);
	free(f->objects);
	free(f->descs);
	free(f);
}

static uint64_t files_now(struct djp_source *src)
{
	(void)src;
	return djp_clock_ns(CLOCK_REALTIME);
}

static const struct djp_source_ops files_ops = {
	.arm = files_arm,
	.next = files_next,
	.now_ns = files_now,
	.close = files_close,
};

int djp_files_source_open(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz)
{
	struct files *f = calloc(1, sizeof(*f));
	size_t total = 0, k = 0;
	if (!f || !(f->lists = calloc(o->npaths, sizeof(*f->lists))) ||
	    !(f->objects = calloc(o->npaths, sizeof(*f->objects)))) {
		if (f)
			files_close(&f->src);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < o->npaths; i++, f->nlists++) {
		int rc = djp_markers_read_file(o->paths[i], DJP_READ_NO_DWARF, &f->lists[i], err, errsz);
		if (rc < 0) {
			files_close(&f->src);
			return rc;
		}
		f->objects[i] = realpath(o->paths[i], NULL);
		if (!f->objects[i])
			f->objects[i] = strdup(o->paths[i]);
		total += f->lists[i]->count;
	}
	f->descs = calloc(total ? total : 1, sizeof(*f->descs));
	if (!f->descs) {
		files_close(&f->src);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->nlists; i++)
		for (size_t j = 0; j < f->lists[i]->count; j++, k++)
			djp_desc_from_file(&f->descs[k], (uint32_t)k, &f->lists[i]->v[j], f->objects[i]);
	f->src.ops = &files_ops;
	f->src.descs = f->descs;
	f->src.ndescs = (unsigned)total;
	*out = &f->src;
	return 0;
}
