/*
 * Addresses of a traced process to function names.
 *
 * The tool reads events after they happened, from outside the target.
 * An address is looked up in two steps: which file is mapped there in the
 * process, from /proc/PID/maps (read at the first lookup in a process, and
 * again when an address falls outside what was read: a library loaded
 * since), and which function symbol of that file holds its link-time
 * address (the file's function table, lib/func_symbols.c, read once a
 * file).  A process that has exited keeps the maps read while it lived;
 * one never looked at while alive answers nothing.  This is what
 * SystemTap's usymname() does with the symbol tables it loaded for the
 * process, without needing them named in advance (-d/--ldd).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/func_symbols.h"
#include "lib/mapped_file.h"
#include "usym.h"

struct umap {
	uint64_t start, end, off;
	int file; /* index into files */
};

struct uproc {
	int32_t pid;
	struct umap *maps;
	size_t nmaps;
};

struct ufile {
	char *path;
	struct djp_func_table *funcs; /* NULL: unreadable */
};

static struct uproc *procs;
static size_t nprocs;
static struct ufile *files;
static size_t nfiles;

/* The object at `path`, its symbols read from `file` (the mapped file). */
static int file_index(const char *path, const char *file)
{
	char err[256];
	for (size_t i = 0; i < nfiles; i++)
		if (!strcmp(files[i].path, path))
			return (int)i;
	files = realloc(files, sizeof(*files) * (nfiles + 1));
	if (!files)
		abort();
	files[nfiles] = (struct ufile){ .path = strdup(path) };
	if (!files[nfiles].path)
		abort();
	if (djp_funcs_read(file, &files[nfiles].funcs, err, sizeof(err)))
		files[nfiles].funcs = NULL;
	return (int)nfiles++;
}

/* (Re)read the file mappings of p's process (lib/mapped_file.c parses
 * them, and names the file to read: the mapped one, where its path now
 * holds another). */
static void maps_read(struct uproc *p)
{
	char name[64], line[PATH_MAX + 128], file[PATH_MAX];
	struct djp_mapping m;
	struct umap *v = NULL;
	size_t n = 0;
	FILE *f;
	snprintf(name, sizeof(name), "/proc/%d/maps", (int)p->pid);
	if (!(f = fopen(name, "re")))
		return; /* gone: keep what was read */
	while (fgets(line, sizeof(line), f)) {
		if (!djp_mapping_parse(line, &m) || !m.exec || !m.path[0])
			continue;
		if (djp_mapping_file(p->pid, &m, file, sizeof(file)))
			snprintf(file, sizeof(file), "%s", m.path);
		if (!(v = realloc(v, sizeof(*v) * (n + 1))))
			abort();
		v[n++] = (struct umap){ m.lo, m.hi, m.offset, file_index(m.path, file) };
	}
	fclose(f);
	if (!n)
		return; /* exited, not yet reaped: keep what was read */
	free(p->maps);
	p->maps = v;
	p->nmaps = n;
}

static struct uproc *proc_of(int32_t pid)
{
	for (size_t i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return &procs[i];
	procs = realloc(procs, sizeof(*procs) * (nprocs + 1));
	if (!procs)
		abort();
	procs[nprocs] = (struct uproc){ .pid = pid };
	maps_read(&procs[nprocs]);
	return &procs[nprocs++];
}

void usym_remember(int32_t pid)
{
	struct uproc *p = NULL;
	for (size_t i = 0; i < nprocs && !p; i++)
		if (procs[i].pid == pid)
			p = &procs[i];
	if (p)
		maps_read(p);
	else
		proc_of(pid);
}

bool usym_lookup_any(uint64_t addr, struct usym *out)
{
	for (size_t i = 0; i < nprocs; i++)
		for (size_t k = 0; k < procs[i].nmaps; k++)
			if (addr >= procs[i].maps[k].start && addr < procs[i].maps[k].end)
				return usym_lookup(procs[i].pid, addr, out);
	return false;
}

static const struct umap *map_at(const struct uproc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return &p->maps[i];
	return NULL;
}

bool usym_lookup(int32_t pid, uint64_t addr, struct usym *out)
{
	struct uproc *p = proc_of(pid);
	const struct umap *m = map_at(p, addr);
	const struct djp_func *f;
	struct ufile *uf;
	uint64_t link, off;
	if (!m) {
		maps_read(p); /* loaded since? */
		if (!(m = map_at(p, addr)))
			return false;
	}
	uf = &files[m->file];
	*out = (struct usym){ .module = uf->path, .map_off = addr - m->start, .map_size = m->end - m->start };
	off = addr - m->start + m->off; /* the file offset */
	if (!uf->funcs)
		return true;
	/* the mapping's file offset to the link-time address the symbols use */
	if (djp_funcs_vaddr_of(uf->funcs, off, &link) || !(f = djp_funcs_at(uf->funcs, link)))
		return true;
	out->name = f->name;
	out->off = link - f->addr;
	out->size = f->size;
	return true;
}
