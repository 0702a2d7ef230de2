/*
 * A program linked against the build tree's libdjprobe.so the way a user
 * links one (-L build -ldjprobe, no rpath; run with LD_LIBRARY_PATH=build),
 * through the installed headers only.  It probes a marker of its own, starts
 * the agent through the public declaration, and prints the file the dynamic
 * loader took the library from.  Exits 1 on any wrong result.
 *
 * linked_imm has unsigned constants with the top bit of their size set,
 * which the compiler records as negative numbers ("1@$-56"), for a
 * `djp trace` of this program; %d is what a small unsigned type promotes to.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include <djprobe/djprobe.h>
#include <djprobe/marker.h>

static unsigned hits;
static int64_t got;

static void on_hit(const struct djp_hit *hit, void *data)
{
	(void)data;
	hits++;
	got = djp_hit_arg(hit, 0);
}

__attribute__((noinline)) static void work(unsigned x)
{
	MARK(linked_work, "x=%u", x);
}

int main(void)
{
	Dl_info info;
	int id;

	MARK(linked_imm, "a=%d b=%d c=%u d=%lu e=%d", (uint8_t)200, (uint16_t)60000, 3000000000u,
	     (uint64_t)18000000000000000000ULL, -5);
	if (djp_agent_start()) {
		perror("linked: djp_agent_start");
		return 1;
	}
	id = djp_connect("linked_work", on_hit, NULL, 0);
	if (id < 0) {
		fprintf(stderr, "linked: djp_connect: %d\n", id);
		return 1;
	}
	work(3000000000u);
	djp_disconnect(id);
	if (hits != 1 || got != 3000000000LL) {
		fprintf(stderr, "linked: %u hits, argument %lld\n", hits, (long long)got);
		return 1;
	}
	if (!dladdr((void *)djp_connect, &info) || !info.dli_fname) {
		fprintf(stderr, "linked: dladdr found no library\n");
		return 1;
	}
	printf("%s\n", info.dli_fname);
	return 0;
}
