/*
 * Which vector registers the code of an ELF object can keep values in
 * (arch/x86/vector_use.c has the reasoning): what the full trampoline must save
 * around a handler at a site in that object.
 */
#ifndef DJP_ARCH_X86_VECTOR_USE_H
#define DJP_ARCH_X86_VECTOR_USE_H

/* Ordered: each class covers the ones before it. */
enum djp_vec_use {
	DJP_VEC_SSE = 0,    /* legacy encodings only: xmm0-15, low 128 bits */
	DJP_VEC_AVX = 1,    /* VEX: ymm0-15 */
	DJP_VEC_AVX512 = 2, /* EVEX or opmask instructions: zmm0-31, k0-7 */
	DJP_VEC_OTHER = 3,  /* state no move saves (AMX tiles): trap instead */
};
#define DJP_VEC_CLASS 0xf /* the class bits of a result */
/* Or'ed into a result: the code has x87, MMX or 3DNow! instructions, or
 * saves and restores the FPU state (FXSAVE, XSAVE): its x87 stack can be
 * in use at a site.  Without it the stack is empty at every site (the
 * ABI's rule at calls), and the full trampoline does not look at it. */
#define DJP_VEC_X87 0x10

/*
 * Decode every executable section of the file at `path` and return the
 * widest class its instructions use, with DJP_VEC_X87 when it has x87
 * code, or -errno when the file cannot be
 * read (the caller then assumes the worst).
 */
int djp_vector_use_of_file(const char *path);

/* The same over a buffer of code (tests); `starts`, sorted, are addresses
 * (offsets into code) where decoding restarts, such as function starts. */
int djp_vector_use_of_code(const unsigned char *code, size_t len, const size_t *starts, size_t nstarts);

/* Offsets into section `ndx` of elf (at address `addr`, `size` bytes)
 * where a function symbol starts, sorted, for decoders to resync at; NULL
 * when there are none (shared with arch/x86/branch_targets.c). */
#include <gelf.h>
#include <stdint.h>
size_t *djp_elf_function_starts(Elf *elf, size_t ndx, GElf_Addr addr, size_t size, size_t *n);
/* Hand each executable section of the file at `path` to fn: its bytes, its
 * address, and the offsets where function symbols start (sorted).  fn
 * returns 0 to go on, > 0 to stop, < 0 for an error.  0, or -errno (the
 * file, or fn's). */
typedef int (*djp_code_fn)(void *ctx, const uint8_t *code, size_t len, uint64_t addr, const size_t *starts,
			   size_t nstarts);
int djp_elf_code_walk(const char *path, djp_code_fn fn, void *ctx);
/* The same, restarting also at the starts of `extra` (link-time
 * addresses, sorted): the functions a separate debug file names. */
int djp_elf_code_walk_at(const char *path, const uint64_t *extra, size_t nextra, djp_code_fn fn, void *ctx);

#endif
