/*
 * A program with one SDT probe as <sys/sdt.h> writes it, and nothing of
 * djprobe: a 1-byte nop and a note, no .markers record, no format, as the
 * probes of PostgreSQL, python and libstdc++ are.  For user_string() of SDT
 * arguments.
 *
 *   sdt_target
 *
 * Prints "ready PID", then reads commands from stdin:
 *
 *   strings N   fire sdt_target:strs N times with a string, a nonsense
 *               address and the string's length: "strings done"
 *   first N     call sdt_first N times, a function whose first
 *               instruction is its SDT probe's nop: "first done"
 *
 * and exits 0 at end of stdin.  struct sdt_text is there for typed access
 * at an SDT probe (the probe's first argument cast to it).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "selftests/sdt_note_asm.h"

/* What STAP_PROBE3 expands to, written out (no <sys/sdt.h> needed). */
#define SDT_PROBE3(provider, name, a, b, c)                                                           \
	__asm__ __volatile__("990: nop\n" SDT_NOTE_ASM(#provider, #name, "0", "8@%0 8@%1 -4@%2") SDT_BASE_ASM \
			     ::"r"(a), "r"(b), "r"(c))

/* The probe is the function's first instruction: a function probe of it
 * lands on the SDT site. */
/* A type for @cast($arg1, "struct sdt_text")->c[i] at the strs probe: its
 * DWARF is kept by this pointer, which nothing reads. */
struct sdt_text {
	char c[64];
};
struct sdt_text *sdt_text_view;

__attribute__((noinline)) void sdt_first(long x)
{
	SDT_PROBE3(sdt_target, first, x, x, x);
}

int main(void)
{
	static const char query[] = "SELECT abalance FROM pgbench_accounts WHERE aid = 42;";
	char line[256];
	long n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "strings %ld", &n) == 1) {
			for (long i = 0; i < n; i++)
				SDT_PROBE3(sdt_target, strs, query, (const char *)1, (int)strlen(query));
			printf("strings done\n");
		} else if (sscanf(line, "first %ld", &n) == 1) {
			for (long i = 0; i < n; i++)
				sdt_first(i);
			printf("first done\n");
		}
	}
	return 0;
}
