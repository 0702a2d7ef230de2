/*
 * Reading the markers of an ELF file, with libelf and libdw.
 *
 * How it works.  The file is opened and handed to libelf (ELF_C_READ_MMAP).
 * After checking that it is a complete 64-bit x86-64 ELF file, the reader
 * walks the section headers once, by name: `.markers` holds djprobe records,
 * `.note.stapsdt` holds SDT notes, `.stapsdt.base` is the anchor SDT readers
 * use to detect a file that was prelinked after its notes were written, and
 * `.symtab` (or `.dynsym` in a stripped file) names functions and globals.
 * An object with a `.markers` section is described by it alone (its SDT
 * notes describe the same sites again); an object without one is described
 * by its SDT notes, as glibc and libstdc++ are, and so is one whose
 * `.markers` holds only the library's own (a program that links
 * libdjprobe.a).  The bytes of each section go
 * to markers_parse.c, which knows the layouts; this file knows ELF.
 *
 * Argument strings such as `-4@counter(%rip)` name globals: the parser
 * calls back into the symbol table here to turn the name into a link-time
 * address.  Each site must then lie in an executable section and, for a
 * `.markers` record, hold the 6-byte NOP: a record that points anywhere else
 * is a corrupt file, and saying so here is better than patching garbage later.
 *
 * Function names come from the symbol table (the FUNC symbol whose range
 * holds the site); when there is none, from DWARF (the innermost subprogram
 * scope).  The source position comes from DWARF's line table through
 * dwarf_addrdie() and dwarf_getsrc_die(); a file without debug information
 * simply has none, which is not an error.  A distribution's stripped file
 * has its symbols and DWARF in a separate debug file (a -dbgsym package),
 * found as gdb finds it: by build-id under /usr/lib/debug/.build-id, or by
 * its .gnu_debuglink name next to the file, in its .debug/ directory or
 * under /usr/lib/debug; it must carry the file's build-id.  A site that is
 * still in no named function (a static function of a stripped program:
 * most of PostgreSQL's probes) is given the start of its function from the
 * call-frame information, as "0xADDR", so that it can be found in a
 * disassembly.  DJP_READ_NO_DWARF skips all of these lookups for callers
 * that only need addresses (the engine).
 *
 * The stack alignment at each site comes from the call-frame information
 * (.eh_frame, through libdw's CFI reader): where the rule for the canonical
 * frame address is %rsp plus a constant k, %rsp there is -k modulo 16,
 * since the CFA is the caller's %rsp before its call, 16-byte aligned by
 * the ABI.  The engine's lean trampoline uses it to align the stack for the
 * handler without spending a register on it.  A frame-pointer rule (-O0
 * code), or no CFI at all, says nothing: the trampoline aligns at run time.
 *
 * A relocatable object (ET_REL: a `.o`, or a kernel module, `.ko`) has no
 * addresses yet: every section starts at 0, and the assembler could not
 * write a record's self-relative site, which points from `.markers` into a
 * text section, so the file holds 0 there and `.rela.markers` an
 * R_X86_64_PC64 relocation against that text section (its section symbol,
 * or a function's) instead.  The reader applies them to a copy of the
 * section as a linker would, with every section placed at 0, so that each
 * site comes out as S + A: its offset in its own section, the address
 * `objdump -d` prints for it.  Marker i is the record whose site field the
 * i-th relocation (by offset) patches, and the parser's answer is checked
 * against that; the section's name goes with each marker.  Function names
 * come from the symbols of that section only; DWARF's addresses in such a
 * file are unrelocated too, so it is not asked for file:line or the stack
 * alignment.
 *
 * Errors are one line, "PATH: problem", and -errno; nothing is returned with
 * an error.  The PT_LOAD segments are kept with the list so that a caller
 * with a /proc/PID/maps line can compute the load bias.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_debug.h"
#include "markers.h"

static const unsigned char nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };

struct sym {
	uint64_t addr, size;
	const char *name;
	bool is_func;
	size_t shndx; /* its section (what an ET_REL file's value is relative to) */
};

struct reader {
	const char *path;
	int fd; /* a separate debug file's own descriptor, else unused */
	Elf *elf;
	size_t shstrndx;
	Elf_Scn *markers, *notes, *sdt_base, *symtab;
	/* ET_REL: the relocations of .markers, and the section of each
	 * marker's site once they are applied (marker i: site_scn[i]) */
	bool rel;
	unsigned nmarkers_scn;
	Elf_Scn *markers_rela;
	size_t *site_scn;
	struct sym *syms; /* sorted by address */
	struct sym **byname; /* the same, sorted by name */
	size_t nsyms;
	char *err;
	size_t errsz;
};

static int rd_err(struct reader *r, int ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rd_err(struct reader *r, int ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!r->err || !r->errsz)
		return ret;
	n = snprintf(r->err, r->errsz, "%s: ", r->path);
	if (n >= 0 && (size_t)n < r->errsz) {
		va_start(ap, fmt);
		vsnprintf(r->err + n, r->errsz - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static int by_addr(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Prefer functions, then global names, at the same address. */
	return (int)y->is_func - (int)x->is_func;
}

static int by_name(const void *a, const void *b)
{
	const struct sym *const *x = a, *const *y = b;
	int c = strcmp((*x)->name, (*y)->name);
	return c ? c : by_addr(*x, *y);
}

/* Load the symbols of .symtab (or .dynsym) into a sorted array.  Names point
 * into libelf's data, valid until elf_end(). */
static int load_symbols(struct reader *r)
{
	GElf_Shdr sh;
	Elf_Data *d;

	if (!r->symtab || !gelf_getshdr(r->symtab, &sh) || !(d = elf_getdata(r->symtab, NULL)) || !sh.sh_entsize)
		return 0;
	size_t n = sh.sh_size / sh.sh_entsize;
	r->syms = calloc(n ? n : 1, sizeof(*r->syms));
	if (!r->syms)
		return rd_err(r, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_name)
			continue;
		unsigned type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE && type != STT_GNU_IFUNC &&
		    type != STT_TLS)
			continue;
		const char *name = elf_strptr(r->elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		r->syms[r->nsyms++] = (struct sym){ s.st_value, s.st_size, name,
						    type == STT_FUNC || type == STT_GNU_IFUNC, s.st_shndx };
	}
	qsort(r->syms, r->nsyms, sizeof(*r->syms), by_addr);
	r->byname = malloc((r->nsyms ? r->nsyms : 1) * sizeof(*r->byname));
	if (!r->byname)
		return rd_err(r, -ENOMEM, "out of memory");
	for (size_t i = 0; i < r->nsyms; i++)
		r->byname[i] = &r->syms[i];
	qsort(r->byname, r->nsyms, sizeof(*r->byname), by_name);
	return 0;
}

/* djp_sym_lookup_fn: name -> link-time address; TLS symbols are not
 * addresses and are not resolved. */
static int lookup_symbol(void *ctx, const char *name, size_t len, uint64_t *addr)
{
	struct reader *r = ctx;
	size_t lo = 0, hi = r->nsyms;

	/* The first name >= the key, by strncmp order on the key's bytes. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const char *s = r->byname[mid]->name;
		int c = strncmp(s, name, len);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < r->nsyms && strncmp(r->byname[lo]->name, name, len) == 0; lo++)
		if (r->byname[lo]->name[len] == 0) {
			*addr = r->byname[lo]->addr;
			return 0;
		}
	return -ENOENT;
}

/* The function around addr; in an ET_REL file, addr is an offset into
 * section shndx and only that section's symbols count (0: any). */
static const char *function_at(struct reader *r, uint64_t addr, size_t shndx)
{
	size_t lo = 0, hi = r->nsyms;
	/* The last symbol at or below addr, then back over the ones that do not
	 * cover it (a zero-size label between a function's start and addr). */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct sym *s = &r->syms[lo];
		if (s->is_func && addr >= s->addr && addr < s->addr + s->size && (!shndx || s->shndx == shndx))
			return s->name;
	}
	return NULL;
}

static Elf_Scn *section_at(struct reader *r, uint64_t addr, uint64_t len, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(r->elf, scn))) {
		if (!gelf_getshdr(scn, out) || !(out->sh_flags & SHF_ALLOC))
			continue;
		if (addr >= out->sh_addr && len <= out->sh_size && addr - out->sh_addr <= out->sh_size - len)
			return scn;
	}
	return NULL;
}

static int check_sites(struct reader *r, struct djp_marker_list *l)
{
	for (size_t i = 0; i < l->count; i++) {
		struct djp_marker_info *m = &l->v[i];
		GElf_Shdr sh;
		Elf_Scn *scn = r->site_scn ? elf_getscn(r->elf, r->site_scn[i]) : section_at(r, m->site, m->site_len, &sh);
		if (scn && r->site_scn && (!gelf_getshdr(scn, &sh) || m->site > sh.sh_size || sh.sh_size - m->site < m->site_len))
			scn = NULL;
		if (!scn || !(sh.sh_flags & SHF_EXECINSTR) || sh.sh_type != SHT_PROGBITS)
			return rd_err(r, -EINVAL, "marker %s: site 0x%" PRIx64 " is not in an executable section",
				      m->name, m->site);
		if (m->from_sdt)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		uint64_t off = m->site - sh.sh_addr;
		if (!d || !d->d_buf || d->d_size < off + sizeof(nop6) ||
		    memcmp((const char *)d->d_buf + off, nop6, sizeof(nop6)))
			return rd_err(r, -EINVAL, "marker %s: no 6-byte NOP at site 0x%" PRIx64, m->name, m->site);
	}
	return 0;
}

/* The compile unit that holds addr.  dwarf_addrdie() needs .debug_aranges,
 * which clang does not emit by default; then ask each unit's ranges. */
static bool cu_at(Dwarf *dw, uint64_t addr, Dwarf_Die *cu)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (dwarf_addrdie(dw, addr, cu))
		return true;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(dw, off + hsize, cu) && dwarf_haspc(cu, addr) > 0)
			return true;
		off = next;
	}
	return false;
}

/* Open `path` into d when it is an ELF file with the build-id (id, n); d
 * keeps the object's own name for its messages. */
static bool open_debug_candidate(void *ctx, const char *path, const void *id, size_t n)
{
	struct reader *d = ctx;
	const char *name = d->path;
	const void *id2;
	d->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (d->fd < 0)
		return false;
	d->elf = elf_begin(d->fd, ELF_C_READ_MMAP, NULL);
	if (d->elf && elf_kind(d->elf) == ELF_K_ELF && gelf_getclass(d->elf) == ELFCLASS64 &&
	    !elf_getshdrstrndx(d->elf, &d->shstrndx) && djp_elf_build_id(d->elf, &id2) == n && !memcmp(id, id2, n)) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(d->elf, scn))) {
			GElf_Shdr sh;
			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
				d->symtab = scn;
		}
		if (!load_symbols(d))
			return true;
	}
	if (d->elf)
		elf_end(d->elf);
	close(d->fd);
	free(d->syms);
	free(d->byname);
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->path = name;
	return false;
}

/* The separate debug file of r, into d (lib/elf_debug.c). */
static bool open_debug_file(struct reader *r, struct reader *d)
{
	d->path = r->path;
	return djp_elf_debug_file(r->elf, r->shstrndx, r->path, open_debug_candidate, d);
}

static void drop_debug(Dwarf *dw, Dwarf *dw2, struct reader *dbg)
{
	if (dw)
		dwarf_end(dw);
	if (dw2)
		dwarf_end(dw2);
	if (dbg->elf)
		elf_end(dbg->elf);
	if (dbg->fd >= 0)
		close(dbg->fd);
	free(dbg->syms);
	free(dbg->byname);
}

/* The start of the function around addr from the call-frame information,
 * or 0. */
static uint64_t function_start(Dwarf_CFI *cfi, uint64_t addr)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr start, end;
	uint64_t ret = 0;
	if (cfi && dwarf_cfi_addrframe(cfi, addr, &frame) == 0 && dwarf_frame_info(frame, &start, &end, NULL) >= 0)
		ret = start;
	free(frame);
	return ret;
}

/* Function names and source positions; a file without them is not an error. */
static int add_debug_info(struct reader *r, struct djp_marker_list *l, unsigned flags)
{
	struct reader dbg = { .fd = -1 };
	bool have_dbg = false, looked = false;
	Dwarf *dw, *dw2 = NULL;
	Dwarf_CFI *cfi = NULL;
	char start[32];

	if (flags & DJP_READ_NO_DWARF)
		return 0;
	if (r->site_scn) {
		/* the symbols of the site's own section (see the top) */
		for (size_t i = 0; i < l->count; i++) {
			const char *fn = function_at(r, l->v[i].site, r->site_scn[i]);
			if (fn && !(l->v[i].function = djp_marker_list_strdup(l, fn, strlen(fn))))
				return rd_err(r, -ENOMEM, "out of memory");
		}
		return 0;
	}
	dw = dwarf_begin_elf(r->elf, DWARF_C_READ, NULL);
	for (size_t i = 0; i < l->count; i++) {
		struct djp_marker_info *m = &l->v[i];
		const char *fn = function_at(r, m->site, 0), *file = NULL;
		Dwarf_Die cu, *scopes = NULL;
		Dwarf *cu_dw = dw;
		int line = 0;

		if (!looked && (!fn || !dw)) {
			looked = true;
			if ((have_dbg = open_debug_file(r, &dbg)))
				dw2 = dwarf_begin_elf(dbg.elf, DWARF_C_READ, NULL);
		}
		if (!fn && have_dbg)
			fn = function_at(&dbg, m->site, 0);
		if (!(dw && cu_at(dw, m->site, &cu)))
			cu_dw = dw2 && cu_at(dw2, m->site, &cu) ? dw2 : NULL;
		if (cu_dw) {
			Dwarf_Line *ln = dwarf_getsrc_die(&cu, m->site);
			if (ln && dwarf_lineno(ln, &line) == 0)
				file = dwarf_linesrc(ln, NULL, NULL);
			if (!fn) {
				int n = dwarf_getscopes(&cu, m->site, &scopes);
				for (int k = 0; k < n && !fn; k++)
					if (dwarf_tag(&scopes[k]) == DW_TAG_subprogram)
						fn = dwarf_diename(&scopes[k]);
				free(scopes);
			}
		}
		if (!fn) {
			uint64_t at;
			if (!cfi)
				cfi = dwarf_getcfi_elf(r->elf);
			if ((at = function_start(cfi, m->site))) {
				snprintf(start, sizeof(start), "0x%" PRIx64, at);
				fn = start;
			}
		}
		if (fn && !(m->function = djp_marker_list_strdup(l, fn, strlen(fn))))
			goto nomem;
		if (file) {
			if (!(m->file = djp_marker_list_strdup(l, file, strlen(file))))
				goto nomem;
			m->line = line > 0 ? (unsigned)line : 0;
		}
	}
	drop_debug(dw, dw2, &dbg);
	return 0;
nomem:
	drop_debug(dw, dw2, &dbg);
	return rd_err(r, -ENOMEM, "out of memory");
}

/* %rsp mod 16 at each site where the CFI says (see the top of the file). */
static void add_stack_alignment(struct reader *r, struct djp_marker_list *l)
{
	Dwarf_CFI *cfi = dwarf_getcfi_elf(r->elf);
	if (!cfi)
		return;
	for (size_t i = 0; i < l->count; i++) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Op *ops;
		size_t nops;
		/* libdw gives a register rule as DW_OP_bregx reg, offset */
		if (dwarf_cfi_addrframe(cfi, l->v[i].site, &frame) == 0 && dwarf_frame_cfa(frame, &ops, &nops) == 0 &&
		    nops == 1 && ops[0].atom == DW_OP_bregx && ops[0].number == 7) /* DWARF register 7: %rsp */
			l->v[i].sp_align = (int8_t)((uint64_t)-(int64_t)ops[0].number2 & 15);
		free(frame);
	}
	dwarf_cfi_end(cfi);
}

static Elf_Data *section_data(struct reader *r, Elf_Scn *scn, const char *name)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d)
		rd_err(r, -EINVAL, "cannot read section %s: %s", name, elf_errmsg(-1));
	else if (!d->d_buf && d->d_size) {
		rd_err(r, -ENOEXEC, "bad section %s: no bytes in the file", name);
		d = NULL;
	}
	return d;
}

/* Open, check the header and find the sections; returns 0 or -errno. */
static int open_elf(struct reader *r, int fd)
{
	struct stat st;
	GElf_Ehdr eh;
	size_t shnum;

	if (fstat(fd, &st))
		return rd_err(r, -errno, "%s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return rd_err(r, -EISDIR, "is a directory");
	if (!S_ISREG(st.st_mode))
		return rd_err(r, -EINVAL, "not a regular file");
	r->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!r->elf || elf_kind(r->elf) != ELF_K_ELF)
		return rd_err(r, -ENOEXEC, "not an ELF file");
	if (gelf_getclass(r->elf) != ELFCLASS64)
		return rd_err(r, -ENOEXEC, "not a 64-bit ELF file (32-bit objects are not supported)");
	if (!gelf_getehdr(r->elf, &eh))
		return rd_err(r, -ENOEXEC, "truncated ELF file (incomplete ELF header)");
	if (eh.e_machine != ARCH_ELF_MACHINE)
		return rd_err(r, -ENOEXEC, "not an x86-64 ELF file (machine %u)", eh.e_machine);
	r->rel = eh.e_type == ET_REL;
	if (eh.e_shoff > (uint64_t)st.st_size ||
	    (uint64_t)eh.e_shnum * eh.e_shentsize > (uint64_t)st.st_size - eh.e_shoff)
		return rd_err(r, -ENOEXEC, "truncated ELF file (section headers past the end of the file)");
	if (eh.e_phoff > (uint64_t)st.st_size ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > (uint64_t)st.st_size - eh.e_phoff)
		return rd_err(r, -ENOEXEC, "truncated ELF file (program headers past the end of the file)");
	if (elf_getshdrnum(r->elf, &shnum) || elf_getshdrstrndx(r->elf, &r->shstrndx))
		return rd_err(r, -ENOEXEC, "corrupt ELF file: %s", elf_errmsg(-1));

	Elf_Scn *scn = NULL, *dynsym = NULL;
	while ((scn = elf_nextscn(r->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return rd_err(r, -ENOEXEC, "corrupt ELF file: %s", elf_errmsg(-1));
		if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > (uint64_t)st.st_size ||
						 sh.sh_size > (uint64_t)st.st_size - sh.sh_offset))
			return rd_err(r, -ENOEXEC, "truncated ELF file (section %zu past the end of the file)",
				      elf_ndxscn(scn));
		const char *name = elf_strptr(r->elf, r->shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".markers")) {
			/* libelf gives a SHT_NOBITS section no buffer but its
			 * header's size: nothing to read records from. */
			if (sh.sh_type != SHT_PROGBITS)
				return rd_err(r, -ENOEXEC, "bad .markers section: type %u (%s), not SHT_PROGBITS",
					      sh.sh_type, sh.sh_type == SHT_NOBITS ? "SHT_NOBITS, no bytes in the file" : "unknown");
			r->markers = scn;
			r->nmarkers_scn++;
		}
		else if (!strcmp(name, ".note.stapsdt") && sh.sh_type == SHT_NOTE)
			r->notes = scn;
		else if (!strcmp(name, ".stapsdt.base"))
			r->sdt_base = scn;
		else if (sh.sh_type == SHT_SYMTAB)
			r->symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	if (!r->symtab)
		r->symtab = dynsym;
	if (r->rel && r->nmarkers_scn > 1)
		return rd_err(r, -ENOTSUP, "%u .markers sections (COMDAT groups): a relocatable object with more than one "
			      "is not supported", r->nmarkers_scn);
	if (r->rel && r->markers) {
		/* the relocations that apply to .markers */
		scn = NULL;
		while ((scn = elf_nextscn(r->elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || sh.sh_info != elf_ndxscn(r->markers))
				continue;
			if (sh.sh_type == SHT_REL)
				return rd_err(r, -ENOEXEC, "bad relocations of .markers: SHT_REL, not SHT_RELA");
			if (sh.sh_type == SHT_RELA)
				r->markers_rela = scn;
		}
	}
	return 0;
}

struct site_rel {
	uint64_t offset; /* of the site field in .markers */
	uint64_t value;	 /* S + A: the site's offset in its section */
	size_t shndx;
};

static int by_offset(const void *a, const void *b)
{
	const struct site_rel *x = a, *y = b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * ET_REL: apply the relocations of .markers to a copy of its bytes (d), as
 * a linker placing every section at 0 would (see the top of the file), and
 * return them sorted by offset in *rels, *nrels.  Only R_X86_64_PC64 against
 * a symbol defined in a section is a site; anything else is refused.
 */
static int relocate_markers(struct reader *r, const Elf_Data *d, unsigned char *copy, struct site_rel **rels,
			    size_t *nrels)
{
	GElf_Shdr sh, symsh;
	Elf_Data *rd, *sd;
	Elf_Scn *symscn;
	size_t n;

	*rels = NULL;
	*nrels = 0;
	if (!r->markers_rela)
		return 0; /* no site anywhere: the parser finds none, or says so */
	if (!gelf_getshdr(r->markers_rela, &sh) || !sh.sh_entsize || !(rd = elf_getdata(r->markers_rela, NULL)) ||
	    !(symscn = elf_getscn(r->elf, sh.sh_link)) || !gelf_getshdr(symscn, &symsh) ||
	    !(sd = elf_getdata(symscn, NULL)))
		return rd_err(r, -ENOEXEC, "cannot read the relocations of .markers: %s", elf_errmsg(-1));
	n = sh.sh_size / sh.sh_entsize;
	if (!(*rels = calloc(n ? n : 1, sizeof(**rels))))
		return rd_err(r, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		GElf_Rela ra;
		GElf_Sym sym;
		uint64_t v;
		if (!gelf_getrela(rd, (int)i, &ra))
			return rd_err(r, -ENOEXEC, "bad relocation %zu of .markers: %s", i, elf_errmsg(-1));
		if (GELF_R_TYPE(ra.r_info) != R_X86_64_PC64)
			return rd_err(r, -ENOEXEC, "relocation %zu of .markers has type %u, not R_X86_64_PC64", i,
				      (unsigned)GELF_R_TYPE(ra.r_info));
		if (d->d_size < 8 || ra.r_offset > d->d_size - 8)
			return rd_err(r, -ENOEXEC, "relocation %zu of .markers is past the end of the section", i);
		if (!gelf_getsym(sd, (int)GELF_R_SYM(ra.r_info), &sym) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= SHN_LORESERVE)
			return rd_err(r, -ENOEXEC, "relocation %zu of .markers is against no section's symbol", i);
		v = sym.st_value + (uint64_t)ra.r_addend;
		(*rels)[i] = (struct site_rel){ ra.r_offset, v, sym.st_shndx };
		v -= ra.r_offset; /* S + A - P, P the field's own offset */
		memcpy(copy + ra.r_offset, &v, sizeof(v));
	}
	qsort(*rels, n, sizeof(**rels), by_offset);
	*nrels = n;
	return 0;
}

/* ET_REL: parse the relocated copy; marker i is the i-th relocation's site
 * (checked), in its section. */
static int read_rel_markers(struct reader *r, const Elf_Data *d, struct djp_marker_list **out)
{
	struct djp_marker_list *l = NULL;
	struct site_rel *rels = NULL;
	unsigned char *copy = malloc(d->d_size ? d->d_size : 1);
	size_t nrels = 0;
	int ret;

	if (!copy)
		return rd_err(r, -ENOMEM, "out of memory");
	memcpy(copy, d->d_buf, d->d_size);
	if (!(ret = relocate_markers(r, d, copy, &rels, &nrels)))
		ret = djp_markers_parse_section_sym(copy, d->d_size, 0, r->path, lookup_symbol, r, &l, r->err, r->errsz);
	free(copy);
	if (!ret && l->count != nrels)
		ret = rd_err(r, -ENOEXEC, ".markers has %zu records but %zu site relocations", l->count, nrels);
	if (!ret && !(r->site_scn = calloc(nrels ? nrels : 1, sizeof(*r->site_scn))))
		ret = rd_err(r, -ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < l->count; i++) {
		struct djp_marker_info *m = &l->v[i];
		Elf_Scn *scn = elf_getscn(r->elf, rels[i].shndx);
		GElf_Shdr sh;
		const char *name = scn && gelf_getshdr(scn, &sh) ? elf_strptr(r->elf, r->shstrndx, sh.sh_name) : NULL;
		if (m->site != rels[i].value)
			ret = rd_err(r, -ENOEXEC, "marker %s: its site field is not the one relocation %zu patches",
				     m->name, i);
		else if (!(m->section = djp_marker_list_strdup(l, name ? name : "?", strlen(name ? name : "?"))))
			ret = rd_err(r, -ENOMEM, "out of memory");
		r->site_scn[i] = rels[i].shndx;
	}
	free(rels);
	if (ret) {
		djp_marker_list_free(l);
		return ret;
	}
	*out = l;
	return 0;
}

static int keep_segments(struct reader *r, struct djp_marker_list *l)
{
	size_t phnum;
	if (elf_getphdrnum(r->elf, &phnum))
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(r->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    djp_marker_list_add_segment(l, ph.p_vaddr, ph.p_offset, ph.p_filesz))
			return rd_err(r, -ENOMEM, "out of memory");
	}
	return 0;
}

/* The object's SDT notes, as its markers. */
static int read_sdt_notes(struct reader *r, struct djp_marker_list **l)
{
	GElf_Shdr sh;
	Elf_Data *d;
	int ret;

	if (!(d = section_data(r, r->notes, ".note.stapsdt")))
		return -EINVAL;
	ret = djp_markers_parse_sdt_notes_sym(d->d_buf, d->d_size, r->path, lookup_symbol, r, l, r->err, r->errsz);
	/* A prelinked file moved its text after the notes were written:
	 * .stapsdt.base tells by how much. */
	if (!ret && r->sdt_base && gelf_getshdr(r->sdt_base, &sh))
		for (size_t i = 0; i < (*l)->count; i++)
			if ((*l)->v[i].sdt_base)
				(*l)->v[i].site += sh.sh_addr - (*l)->v[i].sdt_base;
	return ret;
}

static int read_markers(struct reader *r, unsigned flags, struct djp_marker_list **out)
{
	struct djp_marker_list *l = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Data *d;
	int ret;

	if ((ret = load_symbols(r)))
		return ret;
	if (r->markers) {
		if (!gelf_getshdr(r->markers, &sh) || !(d = section_data(r, r->markers, ".markers")))
			return -EINVAL;
		if (r->rel)
			ret = read_rel_markers(r, d, &l);
		else
			ret = djp_markers_parse_section_sym(d->d_buf, d->d_size, sh.sh_addr, r->path, lookup_symbol, r, &l,
						    r->err, r->errsz);
		/* Only the library's own markers (kernel/threads.c), linked
		 * statically into a program whose probes are SDT notes: the
		 * notes describe it, as they did before those came (such a
		 * program has no thread events). */
		if (!ret && !r->rel && r->notes && !(flags & DJP_READ_NO_SDT) && l->count &&
		    !djp_marker_list_programs(l)) {
			djp_marker_list_free(l);
			l = NULL;
			ret = read_sdt_notes(r, &l);
		}
	} else if (r->notes && !(flags & DJP_READ_NO_SDT)) {
		ret = read_sdt_notes(r, &l);
	} else {
		ret = djp_markers_parse_section(NULL, 0, 0, r->path, &l, r->err, r->errsz);
	}
	if (ret)
		return ret;
	if (!gelf_getehdr(r->elf, &eh)) {
		djp_marker_list_free(l);
		return rd_err(r, -ENOEXEC, "corrupt ELF file: %s", elf_errmsg(-1));
	}
	l->is_dyn = eh.e_type == ET_DYN;
	l->is_rel = r->rel;
	if ((ret = check_sites(r, l)) || (ret = keep_segments(r, l)) || (ret = add_debug_info(r, l, flags))) {
		djp_marker_list_free(l);
		return ret;
	}
	if (!r->rel)
		add_stack_alignment(r, l);
	*out = l;
	return 0;
}

int djp_markers_read_file(const char *path, unsigned flags, struct djp_marker_list **out, char *err, size_t errsz)
{
	struct reader r = { .path = path, .err = err, .errsz = errsz };
	int fd, ret;

	*out = NULL;
	if (err && errsz)
		err[0] = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return rd_err(&r, -ENOSYS, "libelf is too old");
	/* Non-blocking: a FIFO would block the open until a writer came;
	 * open_elf refuses anything but a regular file right after. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return rd_err(&r, -errno, "%s", strerror(errno));
	ret = open_elf(&r, fd);
	if (!ret)
		ret = read_markers(&r, flags, out);
	free(r.syms);
	free(r.byname);
	free(r.site_scn);
	if (r.elf)
		elf_end(r.elf);
	close(fd);
	return ret;
}
