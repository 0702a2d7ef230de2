/*
 * A library that uses djprobe, preloaded into a program that knows nothing
 * of it: libdjprobe.so comes in as this library's dependency, after libc
 * in the search order, where dlsym(RTLD_NEXT) from it finds no libc
 * function to stand in front of (lib/real_signal.c).  Its constructor
 * connects a probe to libc's getpid; its destructor says what it got.
 */
#include <stdatomic.h>
#include <stdio.h>

#include <djprobe/djprobe.h>

static atomic_long hits;
static int id;

static void count(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&hits, 1);
}

__attribute__((constructor)) static void preloaded_init(void)
{
	id = djp_connect_at(&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts),
						      .object = "libc.so*",
						      .func = "getpid" },
			    count, NULL, 0);
}

__attribute__((destructor)) static void preloaded_fini(void)
{
	fprintf(stderr, "preloaded: connect %d hits %ld\n", id, atomic_load(&hits));
}
