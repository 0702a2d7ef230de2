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

/*
 * Decode every executable section of the file at `path` and return the
 * widest class its instructions use, or -errno when the file cannot be
 * read (the caller then assumes the worst).
 */
int djp_vector_use_of_file(const char *path);

/* The same over a buffer of code (tests); `starts`, sorted, are addresses
 * (offsets into code) where decoding restarts, such as function starts. */
int djp_vector_use_of_code(const unsigned char *code, size_t len, const size_t *starts, size_t nstarts);

#endif
