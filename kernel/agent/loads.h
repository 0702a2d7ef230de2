/*
 * The load programs a tool gave the recorder, by site (kernel/agent/
 * loads.c has the essay).
 */
#ifndef DJP_KERNEL_AGENT_LOADS_H
#define DJP_KERNEL_AGENT_LOADS_H

#include <stdint.h>

#include "kernel/hit.h"
#include "lib/load_prog.h"

#define DJP_LOADS_MAX_SETS 1024
#define DJP_LOADS_NAME_MAX 256

/* The programs of the sites named provider:name. */
struct djp_load_set {
	char provider[32];
	char name[DJP_LOADS_NAME_MAX];
	unsigned n;
	struct djp_load_prog prog[DJP_LOAD_MAX_PROGS];
	/* djp_loads_add's: the programs whose results are strings, and
	 * their largest bound */
	uint64_t str_mask;
	unsigned str_bound;
};

struct djp_loads {
	struct djp_load_set *set[DJP_LOADS_MAX_SETS];
	unsigned nsets;
	unsigned gen;
	/* by marker id (DJP_RECORDER_MAX_IDS): gen << 16 | set index + 1, 0
	 * when none; computed at the id's first hit after a set came */
	uint32_t *cache;
};

/* A new table, or NULL (errno). */
struct djp_loads *djp_loads_create(void);
void djp_loads_destroy(struct djp_loads *l);
/* Add a set (copied); 0, -E2BIG when the table is full, -ENOMEM.  Not
 * concurrent with itself (the session's lock). */
int djp_loads_add(struct djp_loads *l, const struct djp_load_set *ls);
/* The set of site s (marker id id), or NULL. */
const struct djp_load_set *djp_loads_of(struct djp_loads *l, uint32_t id, const struct djp_site *s);
/* Run the set's programs at hit: their results into vals, the faulted
 * mask returned. */
uint64_t djp_loads_run(const struct djp_load_set *ls, const struct djp_hit *hit, const struct djp_site *s,
		       uint64_t *vals);

#endif
