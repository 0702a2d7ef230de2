/*
 * The object a function probe's parameters are read from, and the
 * function in it (lib/func_params.c reads the parameters).
 *
 * Finding the function.  The unit that covers the entry address is found
 * with dwarf_addrdie() (.debug_aranges), else by asking each unit for its
 * ranges (clang emits no aranges by default).  The first time a unit is
 * asked for, its DW_TAG_subprogram entries that have code are indexed by
 * entry address (DW_AT_entry_pc or DW_AT_low_pc, else the first of
 * DW_AT_ranges), walking into namespaces, lexical blocks and functions
 * (GNU C nested functions) but not into inlined instances, which are not
 * functions one can call; the index is kept with the open file, so that
 * listing every function of a program walks each unit once.  The object's
 * own DWARF is asked first, then its separate debug file's, found by
 * lib/elf_debug.c, which checks its build-id.
 *
 * The same index answers where a function comes from in the source
 * (djp_params_source): its declaration's file and line, and the lines its
 * code spans in the unit's line table.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/errline.h"
#include "lib/elf_debug.h"
#include "lib/func_params_int.h"

/* ---- the files ---- */

/* Open the object and check that it is a 64-bit x86-64 ELF file: the
 * registers and the calling convention here are that machine's. */
static int open_object(struct djp_params_file *pf, char *err, size_t errsz)
{
	return djp_elf_open(pf->path, &pf->fd, &pf->elf, NULL, err, errsz);
}

/* Keep `cand` as the debug file when it is a regular ELF file with the
 * object's build-id (id, n) and DWARF (lib/elf_debug.c's callback). */
static bool try_debug_file(void *ctx, const char *cand, const void *id, size_t n)
{
	struct djp_params_file *pf = ctx;
	const void *id2;
	Elf *elf;
	Dwarf *dw;
	int fd;

	if (djp_elf_open(cand, &fd, &elf, NULL, NULL, 0))
		return false;
	if (djp_elf_build_id(elf, &id2) == n && !memcmp(id, id2, n) && (dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL))) {
		pf->dbg_fd = fd;
		pf->dbg_elf = elf;
		pf->dbg.dw = dw;
		return true;
	}
	elf_end(elf);
	close(fd);
	return false;
}

/* The separate debug file's DWARF, looked for once, when first needed. */
Dwarf *djp_params_debug_dwarf(struct djp_params_file *pf)
{
	size_t shstrndx;

	if (!pf->dbg_looked) {
		pf->dbg_looked = true;
		if (!elf_getshdrstrndx(pf->elf, &shstrndx))
			djp_elf_debug_file(pf->elf, shstrndx, pf->path, try_debug_file, pf);
	}
	return pf->dbg.dw;
}

/* A DWARF and the unit indexes built on it. */
static void free_src(struct dwarf_src *s)
{
	for (size_t i = 0; i < s->ncus; i++)
		free(s->cus[i].v);
	free(s->cus);
	if (s->dw)
		dwarf_end(s->dw);
}

/* Everything the handle holds, in the reverse order of opening. */
void djp_params_close(struct djp_params_file *pf)
{
	if (!pf)
		return;
	if (pf->eh_frame)
		dwarf_cfi_end(pf->eh_frame);
	free_src(&pf->own);
	free_src(&pf->dbg);
	if (pf->dbg_elf)
		elf_end(pf->dbg_elf);
	if (pf->dbg_fd >= 0)
		close(pf->dbg_fd);
	if (pf->elf)
		elf_end(pf->elf);
	if (pf->fd >= 0)
		close(pf->fd);
	free(pf->path);
	free(pf);
}

/* The object and its DWARF; the debug file only when the object has
 * none, else later, when a function is not in the object's own. */
int djp_params_open(const char *path, struct djp_params_file **out, char *err, size_t errsz)
{
	struct djp_params_file *pf;
	int ret;

	*out = NULL;
	if (err && errsz)
		err[0] = 0;
	if (!(pf = calloc(1, sizeof(*pf))) || !(pf->path = strdup(path))) {
		free(pf);
		return djp_errline(err, errsz, -ENOMEM, path, "out of memory");
	}
	pf->fd = pf->dbg_fd = -1;
	if ((ret = open_object(pf, err, errsz)))
		goto fail;
	pf->own.dw = dwarf_begin_elf(pf->elf, DWARF_C_READ, NULL);
	if (!pf->own.dw && !djp_params_debug_dwarf(pf)) {
		ret = djp_errline(err, errsz, -ENODATA, path, "no debug information");
		goto fail;
	}
	*out = pf;
	return 0;
fail:
	djp_params_close(pf);
	return ret;
}

/* ---- finding the function ---- */

/* The entry address of a subprogram that has code: its entry_pc or
 * low_pc, else the start of its first range (GCC lists a function split
 * into hot and cold parts hot part first). */
static bool entry_of(Dwarf_Die *sub, uint64_t *addr)
{
	Dwarf_Addr a, base, end;

	if (dwarf_hasattr(sub, DW_AT_declaration))
		return false;
	if (dwarf_entrypc(sub, &a) == 0) {
		*addr = a;
		return true;
	}
	if (dwarf_ranges(sub, 0, &base, &a, &end) > 0) {
		*addr = a;
		return true;
	}
	return false;
}

/* Append one function to a unit's index, growing it by doubling. */
static int add_fn(struct cu_index *ci, size_t *cap, uint64_t addr, Dwarf_Off off)
{
	if (ci->n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct fn_entry *v = realloc(ci->v, c * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ci->v = v;
		*cap = c;
	}
	ci->v[ci->n++] = (struct fn_entry){ addr, off };
	return 0;
}

/* Every subprogram with code under parent (see the top of the file). */
static int index_dies(Dwarf_Die *parent, struct cu_index *ci, size_t *cap, unsigned depth)
{
	Dwarf_Die d;
	uint64_t a;

	if (depth > 4 * DJP_DWARF_DEPTH_MAX || dwarf_child(parent, &d) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&d);
		if (tag == DW_TAG_subprogram && entry_of(&d, &a) && add_fn(ci, cap, a, dwarf_dieoffset(&d)))
			return -ENOMEM;
		if ((tag == DW_TAG_subprogram || tag == DW_TAG_namespace || tag == DW_TAG_module ||
		     tag == DW_TAG_lexical_block) &&
		    index_dies(&d, ci, cap, depth + 1))
			return -ENOMEM;
	} while (dwarf_siblingof(&d, &d) == 0);
	return 0;
}

/* By address, then by DIE offset, so that a lookup finds the first of
 * several entries at one address (the earlier DIE) every time. */
static int fn_cmp(const void *a, const void *b)
{
	const struct fn_entry *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The index of the unit cudie, built the first time; NULL: no memory. */
static struct cu_index *unit_index(struct dwarf_src *s, Dwarf_Die *cudie)
{
	Dwarf_Off cu = dwarf_dieoffset(cudie);
	size_t lo = 0, hi = s->ncus, cap = 0;
	struct cu_index ci = { .cu = cu };

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->cus[mid].cu == cu)
			return &s->cus[mid];
		if (s->cus[mid].cu < cu)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->ncus == s->cap) {
		size_t c = s->cap ? 2 * s->cap : 16;
		struct cu_index *v = realloc(s->cus, c * sizeof(*v));
		if (!v)
			return NULL;
		s->cus = v;
		s->cap = c;
	}
	if (index_dies(cudie, &ci, &cap, 0)) {
		free(ci.v);
		return NULL;
	}
	qsort(ci.v, ci.n, sizeof(*ci.v), fn_cmp);
	memmove(&s->cus[lo + 1], &s->cus[lo], (s->ncus - lo) * sizeof(*s->cus));
	s->cus[lo] = ci;
	s->ncus++;
	return &s->cus[lo];
}

/* The subprogram whose entry is addr in one DWARF: 0; -ENODATA when no
 * unit covers addr; -ENOENT; -ENOMEM. */
static int find_in(struct dwarf_src *s, uint64_t addr, Dwarf_Die *sub)
{
	struct cu_index *ci;
	Dwarf_Die cudie;
	size_t lo = 0, hi;

	if (!s->dw || !djp_dwarf_cu_at(s->dw, addr, &cudie))
		return -ENODATA;
	if (!(ci = unit_index(s, &cudie)))
		return -ENOMEM;
	hi = ci->n;
	while (lo < hi) { /* the first entry at or above addr */
		size_t mid = lo + (hi - lo) / 2;
		if (ci->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ci->n && ci->v[lo].addr == addr && dwarf_offdie(s->dw, ci->v[lo].off, sub))
		return 0;
	return -ENOENT;
}

/* The subprogram at addr, in the object's DWARF, else in its debug
 * file's; *src is the DWARF it was found in. */
int djp_params_find(struct djp_params_file *pf, uint64_t addr, Dwarf_Die *sub, struct dwarf_src **src,
			 char *err, size_t errsz)
{
	int ret = find_in(&pf->own, addr, sub);

	*src = &pf->own;
	if (ret == -ENODATA && djp_params_debug_dwarf(pf)) {
		ret = find_in(&pf->dbg, addr, sub);
		*src = &pf->dbg;
	}
	if (ret == -ENODATA)
		return djp_errline(err, errsz, ret, pf->path, "no debug information for the function at 0x%" PRIx64, addr);
	if (ret == -ENOENT)
		return djp_errline(err, errsz, ret, pf->path, "no DWARF entry for the function at 0x%" PRIx64, addr);
	if (ret)
		return djp_errline(err, errsz, ret, pf->path, "out of memory");
	return 0;
}

/* The lowest and highest line of the rows of the unit's line table whose
 * address is inside sub and whose file is decl_file: the lines its code
 * spans (an inlined callee's rows name another file). */
static void code_lines(Dwarf_Die *sub, const char *decl_file, unsigned *lo, unsigned *hi)
{
	Dwarf_Die cudie;
	Dwarf_Lines *lines;
	size_t n;

	*lo = *hi = 0;
	if (!dwarf_diecu(sub, &cudie, NULL, NULL) || dwarf_getsrclines(&cudie, &lines, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr a;
		int ln;
		const char *f;
		if (!l || dwarf_lineaddr(l, &a) || dwarf_lineno(l, &ln) || ln <= 0 || dwarf_haspc(sub, a) <= 0 ||
		    !(f = dwarf_linesrc(l, NULL, NULL)) || strcmp(f, decl_file))
			continue;
		if (!*lo || (unsigned)ln < *lo)
			*lo = (unsigned)ln;
		if ((unsigned)ln > *hi)
			*hi = (unsigned)ln;
	}
}

int djp_params_source(struct djp_params_file *pf, uint64_t func_addr, bool with_lines, struct djp_func_source *out,
		      char *err, size_t errsz)
{
	struct dwarf_src *src;
	Dwarf_Die sub, cudie;
	Dwarf_Attribute attr;
	const char *file, *dir;
	int line = 0, r;

	memset(out, 0, sizeof(*out));
	if ((r = djp_params_find(pf, func_addr, &sub, &src, err, errsz)))
		return r;
	if (!(file = dwarf_decl_file(&sub)))
		return djp_errline(err, errsz, -ENOENT, pf->path, "no source file for the function at 0x%" PRIx64,
				   func_addr);
	dwarf_decl_line(&sub, &line);
	/* a relative name is the unit's compilation directory's */
	if (file[0] != '/' && dwarf_diecu(&sub, &cudie, NULL, NULL) &&
	    dwarf_attr_integrate(&cudie, DW_AT_comp_dir, &attr) && (dir = dwarf_formstring(&attr)))
		snprintf(out->file, sizeof(out->file), "%s/%s", dir, file);
	else
		snprintf(out->file, sizeof(out->file), "%s", file);
	out->decl_line = line > 0 ? (unsigned)line : 0;
	if (with_lines)
		code_lines(&sub, file, &out->lo_line, &out->hi_line);
	return 0;
}
