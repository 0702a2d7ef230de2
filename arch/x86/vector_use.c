/*
 * Which vector registers an object's code can keep values in.
 *
 * Why it is enough to look at the object.  The full trampoline must give
 * back every vector register whose value the interrupted code still needs.
 * Under the SysV ABI every vector register (xmm/ymm/zmm0-31, k0-7) is
 * caller-saved: no function keeps a value in one across a call.  So at a
 * marker, the only live vector values are those of the function the marker
 * is in, and that function's own instructions write or read each of them
 * (a value it received from a callee, such as a double returned in xmm0,
 * is read by its own code too).  Its instructions are in its object.  The
 * widest encoding the object's code uses therefore bounds what can be live
 * at any of its markers:
 *
 *   - legacy encodings only (code built for baseline x86-64): the low 128
 *     bits of xmm0-15; the upper halves and zmm16-31 hold only what some
 *     other object's code (libc's AVX string functions) left there, which
 *     nothing here reads;
 *   - VEX: ymm0-15;
 *   - EVEX, or the VEX-encoded opmask instructions: zmm0-31 and k0-7;
 *   - AMX tile instructions: tiles, which no move saves: such an object's
 *     full-flavour sites trap instead (the kernel saves everything on a
 *     signal).
 *
 * On this machine class the full save of zmm0-31 and k0-7 is about 9 ns a
 * hit, bound by the stores; xmm0-15 are a quarter of that.  MXCSR is the
 * trampoline's business at every width.
 *
 * The x87 stack, by the same argument.  The ABI wants it empty at every
 * call and return (but for a long double returned in st0, which the
 * caller's own code pops).  So code that has no x87 instruction, no MMX
 * (which uses the same registers) and no FXSAVE/XSAVE family (which could
 * restore any state) has an empty stack wherever it runs, and a site in
 * such an object needs no check of it: that check (FNSTSW, twice a hit)
 * costs 8-9 ns a hit on AMD Zen, more than everything else the full
 * trampoline does (tramp_full.c).  Such code is marked DJP_VEC_X87.
 *
 * How.  Zydis decodes each executable section linearly; decoding restarts
 * at every function symbol, so that bytes that are not code (padding, a
 * constant pool in hand-written assembly) cannot throw it out of step for
 * longer than to the next function.  An undecodable byte is skipped.  The
 * result is cached per object by the caller: a megabyte of text takes a
 * few milliseconds, once, when a full-flavour handler is first connected
 * to a site in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <Zydis/Zydis.h>

#include "vector_use.h"

static int classify(const ZydisDecodedInstruction *in)
{
	switch (in->meta.isa_ext) {
	case ZYDIS_ISA_EXT_AMX_BF16:
	case ZYDIS_ISA_EXT_AMX_INT8:
	case ZYDIS_ISA_EXT_AMX_TILE:
		return DJP_VEC_OTHER;
	case ZYDIS_ISA_EXT_AVX512VEX: /* kmov, kand, ...: opmask registers */
		return DJP_VEC_AVX512;
	default:
		break;
	}
	switch (in->encoding) {
	case ZYDIS_INSTRUCTION_ENCODING_EVEX:
	case ZYDIS_INSTRUCTION_ENCODING_MVEX:
		return DJP_VEC_AVX512;
	case ZYDIS_INSTRUCTION_ENCODING_VEX:
	case ZYDIS_INSTRUCTION_ENCODING_XOP:
		return DJP_VEC_AVX;
	default:
		return DJP_VEC_SSE;
	}
}

/* Does the instruction read or write the x87 registers or its state? */
static int touches_x87(const ZydisDecodedInstruction *in)
{
	switch (in->meta.isa_ext) {
	case ZYDIS_ISA_EXT_X87:
	case ZYDIS_ISA_EXT_MMX:
	case ZYDIS_ISA_EXT_AMD3DNOW:
	case ZYDIS_ISA_EXT_XSAVE:
	case ZYDIS_ISA_EXT_XSAVEC:
	case ZYDIS_ISA_EXT_XSAVEOPT:
	case ZYDIS_ISA_EXT_XSAVES:
		return 1;
	default:
		break;
	}
	switch (in->meta.isa_set) {
	case ZYDIS_ISA_SET_X87:
	case ZYDIS_ISA_SET_FCMOV:
	case ZYDIS_ISA_SET_SSE3X87:
	case ZYDIS_ISA_SET_PENTIUMMMX:
	case ZYDIS_ISA_SET_SSE2MMX:
	case ZYDIS_ISA_SET_SSSE3MMX:
	case ZYDIS_ISA_SET_FXSAVE:
	case ZYDIS_ISA_SET_FXSAVE64:
		return 1;
	default:
		/* the SSE instructions with an MMX operand (pshufw, cvtpi2ps, ...) */
		return in->meta.category == ZYDIS_CATEGORY_MMX || in->meta.category == ZYDIS_CATEGORY_X87_ALU;
	}
}

int djp_vector_use_of_code(const unsigned char *code, size_t len, const size_t *starts, size_t nstarts)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	int use = DJP_VEC_SSE, x87 = 0;
	size_t at = 0, next = 0;

	if (ZYAN_FAILED(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return -ENOSYS;
	while (at < len && use < DJP_VEC_OTHER) {
		size_t end = len;
		while (next < nstarts && starts[next] <= at)
			next++;
		if (next < nstarts)
			end = starts[next]; /* decode up to the next function, then resync */
		while (at < end && use < DJP_VEC_OTHER) {
			if (ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, code + at, end - at, &in))) {
				int c = classify(&in);
				use = c > use ? c : use;
				x87 |= touches_x87(&in);
				at += in.length;
			} else {
				at++;
			}
		}
		at = end;
	}
	return use | (x87 ? DJP_VEC_X87 : 0);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

size_t *djp_elf_function_starts(Elf *elf, size_t ndx, GElf_Addr addr, size_t size, size_t *n)
{
	Elf_Scn *scn = NULL;
	size_t *v = NULL, cap = 0;
	*n = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx != ndx ||
			    sym.st_value < addr || sym.st_value >= addr + size)
				continue;
			if (*n == cap) {
				size_t *nv = realloc(v, (cap = cap ? 2 * cap : 256) * sizeof(*v));
				if (!nv)
					break; /* fewer resync points: still sound enough */
				v = nv;
			}
			v[(*n)++] = sym.st_value - addr;
		}
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_size);
	return v;
}

/* The section's function starts: its symbols', and those of `extra`
 * (link-time addresses, sorted) that fall in it, sorted, each once. */
static size_t *section_starts(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const uint64_t *extra, size_t nextra,
			      size_t *n)
{
	size_t *v = djp_elf_function_starts(elf, elf_ndxscn(scn), sh->sh_addr, sh->sh_size, n), k = 0, lo = 0, hi = nextra;
	size_t *nv;

	while (lo < hi) { /* the first extra start in the section */
		size_t mid = (lo + hi) / 2;
		if (extra[mid] < sh->sh_addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (hi = lo; hi < nextra && extra[hi] < sh->sh_addr + sh->sh_size; hi++)
		;
	if (hi == lo || !(nv = realloc(v, (*n + hi - lo) * sizeof(*v))))
		return v; /* fewer resync points: the symbols' own */
	v = nv;
	for (size_t i = lo; i < hi; i++)
		v[(*n)++] = extra[i] - sh->sh_addr;
	qsort(v, *n, sizeof(*v), cmp_size);
	for (size_t i = 0; i < *n; i++)
		if (!k || v[i] != v[k - 1])
			v[k++] = v[i];
	*n = k;
	return v;
}

int djp_elf_code_walk_at(const char *path, const uint64_t *extra, size_t nextra, djp_code_fn fn, void *ctx)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	int fd, ret = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (!(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return -ENOEXEC;
	}
	while (!ret && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n, *starts;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (!(d = elf_getdata(scn, NULL)) || d->d_size != sh.sh_size) {
			ret = -ENOEXEC;
			break;
		}
		starts = section_starts(elf, scn, &sh, extra, nextra, &n);
		ret = fn(ctx, d->d_buf, d->d_size, sh.sh_addr, starts, n);
		free(starts);
	}
	elf_end(elf);
	close(fd);
	return ret < 0 ? ret : 0;
}

int djp_elf_code_walk(const char *path, djp_code_fn fn, void *ctx)
{
	return djp_elf_code_walk_at(path, NULL, 0, fn, ctx);
}

/* One section's widest class, merged into *ctx; 1 (stop) once nothing
 * wider can be found, or the error. */
static int merge_use(void *ctx, const uint8_t *code, size_t len, uint64_t addr, const size_t *starts, size_t n)
{
	int *use = ctx, c = djp_vector_use_of_code(code, len, starts, n);
	(void)addr;
	if (c < 0)
		return c;
	*use = ((c & DJP_VEC_CLASS) > (*use & DJP_VEC_CLASS) ? c & DJP_VEC_CLASS : *use & DJP_VEC_CLASS) |
	       ((c | *use) & DJP_VEC_X87);
	return (*use & DJP_VEC_CLASS) >= DJP_VEC_OTHER;
}

int djp_vector_use_of_file(const char *path)
{
	int use = DJP_VEC_SSE, err = djp_elf_code_walk(path, merge_use, &use);
	return err < 0 ? err : use;
}
