/*
 * The ABI matrix source: compiled as C and C++, by gcc and clang, into an
 * executable, a PIE, a static executable and a shared library, at -O0 and
 * -O2 (selftests/abi.mk).  test_markers_abi.c holds the expected markers.
 */
#include <djprobe/marker.h>
#include <stdint.h>

#ifdef __cplusplus
#define ABI_EXPORT extern "C" __attribute__((visibility("default"), noinline))
#else
#define ABI_EXPORT __attribute__((visibility("default"), noinline))
#endif

static long abi_total;

ABI_EXPORT void abi_plain(void)
{
	MARK(abi_plain);
}

ABI_EXPORT void abi_format_only(void)
{
	MARK(abi_format_only, "no arguments here");
}

ABI_EXPORT int abi_ints(signed char a, unsigned short b, int c, unsigned long long d)
{
	MARK(abi_ints, "a=%hhd b=%hu c=%d d=%llu", a, b, c, d);
	return a + b + c + (int)d;
}

ABI_EXPORT void abi_pointer(const char *s, const void *p)
{
	MARK(abi_pointer, "s=%s p=%p", s, p);
}

ABI_EXPORT void abi_global(long x)
{
	abi_total += x;
	MARK(abi_global, "total=%ld x=%ld imm=%d", abi_total, x, 42);
}

/* Arrays and string literals go as pointers, as in a function call. */
ABI_EXPORT int abi_array(int x)
{
	char buf[16] = "buffer";
	const char cbuf[] = "const";
	int ints[3] = { x, x + 1, x + 2 };
	MARK(abi_array, "buf=%s lit=%s cbuf=%s ints=%p", buf, "literal", cbuf, ints);
	return buf[0] + cbuf[0] + ints[2];
}

#ifndef ABI_SHARED
int main(int argc, char **argv)
{
	abi_plain();
	abi_format_only();
	abi_pointer(argv[0], &argc);
	abi_global(argc);
	abi_array(argc);
	return abi_ints(-1, 2, argc, 4) == 0;
}
#endif
