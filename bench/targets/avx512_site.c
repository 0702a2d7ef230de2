/*
 * A shared object for bench/engine_hits: a marker like its own, in an
 * object that also has AVX-512 code, so that a full-flavour handler at the
 * marker gets the widest save (zmm0-31 and k0-7; arch/x86/vector_use.c): the
 * worst case of the full trampoline, next to the usual one.
 */
#include "djprobe/marker.h"

__attribute__((noinline, aligned(64), visibility("default"))) void avx512_site(int a, long b)
{
	MARK(bench_hit_avx512, "a=%d b=%ld", a, b);
}

/* Never called: its presence makes the object's vector use AVX-512. */
__attribute__((visibility("default"))) void avx512_code(void)
{
	__asm__ volatile(".byte 0x62, 0xa1, 0x7d, 0x40, 0xef, 0xc0"); /* vpxord %zmm16,%zmm16,%zmm16 */
}
