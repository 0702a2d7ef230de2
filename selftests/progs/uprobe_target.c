/*
 * The target of test_uprobes.c: one SDT probe that no jump can take, as
 * a C compiler would never emit one but a hand-written note can: a 1-byte
 * NOP, the last byte of its function before the ret, whose twelve
 * arguments are of every kind an argument location has (a register, a
 * byte register, a base + index * scale operand, two stack slots of the
 * caller's, a negative constant, three globals through %rip, a string),
 * with an SDT semaphore that the program tests before each hit, as
 * <sys/sdt.h>'s users do: it fires only while someone raised it.
 *
 * It prints "ready PID SITE GLOBAL SHORT BYTE" and reads commands:
 *   go N T     T threads, N hits each where the semaphore is raised; a
 *              line "hit T I TID REG PTR KIND TEXT NEG CH IDX TAB S7 S8"
 *              per hit, the values it passed, then "done HITS"
 *   force N    N hits, semaphore or not, then "done N"
 *   bench N    N hits, semaphore or not, timed: "bench NS" a hit
 *   sem        "sem VALUE"
 * and exits at the end of its input.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "selftests/sdt_note_asm.h"

/* uprobe_site: "nop; ret", the NOP the probe's site.  The arguments are
 * where the call left them: rdi, rsi, edx, ecx, r8, r9, then the seventh
 * and eighth on the stack above the return address. */
__asm__(".text\n"
	".globl uprobe_site\n"
	".type uprobe_site, @function\n"
	"uprobe_site:\n"
	"990: nop\n"
	"ret\n"
	".size uprobe_site, .-uprobe_site\n"
	SDT_BASE_ASM
	".pushsection .probes,\"aw\",@progbits\n"
	".balign 2\n"
	".globl uprobe_target_semaphore\n"
	"uprobe_target_semaphore: .2byte 0\n"
	".popsection\n"
	SDT_NOTE_ASM("uprobe_target", "hit", "uprobe_target_semaphore",
		     "8@%rdi 8@%rsi -4@%edx 1@%ch 2@(%r8,%r9,2) 8@8(%rsp) -8@16(%rsp) -4@$-12345 "
		     "8@uprobe_global(%rip) -2@uprobe_short(%rip) 1@uprobe_byte(%rip) 4@%edi"));

void uprobe_site(uint64_t reg, const char *str, int neg, unsigned ch, const uint16_t *tab, long idx, uint64_t s7,
		 int64_t s8);
extern volatile uint16_t uprobe_target_semaphore;

uint64_t uprobe_global;
int16_t uprobe_short;
uint8_t uprobe_byte;
static uint16_t table[64];
/* "edge" as the last bytes of a page, the next unreadable, and the 63
 * bytes that end with it there, as C strings */
static char *edge, *edge63, edge_text[2][64];
static char text63[64], text100[101];

struct worker {
	pthread_t th;
	unsigned t;
	long n, made;
};

/* Hit i of thread t: every value follows from the two. */
static void hit(unsigned t, long i, int print)
{
	uint64_t reg = 0x51ull << 56 | (uint64_t)t << 32 | 0x80000000u | (uint64_t)i;
	const char *kinds[] = { "s", "s", "s", "s", "edge", "s", "edge", "bad", "s", "null" };
	const char *str, *kind = kinds[i % 10];
	char own[32];
	int neg = -(int)(i + 1) - (int)t * 100000;
	unsigned ch = (unsigned)((i * 7 + t) & 0xff) << 8 | 0xa5 | 0x3c0000;
	long idx = (i + t) % 64;
	uint64_t s7 = ~reg;
	int64_t s8 = -(int64_t)(i * 1000 + t) - 1;

	snprintf(own, sizeof(own), "t%u-i%ld", t, i);
	switch (i % 10) {
	case 4: str = edge63; break;
	case 5: str = text63; break;
	case 6: str = edge; break;
	case 7: str = (const char *)0x10; break;
	case 8: str = text100; break;
	case 9: str = NULL; break;
	default: str = own;
	}
	uprobe_site(reg, str, neg, ch, table, idx, s7, s8);
	if (print)
		printf("hit %u %ld %ld %" PRIx64 " %" PRIxPTR " %s %s %d %u %ld %u %" PRIx64 " %" PRId64 "\n", t, i,
		       (long)syscall(SYS_gettid), reg, (uintptr_t)str, kind,
		       !strcmp(kind, "s") ? str : !strcmp(kind, "edge") ? edge_text[i % 10 == 4] : "-", neg, ch, idx,
		       table[idx], s7,
		       s8);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	for (long i = 0; i < w->n; i++)
		if (uprobe_target_semaphore) {
			hit(w->t, i, 1);
			w->made++;
		}
	return NULL;
}

static void go(long n, unsigned nthreads)
{
	struct worker w[16];
	long made = 0;

	if (nthreads > 16)
		nthreads = 16;
	for (unsigned t = 0; t < nthreads; t++) {
		w[t] = (struct worker){ .t = t, .n = n };
		if (pthread_create(&w[t].th, NULL, work, &w[t]))
			exit(3);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(w[t].th, NULL);
		made += w[t].made;
	}
	printf("done %ld\n", made);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void setup(void)
{
	char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (pages == MAP_FAILED || mprotect(pages + 4096, 4096, PROT_NONE))
		exit(2);
	edge63 = pages + 4096 - 63;
	memset(edge63, 'E', 63);
	edge = pages + 4096 - 4;
	memcpy(edge, "edge", 4);
	memcpy(edge_text[0], edge, 4);
	memcpy(edge_text[1], edge63, 63);
	memset(text63, 'M', 63);
	memset(text100, 'L', 100);
	for (unsigned k = 0; k < 64; k++)
		table[k] = (uint16_t)(0xf000 + 3 * k);
	uprobe_global = 0x0123456789abcdefull ^ (uint64_t)getpid();
	uprobe_short = (int16_t)(-2 - getpid() % 100);
	uprobe_byte = 0xfe;
}

int main(void)
{
	char line[128];
	long n;
	unsigned t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setup();
	printf("ready %d %" PRIxPTR " %" PRIx64 " %d %u\n", (int)getpid(), (uintptr_t)uprobe_site, uprobe_global,
	       uprobe_short, uprobe_byte);
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "go %ld %u", &n, &t) == 2) {
			go(n, t);
		} else if (sscanf(line, "force %ld", &n) == 1) {
			for (long i = 0; i < n; i++)
				hit(0, i, 0);
			printf("done %ld\n", n);
		} else if (sscanf(line, "bench %ld", &n) == 1) {
			double t0 = now_ns();
			for (long i = 0; i < n; i++)
				uprobe_site((uint64_t)i, "bench", -1, 0, table, 0, 0, -(int64_t)i);
			printf("bench %.1f\n", (now_ns() - t0) / (double)n);
		} else if (!strncmp(line, "sem", 3)) {
			printf("sem %u\n", (unsigned)uprobe_target_semaphore);
		}
	}
	return 0;
}
