/*
 * The functions of an ELF object: by name, by address, by source line.
 *
 * A function probe is asked for by name ("malloc", "pg_*"), by an address
 * seen in a backtrace, or by a source position ("xact.c:1234"); each is
 * turned here into link-time addresses, which the caller relocates by the
 * load bias of the mapping (is_dyn) or, through the PT_LOAD segments kept
 * with the table, into file offsets.
 *
 * Names.  Every STT_FUNC and STT_GNU_IFUNC symbol with a section and a
 * non-zero address is taken from .symtab and from .dynsym.  A program or
 * an unstripped library has both, and .dynsym is then a subset of .symtab;
 * a stripped library has only .dynsym, its exports, which are what one
 * probes in a library anyway.  When the file has no .symtab, its separate
 * debug file (found as gdb finds it: by build-id under
 * /usr/lib/debug/.build-id, or by .gnu_debuglink next to the file, in its
 * .debug/ directory or under /usr/lib/debug, and only with the file's own
 * build-id) lends its .symtab, and with it the static functions.  One
 * address often has several names: aliases (malloc and __libc_malloc),
 * a local alias of a global, the same name in both tables.  The table
 * keeps one entry per address, so that each function is probed once and an
 * address names one function: a global name before a local, a sized symbol
 * before a label, fewer leading underscores (malloc, not __libc_malloc), a
 * strong binding before a weak one, the shorter name, and .symtab's copy
 * before .dynsym's.  Names are copied into one block owned by the table,
 * since libelf's strings go away with the file.
 *
 * Lookup by address is a binary search for the last entry at or below the
 * address, then back over entries that cannot reach it (no function is
 * larger than the largest, so the walk is short): the innermost sized
 * function that holds it.  When none does and the nearest entry below has
 * no size (a label in assembly), that one: it is the best guess there is.
 * Lookup by name is fnmatch(3) over the table; the table is small (tens of
 * thousands for the largest programs) and a glob cannot be binary-searched.
 *
 * Source lines.  Every unit's line table (dwarf_getsrclines) is walked for
 * rows of the wanted line in a file whose name ends with the given one,
 * component by component: "foo.c" names "/src/foo.c" and "src/foo.c" but
 * not "/src/xfoo.c".  dwarf_getsrc_file() is not used because, for a line
 * without code, it answers with the next line that has some: a probe on a
 * comment would silently fire elsewhere, so here such a line is -ENOENT.
 * Only is_stmt rows count (the others are instructions the compiler
 * scheduled away from their statement, not a place where the line
 * begins), and only rows in an executable PT_LOAD segment (the linker
 * leaves the rows of functions it dropped at address 0).  A line may have
 * several addresses: a loop's header, each inlined copy of a function;
 * each is returned, once, in address order.  A probe on a line fires once
 * each time its code is entered, as gdb's breakpoint on it stops: a row
 * whose statement row before it, in the same sequence, is of the same
 * line and file is that line going on, not a place where it begins.
 * GCC at -O0 writes two rows for `acc += i * 3;` in a loop body (the
 * multiplication, then the addition): counting both fired twice a
 * pass.
 *
 * Prologues.  A probe on a function at its first instruction sees its
 * arguments in registers; stap and gdb place it after the prologue, where
 * unoptimized code has stored them in the frame and debug information
 * describes them.  Clang marks that place in the line table
 * (prologue_end).  GCC does not; gdb and stap take the second line of the
 * function: the first is_stmt row after the entry with another line number
 * (the entry's line is the function's opening; more rows of that line are
 * still prologue, a stack protector's setup say), or the first later row
 * at all for a function on one line.  That is right only for unoptimized
 * code: optimized code schedules the body into the prologue and its second
 * row may sit behind a branch, where a probe would miss calls.  So the rule
 * applies only when the unit's DW_AT_producer shows GCC's options and no
 * optimization level above -O0; otherwise, and whenever the line table
 * says nothing, the answer is the function's own address, which is always
 * correct if less convenient.
 *
 * Errors are one line, "PATH: problem", and -errno; nothing is returned
 * with an error.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/errline.h"
#include "lib/elf_debug.h"
#include "lib/cxx_name.h"
#include "lib/func_symbols.h"

struct segment {
	uint64_t vaddr, offset, filesz, memsz;
	uint32_t flags;
};

struct table_priv {
	char *names;
	struct segment *segs;
	size_t nsegs;
	uint64_t max_size; /* the largest function, bounds djp_funcs_at's walk */
	/* reach[i]: the furthest end of v[0..i), so that a walk back from an
	 * address stops where nothing before reaches it (djp_funcs_covering) */
	uint64_t *reach;
};

/* An open ELF file, with its separate debug file when one was looked for. */
struct elf_file {
	const char *path;
	int fd;
	Elf *elf;
	size_t shstrndx;
	char dbg_path[4096];
};

struct cand {
	uint64_t addr, size;
	const char *name;
	bool global, weak, dynsym;
};

struct cands {
	struct cand *v;
	size_t n, cap;
};


static void close_elf(struct elf_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

/* Open `path` and check that it is a complete x86-64 ELF executable or
 * shared object; 0 or -errno with err set. */
static int open_elf(struct elf_file *f, const char *path, char *err, size_t errsz)
{
	struct stat st;
	GElf_Ehdr eh;
	size_t shnum;

	int ret;

	f->path = path;
	if ((ret = djp_elf_open(path, &f->fd, &f->elf, &st, err, errsz)))
		return ret;
	gelf_getehdr(f->elf, &eh);
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return djp_errline(err, errsz, -ENOEXEC, path, "not an executable or shared object (ELF type %u)",
			       eh.e_type);
	if (eh.e_shoff > (uint64_t)st.st_size ||
	    (uint64_t)eh.e_shnum * eh.e_shentsize > (uint64_t)st.st_size - eh.e_shoff)
		return djp_errline(err, errsz, -ENOEXEC, path, "truncated ELF file (section headers past the end of the file)");
	if (eh.e_phoff > (uint64_t)st.st_size ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > (uint64_t)st.st_size - eh.e_phoff)
		return djp_errline(err, errsz, -ENOEXEC, path, "truncated ELF file (program headers past the end of the file)");
	if (elf_getshdrnum(f->elf, &shnum) || elf_getshdrstrndx(f->elf, &f->shstrndx))
		return djp_errline(err, errsz, -ENOEXEC, path, "corrupt ELF file: %s", elf_errmsg(-1));
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return djp_errline(err, errsz, -ENOEXEC, path, "corrupt ELF file: %s", elf_errmsg(-1));
		if (sh.sh_type != SHT_NOBITS &&
		    (sh.sh_offset > (uint64_t)st.st_size || sh.sh_size > (uint64_t)st.st_size - sh.sh_offset))
			return djp_errline(err, errsz, -ENOEXEC, path,
				       "truncated ELF file (section %zu past the end of the file)", elf_ndxscn(scn));
	}
	return 0;
}

static Elf_Scn *section_of_type(Elf *elf, uint32_t type)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return scn;
	}
	return NULL;
}

/* Open `path` into d when it is a valid ELF file with build-id (id, n). */
static bool open_debug_candidate(void *ctx, const char *path, const void *id, size_t n)
{
	struct elf_file *d = ctx;
	const void *id2;
	snprintf(d->dbg_path, sizeof(d->dbg_path), "%s", path);
	if (open_elf(d, d->dbg_path, NULL, 0) == 0 && djp_elf_build_id(d->elf, &id2) == n && !memcmp(id, id2, n))
		return true;
	close_elf(d);
	return false;
}

/* The separate debug file of f, into d (lib/elf_debug.c). */
static bool open_debug_file(const struct elf_file *f, struct elf_file *d)
{
	d->fd = -1;
	d->elf = NULL;
	return djp_elf_debug_file(f->elf, f->shstrndx, f->path, open_debug_candidate, d);
}

/* ---- function symbols ---- */

static int add_symbols(Elf *elf, Elf_Scn *scn, bool dynsym, struct cands *c)
{
	GElf_Shdr sh;
	Elf_Data *d;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
		return 0;
	size_t n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value || !s.st_name)
			continue;
		unsigned type = GELF_ST_TYPE(s.st_info), bind = GELF_ST_BIND(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (c->n == c->cap) {
			size_t cap = c->cap ? 2 * c->cap : 1024;
			struct cand *v = realloc(c->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			c->v = v;
			c->cap = cap;
		}
		c->v[c->n++] = (struct cand){
			.addr = s.st_value,
			.size = s.st_size,
			.name = name,
			.global = bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE,
			.weak = bind == STB_WEAK,
			.dynsym = dynsym,
		};
	}
	return 0;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;
	while (s[n] == '_')
		n++;
	return n;
}

/* By address, then the preferred name first (see the top of the file). */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	size_t ux, uy, lx, ly;
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if ((ux = leading_underscores(x->name)) != (uy = leading_underscores(y->name)))
		return ux < uy ? -1 : 1;
	if (x->weak != y->weak)
		return x->weak ? 1 : -1;
	if ((lx = strlen(x->name)) != (ly = strlen(y->name)))
		return lx < ly ? -1 : 1;
	if ((c = strcmp(x->name, y->name)))
		return c;
	if (x->dynsym != y->dynsym)
		return x->dynsym ? 1 : -1;
	return 0;
}

static int keep_segments(Elf *elf, struct table_priv *p)
{
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum))
		return 0;
	p->segs = calloc(phnum ? phnum : 1, sizeof(*p->segs));
	if (!p->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			p->segs[p->nsegs++] = (struct segment){ ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz,
								ph.p_flags };
	}
	return 0;
}

/* One entry per address, names copied into one block. */
static int build_table(struct cands *c, struct djp_func_table *t, struct table_priv *p)
{
	size_t n = 0, bytes = 0;

	qsort(c->v, c->n, sizeof(*c->v), cand_cmp);
	for (size_t i = 0; i < c->n; i++)
		if (!i || c->v[i].addr != c->v[i - 1].addr) {
			c->v[n++] = c->v[i];
			bytes += strlen(c->v[i].name) + 1;
		}
	t->v = calloc(n ? n : 1, sizeof(*t->v));
	p->names = malloc(bytes ? bytes : 1);
	p->reach = malloc((n ? n : 1) * sizeof(*p->reach));
	if (!t->v || !p->names || !p->reach)
		return -ENOMEM;
	char *s = p->names;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(c->v[i].name) + 1;
		memcpy(s, c->v[i].name, len);
		t->v[i] = (struct djp_func){ s, c->v[i].addr, c->v[i].size, c->v[i].global };
		p->reach[i] = !i ? 0 : p->reach[i - 1] > t->v[i - 1].addr + t->v[i - 1].size
					       ? p->reach[i - 1]
					       : t->v[i - 1].addr + t->v[i - 1].size;
		s += len;
		if (c->v[i].size > p->max_size)
			p->max_size = c->v[i].size;
	}
	t->count = n;
	return 0;
}

uint64_t *djp_funcs_starts(const struct djp_func_table *t)
{
	uint64_t *v = t && t->count ? malloc(t->count * sizeof(*v)) : NULL;
	for (size_t i = 0; v && i < t->count; i++)
		v[i] = t->v[i].addr;
	return v;
}

void djp_funcs_free(struct djp_func_table *t)
{
	struct table_priv *p;
	if (!t)
		return;
	if ((p = t->priv)) {
		free(p->names);
		free(p->reach);
		free(p->segs);
		free(p);
	}
	free(t->v);
	free(t);
}

int djp_funcs_read(const char *path, struct djp_func_table **out, char *err, size_t errsz)
{
	struct elf_file f = { .fd = -1 }, dbg = { .fd = -1 };
	struct djp_func_table *t = NULL;
	struct table_priv *p;
	struct cands c = { 0 };
	Elf_Scn *symtab;
	GElf_Ehdr eh;
	int ret;

	*out = NULL;
	if (err && errsz)
		err[0] = 0;
	if ((ret = open_elf(&f, path, err, errsz)))
		goto out;
	ret = -ENOMEM;
	if (!(t = calloc(1, sizeof(*t))) || !(p = t->priv = calloc(1, sizeof(*p))))
		goto nomem;
	t->is_dyn = gelf_getehdr(f.elf, &eh) && eh.e_type == ET_DYN;
	t->entry = gelf_getehdr(f.elf, &eh) ? eh.e_entry : 0;
	if ((symtab = section_of_type(f.elf, SHT_SYMTAB))) {
		if (add_symbols(f.elf, symtab, false, &c))
			goto nomem;
	} else if (open_debug_file(&f, &dbg)) {
		if (add_symbols(dbg.elf, section_of_type(dbg.elf, SHT_SYMTAB), false, &c))
			goto nomem;
	}
	if (add_symbols(f.elf, section_of_type(f.elf, SHT_DYNSYM), true, &c) || keep_segments(f.elf, p) ||
	    build_table(&c, t, p))
		goto nomem;
	*out = t;
	t = NULL;
	ret = 0;
	goto out;
nomem:
	ret = djp_errline(err, errsz, -ENOMEM, path, "out of memory");
out:
	djp_funcs_free(t);
	free(c.v);
	close_elf(&dbg);
	close_elf(&f);
	return ret;
}

/* The first entry above addr; the ones before it start at or below. */
static size_t first_above(const struct djp_func_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct djp_func *djp_funcs_at(const struct djp_func_table *t, uint64_t addr)
{
	const struct table_priv *p = t->priv;
	size_t lo = first_above(t, addr);

	if (!lo)
		return NULL;
	for (size_t i = lo; i-- > 0 && addr - t->v[i].addr < p->max_size;)
		if (t->v[i].size && addr - t->v[i].addr < t->v[i].size)
			return &t->v[i];
	return t->v[lo - 1].size ? NULL : &t->v[lo - 1];
}

const struct djp_func *djp_funcs_covering(const struct djp_func_table *t, uint64_t addr, const struct djp_func *after)
{
	const struct table_priv *p = t->priv;
	size_t i = after ? (size_t)(after - t->v) : first_above(t, addr);

	/* back, while something before reaches past addr */
	while (i-- > 0) {
		if (t->v[i].size && addr - t->v[i].addr < t->v[i].size)
			return &t->v[i];
		if (p->reach[i] <= addr)
			return NULL;
	}
	return NULL;
}

static int match_exact(const char *glob, const char *name)
{
	return strcmp(glob, name);
}

static int match_glob(const char *glob, const char *name)
{
	return fnmatch(glob, name, 0);
}

int djp_funcs_match(const struct djp_func_table *t, const char *glob,
		    int (*fn)(void *ctx, const struct djp_func *f), void *ctx)
{
	int (*match)(const char *, const char *) = strpbrk(glob, "*?[\\") ? match_glob : match_exact;
	int n = 0;

	for (size_t i = 0; i < t->count; i++) {
		const struct djp_func *f = &t->v[i];
		/* a C++ function by its own or qualified name too, as stap
		 * names it (lib/cxx_name.c) */
		if (match(glob, f->name) &&
		    !(f->name[0] == '_' && f->name[1] == 'Z' && djp_cxx_glob_match(glob, f->name, match)))
			continue;
		n++;
		if (fn) {
			int r = fn(ctx, f);
			if (r < 0)
				return r;
			if (r)
				break;
		}
	}
	return n;
}

int djp_funcs_file_offset(const struct djp_func_table *t, uint64_t addr, uint64_t *off)
{
	const struct table_priv *p = t->priv;
	for (size_t i = 0; i < p->nsegs; i++) {
		const struct segment *s = &p->segs[i];
		if (addr >= s->vaddr && addr - s->vaddr < s->filesz) {
			*off = s->offset + (addr - s->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

int djp_funcs_code_segment(const struct djp_func_table *t, uint64_t addr, uint64_t page, uint64_t *start,
			   uint64_t *size, uint64_t *off)
{
	const struct table_priv *p = t->priv;
	for (size_t i = 0; i < p->nsegs; i++) {
		const struct segment *s = &p->segs[i];
		if ((s->flags & PF_X) && addr >= s->vaddr && addr - s->vaddr < s->memsz) {
			uint64_t lo = s->vaddr & ~(page - 1), hi = (s->vaddr + s->memsz + page - 1) & ~(page - 1);
			*start = lo;
			*size = hi - lo;
			*off = s->offset - (s->vaddr - lo);
			return 0;
		}
	}
	return -ENOENT;
}

int djp_funcs_vaddr_of(const struct djp_func_table *t, uint64_t off, uint64_t *addr)
{
	const struct table_priv *p = t->priv;
	for (size_t i = 0; i < p->nsegs; i++) {
		const struct segment *s = &p->segs[i];
		if (off >= s->offset && off - s->offset < s->filesz) {
			*addr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- DWARF ---- */

/* The DWARF of path: its own, else its separate debug file's.  0 and *dw,
 * or -errno with err set (-ENODATA: none).  f (and dbg) stay open for as
 * long as *dw is used. */
static int open_dwarf(const char *path, struct elf_file *f, struct elf_file *dbg, Dwarf **dw, char *err,
		      size_t errsz)
{
	int ret;

	*dw = NULL;
	if ((ret = open_elf(f, path, err, errsz)))
		return ret;
	if ((*dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL)))
		return 0;
	if (open_debug_file(f, dbg) && (*dw = dwarf_begin_elf(dbg->elf, DWARF_C_READ, NULL)))
		return 0;
	return djp_errline(err, errsz, -ENODATA, path, "no debug information (line tables)");
}

static void close_dwarf(struct elf_file *f, struct elf_file *dbg, Dwarf *dw)
{
	if (dw)
		dwarf_end(dw);
	close_elf(dbg);
	close_elf(f);
}

/* Is addr in an executable PT_LOAD segment of the file? */
static bool in_code(Elf *elf, uint64_t addr)
{
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum))
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    addr >= ph.p_vaddr && addr - ph.p_vaddr < ph.p_memsz)
			return true;
	}
	return false;
}

/* The component of [s, *end) just before *end, skipping empty and "."
 * components; false when there is none.  *end moves to its start. */
static bool prev_component(const char *s, const char **end, const char **c, size_t *len)
{
	const char *e = *end;
	for (;;) {
		while (e > s && e[-1] == '/')
			e--;
		if (e == s) {
			*end = e;
			return false;
		}
		const char *b = e;
		while (b > s && b[-1] != '/')
			b--;
		if (e - b == 1 && *b == '.') {
			e = b;
			continue;
		}
		*c = b;
		*len = (size_t)(e - b);
		*end = b;
		return true;
	}
}

/* Does the file name `want` name `path` (see the top of the file)? */
bool djp_path_names(const char *path, const char *want)
{
	const char *pe = path + strlen(path), *we = want + strlen(want), *pc, *wc;
	size_t pl, wl;
	bool any = false;

	while (prev_component(want, &we, &wc, &wl)) {
		if (!prev_component(path, &pe, &pc, &pl) || pl != wl || memcmp(pc, wc, wl))
			return false;
		any = true;
	}
	if (want[0] == '/')
		return any && path[0] == '/' && !prev_component(path, &pe, &pc, &pl);
	return any;
}

/* Does `want` name the line table's file `src`?  A relative name is the
 * unit's compilation directory's (GCC writes DWARF 5 directories relative
 * to it), which matters to an absolute `want`. */
static bool source_matches(Dwarf_Die *cudie, const char *src, const char *want)
{
	Dwarf_Attribute attr;
	const char *dir;
	char full[4096];

	if (want[0] != '/' || src[0] == '/')
		return djp_path_names(src, want);
	if (!dwarf_attr_integrate(cudie, DW_AT_comp_dir, &attr) || !(dir = dwarf_formstring(&attr)) ||
	    (size_t)snprintf(full, sizeof(full), "%s/%s", dir, src) >= sizeof(full))
		return false;
	return djp_path_names(full, want);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int djp_lines_resolve(const char *path, const char *spec, uint64_t *addrs, size_t max, char *err, size_t errsz)
{
	struct elf_file f = { .fd = -1 }, dbg = { .fd = -1 };
	const char *colon = strrchr(spec, ':'), *last_src = NULL;
	bool last_match = false, any_lines = false, any_file = false;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	char file[4096], *end;
	unsigned long line;
	Dwarf *dw;
	int ret;

	if (err && errsz)
		err[0] = 0;
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(file) || colon[1] < '0' || colon[1] > '9')
		return djp_errline(err, errsz, -EINVAL, spec, "not FILE:LINE");
	errno = 0;
	line = strtoul(colon + 1, &end, 10);
	if (*end || errno || !line || line > INT_MAX)
		return djp_errline(err, errsz, -EINVAL, spec, "not FILE:LINE (bad line number)");
	snprintf(file, sizeof(file), "%.*s", (int)(colon - spec), spec);

	if ((ret = open_dwarf(path, &f, &dbg, &dw, err, errsz)))
		goto out;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	while (dwarf_get_units(dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
		Dwarf_Lines *lines;
		size_t nlines;
		if (unit_type == DW_UT_type || unit_type == DW_UT_split_type ||
		    dwarf_getsrclines(&cudie, &lines, &nlines) != 0)
			continue;
		any_lines |= nlines > 0;
		last_src = NULL; /* file names are the unit's */
		/* the statement row before this one in its sequence: a row of
		 * the same line right after one is that line going on */
		const char *prev_src = NULL;
		int prev_line = 0;
		for (size_t i = 0; i < nlines; i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			Dwarf_Addr a;
			bool stmt, endseq, goes_on;
			const char *src;
			int lineno;
			if (!l || !(src = dwarf_linesrc(l, NULL, NULL)) || dwarf_lineno(l, &lineno) ||
			    dwarf_lineendsequence(l, &endseq) || dwarf_linebeginstatement(l, &stmt)) {
				prev_src = NULL;
				continue;
			}
			goes_on = prev_src == src && prev_line == lineno;
			if (endseq)
				prev_src = NULL;
			else if (stmt)
				prev_src = src, prev_line = lineno;
			if (src != last_src) {
				last_src = src;
				last_match = source_matches(&cudie, src, file);
			}
			if (!last_match)
				continue;
			any_file = true;
			if ((unsigned long)lineno != line || endseq || !stmt || goes_on || dwarf_lineaddr(l, &a) ||
			    !in_code(f.elf, a))
				continue;
			if (n == cap) {
				size_t c2 = cap ? 2 * cap : 16;
				uint64_t *v2 = realloc(v, c2 * sizeof(*v2));
				if (!v2) {
					ret = djp_errline(err, errsz, -ENOMEM, path, "out of memory");
					goto out;
				}
				v = v2;
				cap = c2;
			}
			v[n++] = a;
		}
	}
	if (!any_lines) {
		ret = djp_errline(err, errsz, -ENODATA, path, "no debug information (line tables)");
		goto out;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!k || v[i] != v[k - 1])
			v[k++] = v[i];
	if (!any_file) {
		ret = djp_errline(err, errsz, -ENOENT, path, "no source file %s in its line tables", file);
		goto out;
	}
	if (!k) {
		ret = djp_errline(err, errsz, -ENOENT, spec, "no code at that line");
		goto out;
	}
	if (k > max)
		k = max;
	if (k)
		memcpy(addrs, v, k * sizeof(*v));
	ret = (int)(k > INT_MAX ? INT_MAX : k);
out:
	free(v);
	close_dwarf(&f, &dbg, dw);
	return ret;
}


/* Did GCC compile the unit without optimization, by its DW_AT_producer
 * ("GNU C17 12.2.0 -mtune=generic -march=x86-64 -g -O0")?  A producer
 * without options says nothing, and is not trusted. */
static bool unoptimized_gcc(Dwarf_Die *cudie)
{
	Dwarf_Attribute attr;
	const char *s, *p, *o;
	char level = '0';

	if (!dwarf_attr_integrate(cudie, DW_AT_producer, &attr) || !(s = dwarf_formstring(&attr)) ||
	    strncmp(s, "GNU ", 4) || !strstr(s, " -"))
		return false;
	for (p = s; (o = strstr(p, " -O")); p = o + 3)
		level = o[3] == ' ' || !o[3] ? '1' : o[3];
	return level == '0';
}

uint64_t djp_func_after_prologue(const char *path, const struct djp_func *fn)
{
	struct elf_file f = { .fd = -1 }, dbg = { .fd = -1 };
	uint64_t end = fn->size ? fn->addr + fn->size : UINT64_MAX, ret = fn->addr, pe = 0, next = 0,
		 next_line = 0;
	bool have_entry = false;
	int entry_line = 0;
	Dwarf_Lines *lines;
	Dwarf_Die cudie;
	size_t nlines;
	Dwarf *dw;

	if (open_dwarf(path, &f, &dbg, &dw, NULL, 0) || !djp_dwarf_cu_at(dw, fn->addr, &cudie) ||
	    dwarf_getsrclines(&cudie, &lines, &nlines))
		goto out;
	/* libdw sorts the rows by address. */
	for (size_t i = 0; i < nlines; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr a;
		bool stmt, endseq, prologue_end;
		int lineno;
		if (!l || dwarf_lineaddr(l, &a) || a < fn->addr)
			continue;
		if (a >= end || dwarf_lineendsequence(l, &endseq) || dwarf_lineno(l, &lineno))
			break;
		if (endseq) {
			if (a > fn->addr)
				break; /* the end of the function's code */
			continue;
		}
		if (!dwarf_lineprologueend(l, &prologue_end) && prologue_end && !pe)
			pe = a;
		if (a == fn->addr) {
			if (!have_entry)
				entry_line = lineno;
			have_entry = true;
			continue;
		}
		if (dwarf_linebeginstatement(l, &stmt) || !stmt || !lineno)
			continue;
		if (!next)
			next = a;
		if (!next_line && lineno != entry_line)
			next_line = a;
	}
	if (pe)
		ret = pe;
	else if (have_entry && unoptimized_gcc(&cudie) && (next_line || next))
		ret = next_line ? next_line : next;
out:
	close_dwarf(&f, &dbg, dw);
	return ret;
}

/* A DW_EH_PE-encoded value at p (the field at run-time address `at`) of
 * the given encoding: 0 and *v, or -1 for an encoding not read here. */
static int eh_value(const uint8_t *p, const uint8_t *end, uint8_t enc, uint64_t at, uint64_t *v)
{
	static const uint8_t size[16] = { [DW_EH_PE_absptr] = 8, [DW_EH_PE_udata2] = 2, [DW_EH_PE_udata4] = 4,
					  [DW_EH_PE_udata8] = 8, [DW_EH_PE_sdata2] = 2, [DW_EH_PE_sdata4] = 4,
					  [DW_EH_PE_sdata8] = 8 };
	uint8_t n = size[enc & 0xf];
	uint64_t x = 0;

	if (!n || end - p < n || ((enc & 0x70) != 0 && (enc & 0x70) != DW_EH_PE_pcrel))
		return -1;
	memcpy(&x, p, n);
	if ((enc & 0x8) && n < 8 && (x >> (8 * n - 1)) & 1)
		x |= ~0ULL << (8 * n); /* signed */
	*v = x + ((enc & 0x70) == DW_EH_PE_pcrel ? at : 0);
	return 0;
}

/* The encoding of a CIE's FDE addresses (its augmentation's 'R'). */
static int cie_fde_encoding(const Dwarf_CIE *cie, uint8_t *enc)
{
	const uint8_t *d = cie->augmentation_data, *end = d + cie->augmentation_data_size;
	const char *a = cie->augmentation;

	*enc = DW_EH_PE_absptr;
	if (!a || a[0] != 'z')
		return a && a[0] ? -1 : 0;
	for (a++; *a; a++)
		switch (*a) {
		case 'R':
			if (d >= end)
				return -1;
			*enc = *d++;
			break;
		case 'L':
			d++;
			break;
		case 'P': {
			static const uint8_t psize[16] = { 8, 0, 2, 4, 8, 0, 0, 0, 0, 0, 2, 4, 8 };
			if (d >= end || !psize[*d & 0xf])
				return -1;
			d += 1 + psize[*d & 0xf];
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return -1;
		}
	return 0;
}

/*
 * The range of the FDE of .eh_frame that covers addr: a whole function (or
 * a GCC .cold part).  libdw gives a frame's rows, each the range over
 * which one rule holds: a row ends at every push and pop, which is not
 * where the function ends.
 */
static int fde_range(Elf *elf, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!ident || elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;
		Dwarf_Off off = 0, next, cie_off = (Dwarf_Off)-1;
		uint8_t enc = 0;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".eh_frame") || !(d = elf_getdata(scn, NULL)))
			continue;
		for (; off < d->d_size; off = next) {
			Dwarf_CFI_Entry e, c;
			uint64_t start, len;
			const uint8_t *p;
			if (dwarf_next_cfi(ident, d, true, off, &next, &e) || next == (Dwarf_Off)-1)
				break;
			if (dwarf_cfi_cie_p(&e))
				continue;
			if (e.fde.CIE_pointer != cie_off) {
				Dwarf_Off cnext;
				if (dwarf_next_cfi(ident, d, true, e.fde.CIE_pointer, &cnext, &c) || !dwarf_cfi_cie_p(&c) ||
				    cie_fde_encoding(&c.cie, &enc))
					return -1;
				cie_off = e.fde.CIE_pointer;
			}
			p = e.fde.start;
			if (eh_value(p, e.fde.end, enc, sh.sh_addr + (uint64_t)(p - (const uint8_t *)d->d_buf), &start))
				return -1;
			p += (enc & 0xf) == DW_EH_PE_absptr ? 8 : (enc & 0x7) == 2 ? 2 : (enc & 0x7) == 3 ? 4 : 8;
			if (eh_value(p, e.fde.end, enc & 0xf, 0, &len))
				return -1;
			if (start <= addr && addr - start < len) {
				*lo = start;
				*hi = start + len;
				return 0;
			}
		}
	}
	return -1;
}

int djp_func_from_cfi(const char *path, uint64_t addr, struct djp_func *f)
{
	Dwarf_CFI *cfi;
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr start, end;
	uint64_t lo, hi;
	Elf *elf;
	int fd, ret = -ENOENT;

	if (elf_version(EV_CURRENT) == EV_NONE || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -ENOENT;
	if ((elf = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		if (!fde_range(elf, addr, &lo, &hi)) {
			*f = (struct djp_func){ "?", lo, hi - lo, false };
			ret = 0;
		} else if ((cfi = dwarf_getcfi_elf(elf))) {
			/* an FDE not read here: its row, a part of it */
			if (dwarf_cfi_addrframe(cfi, addr, &frame) == 0 &&
			    dwarf_frame_info(frame, &start, &end, NULL) >= 0 && start <= addr && addr < end) {
				*f = (struct djp_func){ "?", start, end - start, false };
				ret = 0;
			}
			free(frame);
			dwarf_cfi_end(cfi);
		}
		elf_end(elf);
	}
	close(fd);
	return ret;
}

const struct djp_func *djp_func_around(const struct djp_func_table *t, const char *path, uint64_t addr,
				       struct djp_func *cfi)
{
	const struct djp_func *f = djp_funcs_at(t, addr);
	if (f && f->size && addr < f->addr + f->size)
		return f;
	return path && !djp_func_from_cfi(path, addr, cfi) ? cfi : NULL;
}
