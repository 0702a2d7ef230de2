/*
 * A shared object whose code uses legacy SSE encodings only, for the full
 * trampoline's vector-width test (test_engine_vector.c): the engine reads
 * it as DJP_VEC_SSE and saves xmm0-15 only around a handler at its site.
 * It has no x87 code either, so the trampoline leaves the x87 state alone.
 * vec_sse_site_run keeps a known value in each of xmm0-15 and a MXCSR of
 * its own (round toward zero, the inexact flag raised) across a marker
 * site and stores what it finds after it to out[0..255], MXCSR as it was
 * before the site to out[256..259] and after it to out[260..263].
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
	"stmxcsr 256(%rdi)\n"
	"orl $0x6020, 256(%rdi)\n"
	"ldmxcsr 256(%rdi)\n"
	"stmxcsr 256(%rdi)\n"
	"990: .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" DJP_TEST_RECORD("vec_sse_site")
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"movdqu %xmm\\n, (\\n * 16)(%rdi)\n"
	".endr\n"
	"stmxcsr 260(%rdi)\n"
	"movl $0x1f80, -4(%rsp)\n"
	"ldmxcsr -4(%rsp)\n"
	"ret\n"
	".size vec_sse_site_run, .-vec_sse_site_run\n");
