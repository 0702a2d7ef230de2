/*
 * A shared object with AVX-512 code, for the full trampoline's
 * vector-width test (test_engine_vector.c): the engine reads it as
 * DJP_VEC_AVX512 and saves zmm0-31 and k0-7 around a handler at its site.
 * vec512_site_run keeps a known value in each of zmm0-31 and k0-7 across a
 * marker site and stores what it finds after it to out[0..2111] (zmm, then
 * k); vec512_clobber is a handler that overwrites all of them.
 */
#include "../vec_site.h"

__asm__(".text\n"
	".globl vec512_site_run\n"
	".type vec512_site_run,@function\n"
	"vec512_site_run:\n"
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	"mov $(0x0303030303030303 * (\\n + 1)), %rax\n"
	"vpbroadcastq %rax, %zmm\\n\n"
	".endr\n"
	".irp n,0,1,2,3,4,5,6,7\n"
	"mov $(0x0101010101010101 * (\\n + 0x41)), %rax\n"
	"kmovq %rax, %k\\n\n"
	".endr\n"
	"990: .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" DJP_TEST_RECORD("vec512_site")
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	"vmovdqu64 %zmm\\n, (\\n * 64)(%rdi)\n"
	".endr\n"
	".irp n,0,1,2,3,4,5,6,7\n"
	"kmovq %k\\n, (2048 + \\n * 8)(%rdi)\n"
	".endr\n"
	"vzeroupper\n"
	"ret\n"
	".size vec512_site_run, .-vec512_site_run\n"
	".globl vec512_clobber\n"
	".type vec512_clobber,@function\n"
	"vec512_clobber:\n"
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	"vpternlogd $0xff, %zmm\\n, %zmm\\n, %zmm\\n\n"
	".endr\n"
	".irp n,0,1,2,3,4,5,6,7\n"
	"kxnorq %k\\n, %k\\n, %k\\n\n"
	".endr\n"
	"ret\n"
	".size vec512_clobber, .-vec512_clobber\n");
