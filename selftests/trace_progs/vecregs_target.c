/*
 * A target whose vector registers are live across its probes, for the
 * tests that a lean-trampoline probe (djp trace's recorder, a script's
 * in-target aggregation) leaves every one of them as it found it
 * (test_trace_vecregs.c).  Nothing of djprobe is linked in.
 *
 * Four markers, vr_a to vr_d ("s=%s p=%p v=%ld"), each at a site in assembly
 * that fills the widest vector state the machine has with known values
 * (xmm0-15; ymm0-15 with AVX2; zmm0-31 and k0-7 with AVX-512BW), runs the
 * marker and stores what it finds after it; the caller compares.  Each is
 * run twice a round: a probe's first hit of a marker id is when its cold
 * paths run.  vr_func(v, eight doubles) is a function with its arguments
 * live in xmm0-7 at its entry, for function points.
 *
 * It prints "ready PID" and "width W", waits for a line "go" (or starts at
 * once with -n; -k N makes N pthread keys of its own first), prints "site NAME BYTE" (the first byte of each site as it
 * is about to run: 0xe9 when armed with a jump), then "NAME ok" for each
 * marker run whose registers all came back, or "NAME corrupt REG WORD
 * GOT WANT" for the first one that did not, "func ok" or "func corrupt",
 * and "done".  At end of input it exits 0.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAT 0x0123456789abcdefull
#define KPAT 0x0101010101010101ull

/* One site: vr_NAME(out, s, v, width, p); width 0: xmm, 1: ymm, 2: zmm
 * and k; p is s again, as a %p (a script's user_string of it is a string
 * its pattern asks the recorder to copy). */
#define RECORD(name)                                                                                \
	".pushsection .markers,\"a\",@progbits\n.balign 8\n"                                        \
	"991: .2byte 1\n.2byte 992f-991b\n.byte 6, 3\n.2byte 0\n.8byte 990b-.\n"                   \
	".asciz \"" name "\"\n.asciz \"8@%rsi 8@%r8 8@%rdx\"\n.asciz \"s=%s p=%p v=%ld\"\n.balign 8, 0\n"     \
	"992:\n.popsection\n"

#define SITE(name)                                                                                  \
	__asm__(".text\n.globl vr_" name "\n.type vr_" name ",@function\nvr_" name ":\n"            \
		"cmp $2, %ecx\nje 3f\ncmp $1, %ecx\nje 2f\n"                                        \
		".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"                                    \
		"mov $(0x0123456789abcdef * (\\n + 1)), %rax\nmovq %rax, %xmm\\n\n"                 \
		"punpcklqdq %xmm\\n, %xmm\\n\n.endr\njmp 990f\n"                                    \
		"2:\n.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"                                \
		"mov $(0x0123456789abcdef * (\\n + 1)), %rax\nvmovq %rax, %xmm\\n\n"                \
		"vpbroadcastq %xmm\\n, %ymm\\n\n.endr\njmp 990f\n"                                  \
		"3:\n.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26," \
		"27,28,29,30,31\n"                                                                  \
		"mov $(0x0123456789abcdef * (\\n + 1)), %rax\nvpbroadcastq %rax, %zmm\\n\n.endr\n"  \
		".irp n,0,1,2,3,4,5,6,7\nmov $(0x0101010101010101 * (\\n + 1)), %rax\n"             \
		"kmovq %rax, %k\\n\n.endr\n"                                                        \
		".globl vr_" name "_site\nvr_" name "_site:\n"                                      \
		"990: .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" RECORD("vr_" name)                     \
		"cmp $2, %ecx\nje 3f\ncmp $1, %ecx\nje 2f\n"                                        \
		".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\nmovdqu %xmm\\n, (\\n * 64)(%rdi)\n"  \
		".endr\nret\n"                                                                      \
		"2:\n.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"                                \
		"vmovdqu %ymm\\n, (\\n * 64)(%rdi)\n.endr\nvzeroupper\nret\n"                       \
		"3:\n.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26," \
		"27,28,29,30,31\nvmovdqu64 %zmm\\n, (\\n * 64)(%rdi)\n.endr\n"                      \
		".irp n,0,1,2,3,4,5,6,7\nkmovq %k\\n, (2048 + \\n * 8)(%rdi)\n.endr\n"              \
		"vzeroupper\nret\n.size vr_" name ", .-vr_" name "\n")

SITE("a");
SITE("b");
SITE("c");
SITE("d");

typedef void site_fn(uint8_t *out, const char *s, long v, int width, const char *p);
extern site_fn vr_a, vr_b, vr_c, vr_d;
extern const uint8_t vr_a_site[], vr_b_site[], vr_c_site[], vr_d_site[];

static const struct {
	const char *name;
	site_fn *run;
	const uint8_t *site;
} sites[] = {
	{ "vr_a", vr_a, vr_a_site },
	{ "vr_b", vr_b, vr_b_site },
	{ "vr_c", vr_c, vr_c_site },
	{ "vr_d", vr_d, vr_d_site },
};

/* Its arguments arrive in xmm0-7: a probe at its entry that clobbers
 * them changes what it returns. */
__attribute__((noinline)) double vr_func(long v, double a, double b, double c, double d, double e, double f,
					 double g, double h)
{
	__asm__ volatile("" ::: "memory");
	return (double)v + a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}

/* The first register of out (width w) that is not what the site put in it. */
static int check(const uint8_t *out, int w, const char *name)
{
	int nregs = w == 2 ? 32 : 16, words = w == 0 ? 2 : w == 1 ? 4 : 8;

	for (int r = 0; r < nregs; r++)
		for (int q = 0; q < words; q++) {
			uint64_t got, want = PAT * (uint64_t)(r + 1);
			memcpy(&got, out + r * 64 + q * 8, 8);
			if (got != want) {
				printf("%s corrupt %s%d %d %#llx %#llx\n", name, w == 0 ? "xmm" : w == 1 ? "ymm" : "zmm",
				       r, q, (unsigned long long)got, (unsigned long long)want);
				return -1;
			}
		}
	for (int k = 0; w == 2 && k < 8; k++) {
		uint64_t got, want = KPAT * (uint64_t)(k + 1);
		memcpy(&got, out + 2048 + k * 8, 8);
		if (got != want) {
			printf("%s corrupt k%d 0 %#llx %#llx\n", name, k, (unsigned long long)got,
			       (unsigned long long)want);
			return -1;
		}
	}
	printf("%s ok\n", name);
	return 0;
}

static void work(int width)
{
	static uint8_t out[2112] __attribute__((aligned(64)));
	static const char *const words[] = { "alpha", "beta", "gamma", "delta" };
	volatile double x = 0.5;
	double want, got;

	for (unsigned i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		printf("site %s %#x\n", sites[i].name, sites[i].site[0]);
	printf("site vr_func %#x\n", *(volatile const uint8_t *)(uintptr_t)vr_func);
	for (int round = 0; round < 2; round++)
		for (unsigned i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
			memset(out, 0, sizeof(out));
			sites[i].run(out, words[i], (long)i, width, words[i]);
			check(out, width, sites[i].name);
		}
	for (long i = 0; i < 2; i++) {
		want = (double)i + x + 2 * 1.5 + 3 * 2.5 + 4 * 3.5 + 5 * 4.5 + 6 * 5.5 + 7 * 6.5 + 8 * 7.5;
		got = vr_func(i, x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7);
		if (got == want)
			printf("func ok\n");
		else
			printf("func corrupt %a %a\n", got, want);
	}
	printf("done\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int width = 0;
	char line[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* -k N: N thread-specific keys of the program's own first, so that a
	 * library loaded later gets keys past glibc's first 32 */
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-k"))
			for (int k = atoi(argv[i + 1]); k > 0; k--) {
				pthread_key_t key;
				if (pthread_key_create(&key, NULL))
					return 1;
			}
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
		width = 2;
	else if (__builtin_cpu_supports("avx2"))
		width = 1;
	printf("ready %d\nwidth %d\n", (int)getpid(), width);
	if (argc > 1 && !strcmp(argv[1], "-n"))
		work(width);
	while (fgets(line, sizeof(line), stdin))
		if (!strcmp(line, "go\n"))
			work(width);
	return 0;
}
