/*
 * The tool's side of the tables region (lib/agg.h): per-marker lost
 * counters, and the per-thread aggregation tables of a script's probes,
 * read as the hits each entry gained since the last read
 * (tools/djp/session/agg_tables.c).
 */
#ifndef DJP_TOOLS_AGG_TABLES_H
#define DJP_TOOLS_AGG_TABLES_H

#include <stdint.h>

#include "lib/agg.h"

struct djp_tables;

/* What one entry gained since the last read. */
struct djp_agg_delta {
	unsigned plan;
	uint32_t id, tid; /* marker id; tid when the plan's key has it, else 0 */
	const uint64_t *key; /* the plan's key words, nkey of them */
	unsigned nkey;
	uint64_t count;
	int64_t sum, min, max; /* min and max: of every hit so far */
	__int128 sumsq;
	const int64_t *hist; /* nbuckets bucket counts gained, or NULL */
	unsigned nbuckets;
	/* a string key (the plan's str_arg): the text the entry's first hit
	 * copied, its pointer and its DJP_STR_* bits; NULL when none */
	const char *str;
	uint64_t str_ptr, str_bits;
};
typedef void (*djp_agg_delta_fn)(void *ctx, const struct djp_agg_delta *d);

/* Map and check a tables region from its fd (which stays the caller's);
 * NULL with errno (EINVAL: malformed). */
struct djp_tables *djp_tables_open(int fd);
void djp_tables_close(struct djp_tables *t);
/* Events of marker id the rings dropped. */
uint64_t djp_tables_lost(const struct djp_tables *t, uint32_t id);
unsigned djp_tables_nplans(const struct djp_tables *t);
/* Hand what every entry of the tables of the first nslots ring slots (the
 * ones ever claimed) gained since the last call to fn. */
void djp_tables_read(struct djp_tables *t, unsigned nslots, djp_agg_delta_fn fn, void *ctx);
/* Hits of plan p dropped because a thread's table was full. */
uint64_t djp_tables_plan_lost(const struct djp_tables *t, unsigned p, unsigned nslots);

#endif
