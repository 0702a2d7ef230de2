/*
 * Parsing marker records and SDT notes from raw section bytes.
 *
 * This file knows two byte layouts and nothing about ELF files: the reader
 * (markers_elf.c), the engine (which finds the sections of a loaded object)
 * and the fuzz target hand it a section's contents and its link-time address.
 *
 * `.markers` (docs/ABI.md, version 1) is a sequence of 8-aligned records,
 *
 *   u16 version, u16 size, u8 site_len, u8 nargs, u16 flags,
 *   s64 site - (address of this field), name\0 args\0 format\0, zero pad,
 *
 * each emitted by one MARK and concatenated by the linker, which may leave
 * zero padding between the input sections of different objects; a record
 * never starts with a zero word (its version is not 0), so whole zero words
 * between records are skipped.  The site is self-relative, so the section
 * needs no relocation in a PIE or a shared library, and the reader turns it
 * into a link-time address with the section's address.
 *
 * The section is untrusted input (a corrupt or hostile file, or fuzz bytes):
 * every size is checked against what is left of the section before anything
 * is read, every string must end inside its record, and a version this
 * reader does not know is refused as a whole, never skipped, because a newer
 * layout may not keep `size` where version 1 has it.  The first problem
 * found is the error; nothing is returned with it.
 *
 * `.note.stapsdt` is a sequence of ELF notes (namesz, descsz, type, name,
 * desc, each 4-aligned); an SDT note has name "stapsdt", type 3 and a desc of
 * pc, base, semaphore (8 bytes each) then provider\0 name\0 args\0.  Notes of
 * other owners or types are skipped.  SDT probes are markers with a 1-byte
 * site (a uprobe's view of the NOP) and no format.  Their argument strings
 * come from any compiler, so a location this parser cannot express becomes
 * an "unknown" argument instead of failing the whole object.
 *
 * Storage: the section is copied once into memory the list owns and every
 * string of the result points into that copy; djp_marker_list_free() frees
 * it all.  Later strings (function and file names from the symbol table and
 * DWARF) go into the same pool.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/errline.h"
#include "lib/marker_match.h"
#include "markers.h"

#define RECORD_HEADER 16
#define RECORD_VERSION 1 /* the only layout this reader knows */
#define SDT_NOTE_TYPE 3

struct pool_chunk {
	struct pool_chunk *next;
	char data[];
};

struct load_seg {
	uint64_t vaddr, offset, filesz;
};

struct list_priv {
	struct pool_chunk *chunks;
	size_t cap;
	struct load_seg *segs;
	size_t nsegs;
};


static struct djp_marker_list *list_new(void)
{
	struct djp_marker_list *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->priv = calloc(1, sizeof(struct list_priv));
	if (!l->priv) {
		free(l);
		return NULL;
	}
	return l;
}

size_t djp_marker_list_programs(const struct djp_marker_list *list)
{
	size_t n = 0;

	for (size_t i = 0; i < list->count; i++)
		n += !list->v[i].name || !djp_marker_reserved(list->v[i].name);
	return n;
}

void djp_marker_list_free(struct djp_marker_list *list)
{
	if (!list)
		return;
	struct list_priv *p = list->priv;
	if (p) {
		for (struct pool_chunk *c = p->chunks, *next; c; c = next) {
			next = c->next;
			free(c);
		}
		free(p->segs);
		free(p);
	}
	free(list->v);
	free(list);
}

const char *djp_marker_list_strdup(struct djp_marker_list *list, const char *s, size_t n)
{
	struct list_priv *p = list->priv;
	struct pool_chunk *c = malloc(sizeof(*c) + n + 1);
	if (!c)
		return NULL;
	memcpy(c->data, s, n);
	c->data[n] = 0;
	c->next = p->chunks;
	p->chunks = c;
	return c->data;
}

int djp_marker_list_add_segment(struct djp_marker_list *list, uint64_t vaddr, uint64_t offset, uint64_t filesz)
{
	struct list_priv *p = list->priv;
	struct load_seg *s = realloc(p->segs, (p->nsegs + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	p->segs = s;
	s[p->nsegs++] = (struct load_seg){ vaddr, offset, filesz };
	return 0;
}

int djp_marker_list_bias(const struct djp_marker_list *list, uint64_t map_start, uint64_t map_offset,
			 uint64_t *bias)
{
	const struct list_priv *p = list->priv;

	/* The mapping starts at file offset map_offset, which segment s holds
	 * at link-time address s.vaddr + (map_offset - s.offset). */
	for (size_t i = 0; i < p->nsegs; i++) {
		const struct load_seg *s = &p->segs[i];
		uint64_t page_off = s->offset & ~(uint64_t)0xfff;
		if (map_offset >= page_off && map_offset < s->offset + s->filesz) {
			*bias = map_start - (s->vaddr + (map_offset - s->offset));
			return 0;
		}
	}
	return -ENOENT;
}

int djp_marker_list_vaddr_of(const struct djp_marker_list *list, uint64_t file_off, uint64_t *vaddr)
{
	const struct list_priv *p = list->priv;
	for (size_t i = 0; i < p->nsegs; i++) {
		const struct load_seg *s = &p->segs[i];
		if (file_off >= s->offset && file_off < s->offset + s->filesz) {
			*vaddr = s->vaddr + (file_off - s->offset);
			return 0;
		}
	}
	return -ENOENT;
}

int djp_marker_list_file_offset(const struct djp_marker_list *list, uint64_t vaddr, uint64_t *file_off)
{
	const struct list_priv *p = list->priv;
	for (size_t i = 0; i < p->nsegs; i++) {
		const struct load_seg *s = &p->segs[i];
		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz) {
			*file_off = s->offset + (vaddr - s->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

static struct djp_marker_info *list_push(struct djp_marker_list *l)
{
	struct list_priv *p = l->priv;
	if (l->count == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct djp_marker_info *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		l->v = v;
		p->cap = cap;
	}
	struct djp_marker_info *m = &l->v[l->count++];
	memset(m, 0, sizeof(*m));
	m->sp_align = -1;
	return m;
}

struct djp_marker_list *djp_marker_list_new(void)
{
	return list_new();
}

struct djp_marker_info *djp_marker_list_push(struct djp_marker_list *l)
{
	return list_push(l);
}

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Length of the string at s within n bytes, or n when it has no NUL. */
static size_t str_in(const char *s, size_t n)
{
	const char *z = memchr(s, 0, n);
	return z ? (size_t)(z - s) : n;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* One version-1 record at `off` of `copy` (a private copy of the section);
 * returns its size, or -errno with err set. */
static int parse_record(struct djp_marker_list *l, const char *copy, size_t size, size_t off, uint64_t vaddr,
			const char *what, djp_sym_lookup_fn lookup, void *ctx, char *err, size_t errsz)
{
	const unsigned char *r = (const unsigned char *)copy + off;
	const char *why = NULL;

	if (size - off < RECORD_HEADER)
		return djp_errline(err, errsz, -EINVAL, what, ".markers record at offset 0x%zx is cut off by the end of the section",
			       off);
	unsigned version = rd16(r), rsize = rd16(r + 2), site_len = r[4], nargs = r[5];
	if (version != RECORD_VERSION)
		return djp_errline(err, errsz, -ENOTSUP, what,
			       ".markers record at offset 0x%zx has version %u; this reader knows only version %d", off,
			       version, RECORD_VERSION);
	if (rsize < RECORD_HEADER + 3 || rsize % 8)
		return djp_errline(err, errsz, -EINVAL, what, ".markers record at offset 0x%zx has a bad size %u", off,
			       rsize);
	if (rsize > size - off)
		return djp_errline(err, errsz, -EINVAL, what,
			       ".markers record at offset 0x%zx (size %u) runs past the end of the section (size %zu)",
			       off, rsize, size);
	if (site_len != 6)
		return djp_errline(err, errsz, -EINVAL, what, ".markers record at offset 0x%zx has site length %u, not 6",
			       off, site_len);
	if (nargs > DJP_MARKER_MAX_ARGS)
		return djp_errline(err, errsz, -EINVAL, what, ".markers record at offset 0x%zx has %u arguments (at most %d)",
			       off, nargs, DJP_MARKER_MAX_ARGS);

	/* name\0 args\0 format\0, all inside the record. */
	const char *s = copy + off + RECORD_HEADER, *end = copy + off + rsize;
	const char *str[3];
	for (int i = 0; i < 3; i++) {
		size_t n = str_in(s, (size_t)(end - s));
		if (s + n == end)
			return djp_errline(err, errsz, -EINVAL, what,
				       ".markers record at offset 0x%zx: strings run past the end of the record", off);
		str[i] = s;
		s += n + 1;
	}
	if (!*str[0])
		return djp_errline(err, errsz, -EINVAL, what, ".markers record at offset 0x%zx has an empty name", off);

	struct djp_marker_info *m = list_push(l);
	if (!m)
		return djp_errline(err, errsz, -ENOMEM, what, "out of memory");
	m->site = vaddr + off + 8 + rd64(r + 8);
	m->site_len = (uint8_t)site_len;
	m->nargs = (uint8_t)nargs;
	m->name = str[0];
	m->args = str[1];
	m->format = str[2];
	int n = djp_argloc_parse_all(m->args, m->arg, DJP_MARKER_MAX_ARGS, lookup, ctx, &why);
	if (n < 0)
		return djp_errline(err, errsz, -EINVAL, what, "marker %s: bad argument string \"%s\": %s", m->name, m->args,
			       why);
	if ((unsigned)n != nargs)
		return djp_errline(err, errsz, -EINVAL, what, "marker %s: %d argument locations but the record says %u",
			       m->name, n, nargs);
	return (int)rsize;
}

int djp_markers_parse_section_sym(const void *data, size_t size, uint64_t vaddr, const char *what,
				  djp_sym_lookup_fn lookup, void *ctx, struct djp_marker_list **out, char *err,
				  size_t errsz)
{
	struct djp_marker_list *l;
	char *copy;
	size_t off = 0;
	int ret = 0;

	*out = NULL;
	if (size > UINT32_MAX)
		return djp_errline(err, errsz, -EFBIG, what, ".markers section is too large (%zu bytes)", size);
	l = list_new();
	copy = l ? (char *)djp_marker_list_strdup(l, data ? data : "", data ? size : 0) : NULL;
	if (!copy) {
		djp_marker_list_free(l);
		return djp_errline(err, errsz, -ENOMEM, what, "out of memory");
	}
	while (off < size) {
		const unsigned char *p = (const unsigned char *)copy + off;
		size_t left = size - off;
		if (left < 8 ? all_zero(p, left) : all_zero(p, 8)) {
			off += left < 8 ? left : 8;
			continue;
		}
		ret = parse_record(l, copy, size, off, vaddr, what, lookup, ctx, err, errsz);
		if (ret < 0)
			break;
		off += (size_t)ret;
		ret = 0;
	}
	if (ret < 0) {
		djp_marker_list_free(l);
		return ret;
	}
	*out = l;
	return 0;
}

int djp_markers_parse_section(const void *data, size_t size, uint64_t vaddr, const char *what,
			      struct djp_marker_list **out, char *err, size_t errsz)
{
	return djp_markers_parse_section_sym(data, size, vaddr, what, NULL, NULL, out, err, errsz);
}

/* Parse the arguments of an SDT probe leniently: a token this parser cannot
 * express becomes an unknown argument of the size its prefix says. */
static int parse_sdt_args(struct djp_marker_info *m, djp_sym_lookup_fn lookup, void *ctx)
{
	const char *p = m->args;
	unsigned n = 0;

	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		const char *e = p;
		while (*e && *e != ' ')
			e++;
		if (n == DJP_MARKER_MAX_ARGS)
			return -1;
		struct djp_argloc *a = &m->arg[n++];
		if (djp_argloc_parse(p, (size_t)(e - p), a, lookup, ctx, NULL)) {
			long sz = strtol(p, NULL, 10);
			memset(a, 0, sizeof(*a));
			a->kind = DJP_LOC_NONE;
			a->reg = a->index = DJP_REG_NONE;
			a->is_signed = sz < 0;
			a->size = (sz == 1 || sz == 2 || sz == 4 || sz == -1 || sz == -2 || sz == -4) ? (uint8_t)labs(sz)
												  : 8;
		}
		p = e;
	}
	m->nargs = (uint8_t)n;
	return 0;
}

int djp_markers_parse_sdt_notes_sym(const void *data, size_t size, const char *what, djp_sym_lookup_fn lookup,
				    void *ctx, struct djp_marker_list **out, char *err, size_t errsz)
{
	struct djp_marker_list *l;
	const char *copy;
	size_t off = 0;
	int ret = 0;

	*out = NULL;
	l = list_new();
	copy = l ? djp_marker_list_strdup(l, data ? data : "", data ? size : 0) : NULL;
	if (!copy) {
		djp_marker_list_free(l);
		return djp_errline(err, errsz, -ENOMEM, what, "out of memory");
	}
	while (off < size) {
		const unsigned char *n = (const unsigned char *)copy + off;
		if (size - off < 12) {
			if (all_zero(n, size - off))
				break;
			ret = djp_errline(err, errsz, -EINVAL, what, "SDT note at offset 0x%zx is cut off", off);
			break;
		}
		uint64_t namesz = rd32(n), descsz = rd32(n + 4), type = rd32(n + 8);
		uint64_t name_off = off + 12, desc_off = name_off + ((namesz + 3) & ~3ull);
		uint64_t next = desc_off + ((descsz + 3) & ~3ull);
		if (next > size) {
			ret = djp_errline(err, errsz, -EINVAL, what, "SDT note at offset 0x%zx runs past the end of the section",
				      off);
			break;
		}
		if (namesz == 8 && memcmp(copy + name_off, "stapsdt", 8) == 0 && type == SDT_NOTE_TYPE) {
			const unsigned char *d = (const unsigned char *)copy + desc_off;
			const char *s = copy + desc_off + 24, *end = copy + desc_off + descsz;
			const char *str[3];
			if (descsz < 24 + 3) {
				ret = djp_errline(err, errsz, -EINVAL, what, "SDT note at offset 0x%zx is too short", off);
				break;
			}
			for (int i = 0; i < 3 && ret == 0; i++) {
				size_t len = str_in(s, (size_t)(end - s));
				if (s + len == end)
					ret = djp_errline(err, errsz, -EINVAL, what,
						      "SDT note at offset 0x%zx: strings run past the end of the note", off);
				str[i] = s;
				s += len + 1;
			}
			if (ret)
				break;
			struct djp_marker_info *m = list_push(l);
			if (!m) {
				ret = djp_errline(err, errsz, -ENOMEM, what, "out of memory");
				break;
			}
			m->site = rd64(d);
			m->sdt_base = rd64(d + 8);
			m->semaphore = rd64(d + 16);
			m->site_len = 1;
			m->from_sdt = true;
			m->provider = str[0];
			m->name = str[1];
			m->args = str[2];
			m->format = "";
			if (parse_sdt_args(m, lookup, ctx)) {
				ret = djp_errline(err, errsz, -EINVAL, what, "SDT probe %s:%s has more than %d arguments",
					      m->provider, m->name, DJP_MARKER_MAX_ARGS);
				break;
			}
		}
		off = (size_t)next;
	}
	if (ret < 0) {
		djp_marker_list_free(l);
		return ret;
	}
	*out = l;
	return 0;
}

int djp_markers_parse_sdt_notes(const void *data, size_t size, const char *what, struct djp_marker_list **out,
				char *err, size_t errsz)
{
	return djp_markers_parse_sdt_notes_sym(data, size, what, NULL, NULL, out, err, errsz);
}
