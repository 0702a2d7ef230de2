/*
 * The user backtraces' target (test_trace_ustack.c): call chains whose
 * stacks the scripts print, and what the program itself knows of them to
 * compare with.
 *
 *   main -> ut_a -> ut_b -> ut_c     ut_c holds a djprobe marker (ut_mark)
 *                                    and its entry is a function probe's;
 *                  ut_c -> ut_d      ut_d's entry no jump may cover (a loop
 *                                    goes back to its second instruction):
 *                                    a function probe there is int3
 *   main -> ut_sort -> qsort -> ... -> ut_cmp
 *                                    the comparator holds a marker
 *                                    (ut_cmp_mark): a stack through libc
 *
 * Before its first marker, each of ut_c and ut_cmp prints glibc's
 * backtrace() from where it is (libgcc's unwinder, frame 0 being the
 * return address of the backtrace() call): "bt c 0x.. 0x.. ...", "bt cmp
 * ...", and main prints where the C library is: "libc PATH".  Built at
 * -O2 with and without frame pointers (ustack_target, ustack_target-nofp).
 *
 *   ustack_target chain N | sort ...   do those in order, then exit
 *   ustack_target                       "ready PID", then the same commands
 *                                       on stdin, each answered "done"
 *
 * Nothing of djprobe is linked: the agent comes by LD_PRELOAD, as for
 * any traced command.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "djprobe/marker.h"

#define NOIPA __attribute__((noipa))

static inline __attribute__((always_inline)) void print_bt(const char *what)
{
	void *bt[64];
	int n = backtrace(bt, 64);
	printf("bt %s", what);
	for (int i = 0; i < n; i++)
		printf(" %p", bt[i]);
	printf("\n");
}

volatile int ut_sink;

/* ut_d(n): n, after a loop whose branch goes back to the instruction
 * after the first: no jump may cover its entry, which is an int3 probe's
 * then.  Written out, with its call-frame information, so that no
 * compiler puts anything before the loop. */
int ut_d(int n);
__asm__(".text\n"
	".globl ut_d\n"
	".type ut_d, @function\n"
	"ut_d:\n"
	".cfi_startproc\n"
	"mov %edi, %eax\n"
	"1: sub $1, %edi\n"
	"jg 1b\n"
	"ret\n"
	".cfi_endproc\n"
	".size ut_d, . - ut_d\n");

NOIPA int ut_c(int d)
{
	static int printed;
	int k = 1;
	if (!printed++)
		print_bt("c");
	MARK(ut_mark, "d=%d", d);
	k = ut_d((int)k);
	ut_sink += d;
	return d + k;
}

NOIPA int ut_b(int d)
{
	int r = ut_c(d + 1);
	__asm__ volatile("" : "+r"(r)); /* no tail call: b keeps its frame */
	return r + 1;
}

NOIPA int ut_a(int d)
{
	int r = ut_b(d + 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

NOIPA static int ut_cmp(const void *x, const void *y)
{
	static int printed;
	int a = *(const int *)x, b = *(const int *)y;
	if (!printed++)
		print_bt("cmp");
	MARK(ut_cmp_mark, "a=%d b=%d", a, b);
	return (a > b) - (a < b);
}

NOIPA int ut_sort(void)
{
	int v[8] = { 5, 3, 7, 1, 8, 2, 6, 4 };
	qsort(v, 8, sizeof(v[0]), ut_cmp);
	__asm__ volatile("" ::: "memory");
	return v[0];
}

/* One command; false when it is none. */
static inline __attribute__((always_inline)) int command(char *const *w, int n)
{
	if (n >= 2 && !strcmp(w[0], "chain")) {
		for (long i = atol(w[1]); i > 0; i--)
			ut_a(0);
		return 2;
	}
	if (n >= 1 && !strcmp(w[0], "sort")) {
		ut_sort();
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	Dl_info info;
	char line[256];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (dladdr((void *)qsort, &info) && info.dli_fname)
		printf("libc %s\n", info.dli_fname);
	if (argc > 1) {
		for (int i = 1, k; i < argc; i += k)
			if (!(k = command(argv + i, argc - i)))
				return 2;
		return 0;
	}
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		char *w[4];
		int n = 0;
		for (char *t = strtok(line, " \n"); t && n < 4; t = strtok(NULL, " \n"))
			w[n++] = t;
		if (n && command(w, n))
			printf("done\n");
	}
	return 0;
}
