/*
 * Addresses of a traced process to function names.
 *
 * The tool reads events after they happened, from outside the target.
 * An address is looked up in two steps: which file is mapped there in the
 * process, from /proc/PID/maps (read at the first lookup in a process, and
 * again when an address falls outside what was read: a library loaded
 * since), and which function symbol of that file holds its link-time
 * address (the file's function table, lib/func_symbols.c, read once a
 * file).  This is what SystemTap's usymname() does with the symbol
 * tables it loaded for the process, without needing them named in advance
 * (-d/--ldd).
 *
 * What a process had mapped is only known while it lives, and events are
 * read after the fact.  So the list is read while the process surely lives
 * (at the start of the trace, when it waits for the tool), and a later
 * read only adds to it: a mapping read before is dropped only where a new
 * one covers its addresses.  A read that races the process's exit can
 * return the first lines of /proc/PID/maps only (the address space goes
 * while the file is read: in a process forked to load three libraries
 * and exit, 183 reads in 300 saw fewer mappings than the one before);
 * taken as the whole list, it lost the mappings after those lines, the C
 * library's among them, and the frames in them were printed bare.  An object loaded after the start
 * (dlopen) is named by the agent's marker log, written while the process
 * lived, before any of the object's sites was armed: the log gives a
 * marker's run-time address, the object's file its link-time one, and so
 * the object's code mapping (usym_object), even when the process exited
 * before the tool read its first event there.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/func_symbols.h"
#include "lib/mapped_file.h"
#include "lib/markers.h"
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

/* Add mapping m to p's list, dropping the mappings it covers part of. */
static void maps_add(struct uproc *p, struct umap m)
{
	size_t k = 0;
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].end <= m.start || p->maps[i].start >= m.end)
			p->maps[k++] = p->maps[i];
	if (!(p->maps = realloc(p->maps, sizeof(*p->maps) * (k + 1))))
		abort();
	p->maps[k] = m;
	p->nmaps = k + 1;
}

/* Read the file mappings of p's process again and add them to what was
 * read before (lib/mapped_file.c parses them, and names the file to read:
 * the mapped one, where its path now holds another). */
static void maps_read(struct uproc *p)
{
	char name[64], line[PATH_MAX + 128], file[PATH_MAX];
	struct djp_mapping m;
	FILE *f;
	snprintf(name, sizeof(name), "/proc/%d/maps", (int)p->pid);
	if (!(f = fopen(name, "re")))
		return; /* gone: keep what was read */
	while (fgets(line, sizeof(line), f)) {
		if (!djp_mapping_parse(line, &m) || !m.exec || !m.path[0])
			continue;
		if (djp_mapping_file(p->pid, &m, file, sizeof(file)))
			snprintf(file, sizeof(file), "%s", m.path);
		maps_add(p, (struct umap){ m.lo, m.hi, m.offset, file_index(m.path, file) });
	}
	fclose(f);
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

static const struct umap *map_at(const struct uproc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return &p->maps[i];
	return NULL;
}

/* The link-time address of the site `name` (a marker or an SDT probe,
 * "PROVIDER:NAME"; an instruction probe, "func:FUNCTION" or
 * "func:FUNCTION+OFFSET") in the object at `path` whose run-time address
 * is `addr`: 0 and *link, or -ENOENT. */
static int site_link_addr(const char *path, const struct djp_func_table *funcs, const char *name, uint64_t addr,
			  uint64_t page, uint64_t *link)
{
	struct djp_marker_list *list;
	char err[256];
	int found = -ENOENT;

	if (!strncmp(name, "func:", 5)) {
		size_t len = strcspn(name + 5, "+%");
		uint64_t off = name[5 + len] == '+' ? strtoull(name + 6 + len, NULL, 0) : 0;
		for (size_t i = 0; funcs && i < funcs->count; i++)
			if (!strncmp(funcs->v[i].name, name + 5, len) && !funcs->v[i].name[len]) {
				*link = funcs->v[i].addr + off;
				return 0;
			}
		return -ENOENT;
	}
	if (djp_markers_read_file(path, DJP_READ_NO_DWARF, &list, err, sizeof(err)))
		return -ENOENT;
	for (size_t i = 0; i < list->count && found; i++) {
		const struct djp_marker_info *mi = &list->v[i];
		size_t plen = mi->provider ? strlen(mi->provider) : 0;
		bool same = plen ? !strncmp(name, mi->provider, plen) && name[plen] == ':' && !strcmp(name + plen + 1, mi->name)
				 : !strcmp(name, mi->name);
		/* a load bias is a whole number of pages */
		if (same && (!list->is_dyn ? addr == mi->site : !((addr - mi->site) & (page - 1)))) {
			*link = mi->site;
			found = 0;
		}
	}
	djp_marker_list_free(list);
	return found;
}

void usym_object(int32_t pid, const char *path, uint64_t addr, const char *name)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), link, start, size, off;
	struct uproc *p = proc_of(pid);
	struct ufile *uf;
	int fi;

	if (!path || !path[0] || !name || map_at(p, addr))
		return;
	fi = file_index(path, path); /* before files is read: it may move */
	uf = &files[fi];
	if (!uf->funcs || site_link_addr(path, uf->funcs, name, addr, page, &link) ||
	    djp_funcs_code_segment(uf->funcs, link, page, &start, &size, &off))
		return;
	maps_add(p, (struct umap){ start + (addr - link), start + (addr - link) + size, off, fi });
}

bool usym_lookup_any(uint64_t addr, struct usym *out)
{
	for (size_t i = 0; i < nprocs; i++)
		for (size_t k = 0; k < procs[i].nmaps; k++)
			if (addr >= procs[i].maps[k].start && addr < procs[i].maps[k].end)
				return usym_lookup(procs[i].pid, addr, out);
	return false;
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
	if (djp_funcs_vaddr_of(uf->funcs, off, &link))
		return true;
	out->link = link;
	out->has_link = true;
	if (!(f = djp_funcs_at(uf->funcs, link)))
		return true;
	out->name = f->name;
	out->off = link - f->addr;
	out->size = f->size;
	return true;
}
