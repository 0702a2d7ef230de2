/*
 * An object's call-frame information, read ahead of time into the table
 * the stack walker looks rows up in at a probe hit.
 *
 * Why a table.  ubacktrace() at a hit needs the caller of every frame,
 * and the hit may be anywhere: in a SIGTRAP handler, in a trampoline
 * called from inside malloc.  There nothing may allocate or take a lock,
 * and libdw does both (and interprets DWARF bytecode besides).  So, as the
 * kernel's ORC unwinder does with objtool's output, the interpretation is
 * done once, at arm time, and the hit does a binary search and a few
 * loads.  On x86-64 three columns are all a walk needs: the CFA (the
 * caller's %rsp: our %rsp or %rbp plus an offset), the return address
 * (always at CFA - 8) and the caller's %rbp (unchanged, or saved at
 * CFA + offset), since %rbp is the only other register a CFA rule uses.
 * The other callee-saved registers are not followed: no CFA depends on
 * them in code a compiler writes.
 *
 * Where from.  The object's .eh_frame, which is what the running code
 * unwinds with, and its .debug_frame too when it has one (code built
 * without unwind tables keeps its FDEs there while the C runtime's start
 * files bring an .eh_frame of their own); with neither, the .debug_frame
 * of its separate debug file (lib/elf_debug.h).  Where both describe an
 * address, .eh_frame wins.
 *
 * How it is read.  libdw interprets the CFI: dwarf_cfi_addrframe() gives
 * the state at an address and the range [start, end) of the row that
 * holds it, dwarf_frame_cfa() and dwarf_frame_register() its rules.  The
 * FDEs are listed with dwarf_next_cfi(); each one's pc range is decoded
 * here (its CIE's 'R' pointer encoding; absolute in .debug_frame), and its
 * rows are visited by stepping from the start of one to the end of the
 * row just read.  Rows that agree on the three columns are merged (a row
 * that only notes where %rbx went, say), the end of an FDE that
 * no other FDE follows gets an "unknown" row (the gap between functions
 * stays unknown), and the last row closes the table.  FDEs outside the
 * object's executable segments (the linker's leftovers of discarded code,
 * at address 0) are skipped, and an FDE that overlaps the one before is
 * cut to begin where that one ends.
 *
 * What a row may say: CFA = %rsp + off or %rbp + off; anything else (an
 * expression: PLT stubs, stack realignment through %r10, the signal
 * trampoline; a register other than those two) is unknown; a return
 * address that is undefined marks the outermost frame (_start, a thread's
 * first function); one whose CIE says 'S' is the signal trampoline, which
 * the walker recognises and reads itself.
 *
 * The lookup.  Rows are sorted offsets from the lowest FDE's address
 * (uint32: code up to 4 GB) and, apart, their rules (8 bytes), and an
 * index with one entry per 256 bytes of code says which row holds the
 * block's first byte, as the kernel's ORC lookup table does: a search
 * then halves a handful of rows, not the whole table, each halving a
 * likely branch miss.
 *
 * Cost, measured on this 2-core machine (elfutils 0.188): libc.so.6 (3,713
 * FDEs, about 25,000 CFI rows, 28,273 rows kept with the 3,400 gaps between
 * functions) builds in 9 to 12 ms, its table 360 KB; python3.11 (10,221
 * FDEs, 64,575 rows kept) in 22 to 26 ms.  dwarf_cfi_addrframe() runs an
 * FDE's instructions from its beginning each time, so a function of k
 * rows costs k^2 instruction steps, but k is small (tens) in compiled
 * code: libdw's per-row calls are fast enough, and no CFI interpreter of
 * our own is needed.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/x86/arch.h"
#include "lib/errline.h"
#include "lib/elf_debug.h"
#include "lib/unwind_table.h"

/* The DWARF register numbers the table keeps rules for: the arch's. */
#define DW_RBP ARCH_DWARF_FP
#define DW_RSP ARCH_DWARF_SP
#define DW_RA ARCH_DWARF_RA

/* One ELF file open for reading. */
struct efile {
	int fd;
	Elf *elf;
	Dwarf *dw; /* only when its .debug_frame is read */
	size_t shstrndx;
};

/* A CIE's pointer encoding and signal flag, by section offset. */
struct cie_info {
	Dwarf_Off off;
	int enc; /* DW_EH_PE_* of FDE addresses, or -1: unreadable */
	bool signal;
};

/* A section the call-frame information is read from. */
struct cfi_src {
	struct efile *f;
	Dwarf_CFI *cfi;
	Elf_Data *data;	   /* the section's bytes, for dwarf_next_cfi */
	uint64_t sec_addr; /* its link-time address (pc-relative pointers) */
	bool eh;	   /* .eh_frame (else .debug_frame) */
	unsigned char ident[EI_NIDENT];
	struct cie_info *cies; /* the CIEs seen, by offset */
	size_t ncies, cies_cap;
};

/* An FDE's range, and the section it is in (an index into the sources). */
struct fde {
	uint64_t lo, hi;
	unsigned src;
};

/* Link-time ranges of the executable PT_LOAD segments. */
struct segs {
	struct fde v[16];
	size_t n;
};

/* What the builder accumulates. */
struct build {
	uint64_t *start; /* link-time addresses */
	struct djp_uw_row *row;
	size_t n, cap;
};


/* Close what efile_open opened, whatever got that far. */
static void efile_close(struct efile *f)
{
	if (f->dw)
		dwarf_end(f->dw);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	*f = (struct efile){ .fd = -1 };
}

/* Open an x86-64 ELF file of ours to read; false when it is not one. */
static bool efile_open(struct efile *f, const char *path)
{
	*f = (struct efile){ .fd = -1 };
	if (djp_elf_open(path, &f->fd, &f->elf, NULL, NULL, 0))
		return false;
	if (elf_getshdrstrndx(f->elf, &f->shstrndx)) {
		efile_close(f);
		return false;
	}
	return true;
}

/* The section called `name` with contents in the file, or NULL. */
static Elf_Scn *section_named(const struct efile *f, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(f->elf, scn))) {
		const char *n;
		if (gelf_getshdr(scn, sh) && sh->sh_type == SHT_PROGBITS && sh->sh_size &&
		    (n = elf_strptr(f->elf, f->shstrndx, sh->sh_name)) && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* Open a separate debug file candidate, kept when its build-id matches. */
static bool try_debug_file(void *ctx, const char *cand, const void *id, size_t n)
{
	struct efile *d = ctx;
	const void *id2;
	if (efile_open(d, cand) && djp_elf_build_id(d->elf, &id2) == n && !memcmp(id, id2, n))
		return true;
	efile_close(d);
	return false;
}

/* The section's identity for dwarf_next_cfi; false when unreadable. */
static bool src_ident(struct cfi_src *src)
{
	const char *ident = elf_getident(src->f->elf, NULL);
	if (!ident)
		return false;
	memcpy(src->ident, ident, EI_NIDENT);
	return true;
}

/* The .eh_frame of `f`; false when it has none. */
static bool use_eh_frame(struct efile *f, struct cfi_src *src)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_named(f, ".eh_frame", &sh);

	*src = (struct cfi_src){ .f = f, .eh = true };
	if (!scn || !(src->data = elf_getdata(scn, NULL)) || !src->data->d_buf || !src_ident(src) ||
	    !(src->cfi = dwarf_getcfi_elf(f->elf)))
		return false;
	src->sec_addr = sh.sh_addr;
	return true;
}

/* The .debug_frame of `f`, read through libdw (which also decompresses
 * it); false when it has none.  The section is looked for first: a big
 * debug file without one is not opened as DWARF for nothing. */
static bool use_debug_frame(struct efile *f, struct cfi_src *src)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_named(f, ".debug_frame", &sh);

	*src = (struct cfi_src){ .f = f, .eh = false };
	if (!scn || !src_ident(src))
		return false;
	if (!(f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL)) || !(src->cfi = dwarf_getcfi(f->dw)) ||
	    !(src->data = elf_getdata(scn, NULL)) || !src->data->d_buf) {
		if (f->dw)
			dwarf_end(f->dw);
		f->dw = NULL;
		src->cfi = NULL;
		return false;
	}
	src->sec_addr = sh.sh_addr;
	return true;
}

/* The CFI to read, into src[0..2): the object's .eh_frame and its
 * .debug_frame, both when it has both (code built without unwind tables
 * has its FDEs in .debug_frame, the C runtime's start files theirs in
 * .eh_frame); with neither, its separate debug file's .debug_frame
 * (opened into dbg).  Returns how many. */
static unsigned find_cfi(struct efile *f, struct efile *dbg, const char *path, struct cfi_src *src)
{
	unsigned n = 0;

	n += use_eh_frame(f, &src[n]);
	n += use_debug_frame(f, &src[n]);
	if (!n && djp_elf_debug_file(f->elf, f->shstrndx, path, try_debug_file, dbg))
		n += use_debug_frame(dbg, &src[n]);
	return n;
}

/* The executable PT_LOAD segments of the object: where FDEs may be. */
static void exec_segments(Elf *elf, struct segs *s)
{
	size_t n;
	s->n = 0;
	if (elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n && s->n < sizeof(s->v) / sizeof(s->v[0]); i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			s->v[s->n++] = (struct fde){ ph.p_vaddr, ph.p_vaddr + ph.p_memsz, 0 };
	}
}

/* Is [lo, hi) code of the object (else a discarded function's FDE)? */
static bool in_segments(const struct segs *s, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < s->n; i++)
		if (lo >= s->v[i].lo && hi <= s->v[i].hi)
			return true;
	return false;
}

/* ---- FDE ranges ---------------------------------------------------------- */

/* Read a DW_EH_PE-encoded value at *pp for a field at link-time address
 * `at`: the forms a compiler or linker writes for FDE addresses (plain
 * or pc-relative); false for anything else. */
static bool read_encoded(int enc, const uint8_t **pp, const uint8_t *end, uint64_t at, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0, size;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		size = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		size = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		size = 2;
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128: {
		uint8_t b;
		do {
			if (p >= end || shift > 63)
				return false;
			b = *p++;
			v |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
		} while (b & 0x80);
		if ((enc & 0x0f) == DW_EH_PE_sleb128 && shift < 64 && (b & 0x40))
			v |= ~0ull << shift;
		size = 0;
		break;
	}
	default:
		return false;
	}
	if (size) {
		if ((size_t)(end - p) < size)
			return false;
		for (unsigned i = 0; i < size; i++)
			v |= (uint64_t)p[i] << (8 * i);
		if ((enc & DW_EH_PE_signed) && size < 8 && (v >> (8 * size - 1)) & 1)
			v |= ~0ull << (8 * size);
		p += size;
	}
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		v += at;
	else if ((enc & 0x70) || (enc & DW_EH_PE_indirect))
		return false;
	*pp = p;
	*out = v;
	return true;
}

/* A CIE's FDE pointer encoding, from its augmentation: -1 when the
 * augmentation is one we cannot skip. */
static int cie_encoding(const Dwarf_CIE *cie, bool eh)
{
	const char *a = cie->augmentation;
	const uint8_t *p = cie->augmentation_data, *end = p + cie->augmentation_data_size;
	uint64_t skip;

	if (!eh || !a[0])
		return DW_EH_PE_absptr;
	if (a[0] != 'z' || !p)
		return -1;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			return p < end ? *p : -1;
		case 'L':
			p++;
			break;
		case 'P':
			if (p >= end)
				return -1;
			{
				int enc = *p++;
				/* an absolute or pc-relative personality pointer only */
				if (!read_encoded(enc & 0x0f, &p, end, 0, &skip))
					return -1;
			}
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return -1;
		}
	}
	return DW_EH_PE_absptr;
}

/* The CIE at section offset `off`: remembered as the entries are listed
 * (they come in offset order), else read now. */
static const struct cie_info *cie_at(struct cfi_src *src, Dwarf_Off off)
{
	size_t lo = 0, hi = src->ncies;
	Dwarf_CFI_Entry e;
	Dwarf_Off next;
	struct cie_info ci;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (src->cies[mid].off == off)
			return &src->cies[mid];
		if (src->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (dwarf_next_cfi(src->ident, src->data, src->eh, off, &next, &e) || !dwarf_cfi_cie_p(&e))
		return NULL;
	ci = (struct cie_info){ off, cie_encoding(&e.cie, src->eh), strchr(e.cie.augmentation, 'S') != NULL };
	if (src->ncies == src->cies_cap) {
		size_t cap = src->cies_cap ? 2 * src->cies_cap : 64;
		struct cie_info *v = realloc(src->cies, cap * sizeof(*v));
		if (!v)
			return NULL;
		src->cies = v;
		src->cies_cap = cap;
	}
	memmove(&src->cies[lo + 1], &src->cies[lo], (src->ncies - lo) * sizeof(*src->cies));
	src->cies[lo] = ci;
	src->ncies++;
	return &src->cies[lo];
}

/* The pc range of one FDE; false when it cannot be read. */
static bool fde_range(struct cfi_src *src, const Dwarf_FDE *fde, struct fde *out)
{
	const struct cie_info *ci = cie_at(src, fde->CIE_pointer);
	const uint8_t *p = fde->start, *base = src->data->d_buf;
	uint64_t lo, len;

	if (!ci || ci->enc < 0 || ci->enc == DW_EH_PE_omit)
		return false;
	if (!read_encoded(ci->enc, &p, fde->end, src->sec_addr + (uint64_t)(p - base), &lo) ||
	    !read_encoded(ci->enc & 0x0f, &p, fde->end, 0, &len))
		return false;
	*out = (struct fde){ lo, lo + len, 0 };
	return len && out->hi > lo;
}

/* FDEs by start address, the rows being emitted in address order; at
 * one address, .eh_frame's first (what the running code unwinds with). */
static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->src > y->src) - (x->src < y->src);
}

/* A growing vector of FDEs. */
struct fdes {
	struct fde *v;
	size_t n, cap;
};

/* The FDEs of source `k` inside the executable segments, appended to fv:
 * 0 or -ENOMEM. */
static int list_fdes(struct cfi_src *src, unsigned k, const struct segs *segs, struct fdes *fv)
{
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	struct fde r;
	int ret;

	for (;;) {
		next = (Dwarf_Off)-1;
		if ((ret = dwarf_next_cfi(src->ident, src->data, src->eh, off, &next, &e)) == 1)
			break;
		if (ret == 0 && dwarf_cfi_cie_p(&e)) {
			cie_at(src, off);
		} else if (ret == 0 && fde_range(src, &e.fde, &r) && in_segments(segs, r.lo, r.hi)) {
			if (fv->n == fv->cap) {
				size_t cap = fv->cap ? 2 * fv->cap : 1024;
				struct fde *nv = realloc(fv->v, cap * sizeof(*nv));
				if (!nv)
					return -ENOMEM;
				fv->v = nv;
				fv->cap = cap;
			}
			r.src = k;
			fv->v[fv->n++] = r;
		}
		if (next == (Dwarf_Off)-1 || next <= off)
			break; /* an entry we cannot skip ends the list */
		off = next;
	}
	return 0;
}

/* ---- rows ---------------------------------------------------------------- */

/* An offset rule's offset: ops is "CFA" or "CFA + n" (a location, not a
 * value); false for any other expression. */
static bool cfa_relative(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

/* The three columns of the row of state `fr`. */
static struct djp_uw_row classify(Dwarf_Frame *fr, int ra_reg, bool signal)
{
	struct djp_uw_row r = { .cfa = DJP_UW_UNKNOWN, .rbp = DJP_UW_RBP_LOST };
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t off;

	if (signal) {
		r.cfa = DJP_UW_SIGNAL;
		return r;
	}
	if (ra_reg != DW_RA || dwarf_frame_register(fr, ra_reg, mem, &ops, &nops) < 0)
		return r;
	if (!nops) {
		if (ops) /* undefined: nothing called this frame */
			r.cfa = DJP_UW_END;
		return r;
	}
	if (!cfa_relative(ops, nops, &off) || off != -8)
		return r;
	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != DW_RSP && ops[0].number != DW_RBP) || (int64_t)ops[0].number2 != (int32_t)ops[0].number2)
		return r;
	r.cfa = ops[0].number == DW_RSP ? DJP_UW_CFA_RSP : DJP_UW_CFA_RBP;
	r.cfa_off = (int32_t)ops[0].number2;
	if (dwarf_frame_register(fr, DW_RBP, mem, &ops, &nops) < 0)
		return r;
	if (!nops && !ops)
		r.rbp = DJP_UW_RBP_SAME;
	else if (nops && cfa_relative(ops, nops, &off) && off == (int16_t)off) {
		r.rbp = DJP_UW_RBP_SAVED;
		r.rbp_off = (int16_t)off;
	}
	return r;
}

/* Do two rows say the same to the walker (then one is enough)? */
static bool row_eq(const struct djp_uw_row *a, const struct djp_uw_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->rbp == b->rbp && a->rbp_off == b->rbp_off;
}

/* Append the row for [addr, ...): merged with the one before when it says
 * the same, replacing it when that one was empty. */
static int emit(struct build *b, uint64_t addr, struct djp_uw_row r)
{
	if (b->n && row_eq(&b->row[b->n - 1], &r))
		return 0;
	if (b->n && b->start[b->n - 1] == addr) {
		b->row[b->n - 1] = r;
		if (b->n > 1 && row_eq(&b->row[b->n - 2], &r))
			b->n--;
		return 0;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		uint64_t *s = realloc(b->start, cap * sizeof(*s));
		struct djp_uw_row *v;
		if (!s)
			return -ENOMEM;
		b->start = s;
		if (!(v = realloc(b->row, cap * sizeof(*v))))
			return -ENOMEM;
		b->row = v;
		b->cap = cap;
	}
	b->start[b->n] = addr;
	b->row[b->n++] = r;
	return 0;
}

/* Between functions, after the last, and where libdw cannot say. */
static const struct djp_uw_row unknown_row = { .cfa = DJP_UW_UNKNOWN, .rbp = DJP_UW_RBP_LOST };

/* The rows of one FDE, [lo, hi), row by row. */
static int fde_rows(struct build *b, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi)
{
	uint64_t addr = lo;
	int ret = 0;

	while (addr < hi && !ret) {
		Dwarf_Frame *fr = NULL;
		Dwarf_Addr s, e;
		bool signal = false;
		int ra;
		if (dwarf_cfi_addrframe(cfi, addr, &fr) || (ra = dwarf_frame_info(fr, &s, &e, &signal)) < 0) {
			free(fr);
			return emit(b, addr, unknown_row); /* the rest of it too */
		}
		ret = emit(b, addr, classify(fr, ra, signal));
		free(fr);
		addr = e > addr && e < hi ? e : hi;
	}
	return ret;
}

/* The table, in one allocation, from what was gathered: header, rows,
 * starts, lookup index. */
static struct djp_unwind_table *pack(const struct build *b, size_t nfdes)
{
	struct djp_unwind_table *t;
	struct djp_uw_row *rows;
	uint32_t *starts, *block, nblocks, r = 0;
	uint64_t span = b->n ? b->start[b->n - 1] - b->start[0] : 0;
	size_t size;

	nblocks = (uint32_t)((span + (1u << DJP_UW_BLOCK_SHIFT) - 1) >> DJP_UW_BLOCK_SHIFT);
	size = sizeof(*t) + b->n * (sizeof(*rows) + sizeof(*starts)) + nblocks * sizeof(*block);
	if (!(t = malloc(size)))
		return NULL;
	rows = (struct djp_uw_row *)(t + 1);
	starts = (uint32_t *)(rows + b->n);
	block = starts + b->n;
	t->base = b->n ? b->start[0] : 0;
	t->n = (uint32_t)b->n;
	t->nfdes = (uint32_t)nfdes;
	for (size_t i = 0; i < b->n; i++) {
		starts[i] = (uint32_t)(b->start[i] - t->base);
		rows[i] = b->row[i];
	}
	for (uint32_t k = 0; k < nblocks; k++) {
		uint64_t off = (uint64_t)k << DJP_UW_BLOCK_SHIFT;
		while (r + 1 < t->n && starts[r + 1] <= off)
			r++;
		block[k] = r;
	}
	t->start = starts;
	t->row = rows;
	t->block = block;
	t->nblocks = nblocks;
	return t;
}

/* Every FDE's rows, gaps and the closing row. */
static int gather(struct build *b, const struct cfi_src *src, const struct fde *v, size_t n)
{
	uint64_t end = 0;
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		uint64_t lo = v[i].lo > end ? v[i].lo : end;
		if (lo >= v[i].hi)
			continue; /* inside the one before */
		if (end && lo > end)
			ret = emit(b, end, unknown_row);
		if (!ret)
			ret = fde_rows(b, src[v[i].src].cfi, lo, v[i].hi);
		end = v[i].hi;
	}
	if (!ret && end)
		ret = emit(b, end, unknown_row);
	return ret;
}

int djp_unwind_table_build(const char *path, struct djp_unwind_table **out, char *err, size_t errsz)
{
	struct efile f, dbg = { .fd = -1 };
	struct cfi_src src[2];
	struct build b = { 0 };
	struct fdes fv = { 0 };
	struct segs segs;
	unsigned nsrc = 0;
	int ret = 0;

	*out = NULL;
	if (!efile_open(&f, path))
		return djp_errline(err, errsz, -ENOEXEC, path, "not an x86-64 ELF file we can read");
	exec_segments(f.elf, &segs);
	if (!(nsrc = find_cfi(&f, &dbg, path, src))) {
		ret = djp_errline(err, errsz, -ENODATA, path, "no call-frame information (.eh_frame, .debug_frame)");
		goto out;
	}
	for (unsigned k = 0; k < nsrc && !ret; k++)
		ret = list_fdes(&src[k], k, &segs, &fv);
	if (ret)
		goto nomem;
	qsort(fv.v, fv.n, sizeof(*fv.v), cmp_fde);
	if ((ret = gather(&b, src, fv.v, fv.n)))
		goto nomem;
	if (b.n > UINT32_MAX || (b.n && b.start[b.n - 1] - b.start[0] > UINT32_MAX)) {
		ret = djp_errline(err, errsz, -EFBIG, path, "code larger than 4 GB");
		goto out;
	}
	if (!(*out = pack(&b, fv.n)))
		goto nomem;
	ret = 0;
	goto out;
nomem:
	ret = djp_errline(err, errsz, -ENOMEM, path, "out of memory");
out:
	for (unsigned k = 0; k < nsrc; k++) {
		if (src[k].eh)
			dwarf_cfi_end(src[k].cfi); /* a .debug_frame's goes with its Dwarf */
		free(src[k].cies);
	}
	efile_close(&dbg);
	efile_close(&f);
	free(fv.v);
	free(b.start);
	free(b.row);
	return ret;
}

/* One allocation (pack). */
void djp_unwind_table_free(struct djp_unwind_table *t)
{
	free(t);
}
