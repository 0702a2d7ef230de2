/*
 * A shared object whose code uses legacy SSE encodings only, for the full
 * trampoline's vector-width test (test_engine_vector.c): the engine reads
 * it as DJP_VEC_SSE and saves xmm0-15 only around a handler at its site.
 * vec_sse_site_run keeps a known value in each of xmm0-15 across a marker
 * site and stores what it finds after it to out[0..255].
 */
#include "../vec_site.h"

__asm__(".text\n"
	".globl vec_sse_site_run\n"
	".type vec_sse_site_run,@function\n"
	"vec_sse_site_run:\n"
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"mov $(0x2121212121212121 * (\\n + 1)), %rax\n"
	"movq %rax, %xmm\\n\n"
	"punpcklqdq %xmm\\n, %xmm\\n\n"
	".endr\n"
	"990: .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" DJP_TEST_RECORD("vec_sse_site")
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"movdqu %xmm\\n, (\\n * 16)(%rdi)\n"
	".endr\n"
	"ret\n"
	".size vec_sse_site_run, .-vec_sse_site_run\n");
