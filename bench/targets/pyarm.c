/*
 * Preloaded into python3.11 by bench/arm_functions.c: with DJP_BENCH_PYARM
 * set, its constructor connects one probe to every function of the main
 * program (process("/usr/bin/python3.11").function("*")), timing the
 * connect; python runs its command with them armed; at exit the probe is
 * disconnected, timed too, and one line says how long each took and how
 * many hits the functions had.  DJP_BENCH_PYARM=args connects a probe that
 * reads its functions' arguments (every parameter read from the DWARF);
 * anything else one that counts and reads none (DJP_NO_ARGS), as a
 * script that counts calls is.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "djprobe/djprobe.h"

static atomic_long hits;
static int id = -1;
static double armed_ms;

static void count(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
}

__attribute__((constructor)) static void arm(void)
{
	const char *mode = getenv("DJP_BENCH_PYARM");
	double t0;
	if (!mode)
		return;
	t0 = now_ns() / 1e6;
	id = djp_connect_at(&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), .func = "*" }, count, NULL,
			    DJP_GPR_ONLY | (strcmp(mode, "args") ? DJP_NO_ARGS : 0));
	armed_ms = now_ns() / 1e6 - t0;
}

__attribute__((destructor)) static void disarm(void)
{
	double t0;
	if (!getenv("DJP_BENCH_PYARM"))
		return;
	if (id < 0) {
		fprintf(stderr, "pyarm: connect %d\n", id);
		return;
	}
	t0 = now_ns() / 1e6;
	djp_disconnect(id);
	fprintf(stderr, "pyarm: armed %.1f ms disarmed %.1f ms hits %ld\n", armed_ms, now_ns() / 1e6 - t0,
		atomic_load(&hits));
}
