/* A relocatable object with markers, compiled as kernel code is (-c,
 * -mcmodel=kernel, no PIC, -D__KERNEL__): its .markers sites are R_X86_64_PC64
 * relocations against two text sections, as in a .ko.  Read by
 * test_markers_rel.c; each marker sits after some code, so that its offset
 * in its section is not 0. */
#include <djprobe/marker.h>

int kmark_counter;

void kmark_first(int a, long b)
{
	if (a > 3)
		kmark_counter += a;
	MARK(kmark_one, "a=%d b=%ld", a, b);
	kmark_counter++;
}

void kmark_second(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		kmark_counter ^= (int)i;
	MARK(kmark_two, "n=%u", n);
}

__attribute__((section(".text.unlikely"), noinline)) void kmark_cold(void)
{
	kmark_counter--;
	MARK(kmark_three);
}
