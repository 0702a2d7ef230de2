/*
 * A program for `djp trace -a`, of which the tests run many copies: each
 * tells when it has been armed, so that its hits can be counted exactly.
 *
 *   all_target [--hits N] [--stay]
 *
 * It prints "up PID", then waits until the first byte of its at_hit site
 * is a jump (0xe9: the tool armed it; the site is found in hit()'s code as
 * the 6-byte NOP the marker put there; it looks every 5 ms, so that a
 * hundred waiting copies leave the machine to the tool), hits the marker N times (50
 * unless said) with i = 0..N-1, and prints "armed PID US": US the
 * microseconds from the start of main to the arming it saw.  With --stay
 * it then waits for the end of its input before it exits 0; else it exits
 * 0 at once.  Nothing of djprobe but the marker: the tool injects the
 * agent.
 */
#include <djprobe/marker.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void hit(long i)
{
	MARK(at_hit, "i=%ld", i);
}

static long us_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
	static const unsigned char nop6[] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const volatile unsigned char *site = NULL, *code = (const unsigned char *)(void *)hit;
	long hits = 50, start = us_now();
	bool stay = false;
	char buf[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hits") && i + 1 < argc)
			hits = atol(argv[++i]);
		else if (!strcmp(argv[i], "--stay"))
			stay = true;
	}
	for (int i = 0; i < 64 && !site; i++)
		if (!memcmp((const void *)(code + i), nop6, sizeof(nop6)))
			site = code + i;
	if (!site) {
		fprintf(stderr, "all_target: no marker site in hit()\n");
		return 2;
	}
	printf("up %d\n", (int)getpid());
	fflush(stdout);
	/* the event it waits for: the tool's arming, which only it makes */
	while (*site != 0xe9)
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	for (long i = 0; i < hits; i++)
		hit(i);
	printf("armed %d %ld\n", (int)getpid(), us_now() - start);
	fflush(stdout);
	if (stay)
		while (read(0, buf, sizeof(buf)) > 0)
			;
	return 0;
}
