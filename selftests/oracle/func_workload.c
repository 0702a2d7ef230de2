/*
 * The oracle's function-probe workload: calls of libc and libz functions
 * with fixed arguments (the allocator, stdio, setjmp and longjmp, zlib),
 * for `djp trace -x` (func:NAME@OBJECT, its %return) and bpftrace's
 * uprobe/uretprobe, one after the other.
 *
 *   func_workload N
 *
 * loads libz, prints "ready PID" and waits for a line on stdin: both
 * tools attach to the waiting process, so each sees the same calls, those
 * of the N rounds that follow, and nothing of the start-up.  Then it
 * prints "done" and exits 0.  libz is reached through dlopen so that the
 * program needs no zlib headers to build.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*compress2_fn)(unsigned char *, unsigned long *, const unsigned char *, unsigned long, int);
typedef int (*uncompress_fn)(unsigned char *, unsigned long *, const unsigned char *, unsigned long);
typedef unsigned long (*crc32_fn)(unsigned long, const unsigned char *, unsigned int);

volatile long rounds_done;
static jmp_buf jb;

/* setjmp, then three longjmps back to it, with 1, 2 and 3 */
__attribute__((noinline)) static void jumps(void)
{
	int v = setjmp(jb);
	if (v < 3)
		longjmp(jb, v + 1);
}

__attribute__((noinline)) void oracle_round(long r)
{
	rounds_done += r; /* oracle: the line probe */
}

/* A line of several rows in the line table (built at -O0: the prologue,
 * the body, the epilogue), entered once a call. */
__attribute__((noinline, optimize("O0"))) long oracle_rows(long r) { return r * 3 + rounds_done; } /* oracle: rows */

int main(int argc, char **argv)
{
	static unsigned char src[4096], packed[8192], back[4096];
	long rounds = argc > 1 ? atol(argv[1]) : 10;
	compress2_fn z_compress2;
	uncompress_fn z_uncompress;
	crc32_fn z_crc32;
	char line[64];
	void *z;

	z = dlopen("libz.so.1", RTLD_NOW);
	if (!z) {
		fprintf(stderr, "func_workload: %s\n", dlerror());
		return 1;
	}
	z_compress2 = (compress2_fn)dlsym(z, "compress2");
	z_uncompress = (uncompress_fn)dlsym(z, "uncompress");
	z_crc32 = (crc32_fn)dlsym(z, "crc32");
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)("oracle"[i % 6] + i / 512);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (long r = 0; r < rounds; r++) {
		size_t n = 16 + 8 * (size_t)r;
		char *a = malloc(n), *b = calloc(r + 1, 24), *c;
		unsigned long plen = sizeof(packed), blen = sizeof(back);
		FILE *f;

		memset(a, 'a' + (int)r, n - 1);
		a[n - 1] = 0;
		c = realloc(b, 100 + (size_t)r);
		if (strlen(a) != n - 1)
			return 1;
		memcpy(c, a, 32);
		f = fopen(r % 2 ? "/dev/null" : "/proc/self/nonexistent", "r");
		if (f)
			fclose(f);
		if (z_compress2(packed, &plen, src, sizeof(src) - (unsigned long)r, (int)(r % 10)) != 0 ||
		    z_uncompress(back, &blen, packed, plen) != 0 || blen != sizeof(src) - (unsigned long)r)
			return 1;
		if (z_crc32(0, back, (unsigned int)blen) == 0)
			return 1;
		free(c);
		free(a);
		jumps();
		oracle_round(r);
		if (oracle_rows(r) < 0)
			return 1;
	}
	printf("done\n");
	return 0;
}
