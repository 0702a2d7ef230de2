/*
 * The full trampoline saves the vector state as wide as the site's object
 * uses it (arch/x86/vector_use.c): what the reader says of known code, and that
 * the values survive a handler that overwrites every vector register, for
 * a site in an object of legacy SSE code (xmm0-15 saved) and in one with
 * AVX-512 code (zmm0-31 and k0-7 saved).  The objects are built next to
 * the test binary (selftests/dso/vec_*.c).
 */
#include <cpuid.h>
#include <dlfcn.h>
#include <stdatomic.h>

#include "djprobe/djprobe.h"
#include "harness.h"
#include "arch/x86/arch.h"

/* Instruction bytes of each kind. */
static const unsigned char sse[] = { 0x0f, 0x58, 0xc1 };		/* addps %xmm1,%xmm0 */
static const unsigned char vex[] = { 0xc5, 0xfc, 0x58, 0xc1 };		/* vaddps %ymm1,%ymm0,%ymm0 */
static const unsigned char evex[] = { 0x62, 0xf1, 0x7c, 0x48, 0x58, 0xc1 }; /* vaddps %zmm1,%zmm0,%zmm0 */
static const unsigned char kmov[] = { 0xc5, 0xf8, 0x90, 0xc1 };		/* kmovw %k1,%k0 */
static const unsigned char amx[] = { 0xc4, 0xe2, 0x78, 0x49, 0xc0 };	/* tilerelease */
static const unsigned char fldpi[] = { 0xd9, 0xeb };
static const unsigned char paddb[] = { 0x0f, 0xfc, 0xc1 };		/* paddb %mm1,%mm0 */
static const unsigned char pshufw[] = { 0x0f, 0x70, 0xc1, 0x00 };	/* pshufw $0,%mm1,%mm0 (SSE) */
static const unsigned char fxsave[] = { 0x48, 0x0f, 0xae, 0x00 };	/* fxsave64 (%rax) */
static const unsigned char xrstor[] = { 0x0f, 0xae, 0x28 };		/* xrstor (%rax) */

static int use_of(const unsigned char *a, size_t na, const unsigned char *b, size_t nb, size_t start)
{
	unsigned char buf[64];
	memcpy(buf, a, na);
	memcpy(buf + na, b, nb);
	return djp_vector_use_of_code(buf, na + nb, &start, start ? 1 : 0);
}

TEST(vector_use_of_code_and_objects)
{
	static const unsigned char nop = 0x90, junk = 0x62; /* 0x62 alone starts an EVEX prefix */
	CHECK_EQ(use_of(sse, sizeof(sse), &nop, 1, 0), DJP_VEC_SSE);
	CHECK_EQ(use_of(sse, sizeof(sse), vex, sizeof(vex), 0), DJP_VEC_AVX);
	CHECK_EQ(use_of(vex, sizeof(vex), evex, sizeof(evex), 0), DJP_VEC_AVX512);
	CHECK_EQ(use_of(sse, sizeof(sse), kmov, sizeof(kmov), 0), DJP_VEC_AVX512);
	CHECK_EQ(use_of(sse, sizeof(sse), amx, sizeof(amx), 0), DJP_VEC_OTHER);
	/* x87 state: the x87 and MMX registers, and what saves them whole */
	CHECK_EQ(use_of(sse, sizeof(sse), fldpi, sizeof(fldpi), 0), DJP_VEC_SSE | DJP_VEC_X87);
	CHECK_EQ(use_of(sse, sizeof(sse), paddb, sizeof(paddb), 0), DJP_VEC_SSE | DJP_VEC_X87);
	CHECK_EQ(use_of(sse, sizeof(sse), pshufw, sizeof(pshufw), 0), DJP_VEC_SSE | DJP_VEC_X87);
	CHECK_EQ(use_of(vex, sizeof(vex), fxsave, sizeof(fxsave), 0), DJP_VEC_AVX | DJP_VEC_X87);
	CHECK_EQ(use_of(evex, sizeof(evex), xrstor, sizeof(xrstor), 0), DJP_VEC_AVX512 | DJP_VEC_X87);
	/* A stray byte before a function: decoding restarts at its start. */
	CHECK_EQ(use_of(&junk, 1, evex, sizeof(evex), 1), DJP_VEC_AVX512);
	CHECK_EQ(djp_vector_use_of_file(djp_test_path("libdjp_vec_sse.so")), DJP_VEC_SSE);
	CHECK_EQ(djp_vector_use_of_file(djp_test_path("libdjp_vec_avx512.so")), DJP_VEC_AVX512);
	CHECK(djp_vector_use_of_file("/nonexistent") < 0);
}

static atomic_long hits;

static void clobber_ymm(const struct djp_hit *hit, void *data)
{
	unsigned every_flag = 0x1f80 | 0x3f; /* round to nearest, all exceptions raised */
	(void)hit, (void)data;
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
	__asm__ volatile("ldmxcsr %0" ::"m"(every_flag));
	__asm__ volatile(".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
			 "vpcmpeqd %%ymm\\n, %%ymm\\n, %%ymm\\n\n"
			 ".endr\n" ::
				 : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
				   "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

static int have(int leaf7_ebx_bit)
{
	unsigned a, b, c, d;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << leaf7_ebx_bit));
}

/* Register n of `nregs` (`width` bytes each, from out) must hold the
 * 64-bit pattern times (n + first) in every word. */
static void check_words(const uint8_t *out, int nregs, int width, uint64_t pattern, int first, const char *what,
			long hit)
{
	for (int v = 0; v < nregs; v++)
		for (int q = 0; q < width / 8; q++) {
			uint64_t got;
			memcpy(&got, out + v * width + q * 8, 8);
			if (got != pattern * (uint64_t)(v + first))
				djp_test_fail(__FILE__, __LINE__, "hit %ld: %s%d word %d is %#lx", hit, what, v, q,
					      (unsigned long)got);
		}
}

static void *open_dso(const char *name)
{
	void *h = dlopen(djp_test_path(name), RTLD_NOW);
	if (!h)
		djp_test_fail(__FILE__, __LINE__, "dlopen %s: %s", name, dlerror());
	return h;
}

TEST_TIMEOUT(regs_preserved_sse_object, 120)
{
	void *h = open_dso("libdjp_vec_sse.so");
	void (*run)(uint8_t *) = (void (*)(uint8_t *))dlsym(h, "vec_sse_site_run");
	uint8_t out[264];
	int id;
	if (!have(5)) /* AVX2, for the handler's ymm clobber */
		SKIP("no AVX2");
	CHECK(run != NULL);
	id = djp_connect("vec_sse_site", clobber_ymm, NULL, 0);
	CHECK(id >= 0);
	for (long i = 0; i < 200000; i++) {
		uint32_t before, after;
		run(out);
		check_words(out, 16, 16, 0x2121212121212121ull, 1, "xmm", i);
		memcpy(&before, out + 256, 4), memcpy(&after, out + 260, 4);
		if (after != before || (before & 0x6020) != 0x6020)
			djp_test_fail(__FILE__, __LINE__, "hit %ld: MXCSR %#x before the site, %#x after", i, before,
				      after);
	}
	CHECK_EQ(atomic_load(&hits), 200000);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST_TIMEOUT(regs_preserved_avx512_object, 120)
{
	void *h = open_dso("libdjp_vec_avx512.so");
	void (*run)(uint8_t *) = (void (*)(uint8_t *))dlsym(h, "vec512_site_run");
	djp_handler_fn clobber = (djp_handler_fn)dlsym(h, "vec512_clobber");
	static uint8_t out[2112];
	int id;
	if (!have(16) || !have(30)) /* AVX512F, AVX512BW */
		SKIP("no AVX-512");
	CHECK(run != NULL && clobber != NULL);
	id = djp_connect("vec512_site", clobber, NULL, 0);
	CHECK(id >= 0);
	for (long i = 0; i < 200000; i++) {
		run(out);
		check_words(out, 32, 64, 0x0303030303030303ull, 1, "zmm", i);
		check_words(out + 2048, 8, 8, 0x0101010101010101ull, 0x41, "k", i);
	}
	CHECK_EQ(djp_disconnect(id), 0);
}
