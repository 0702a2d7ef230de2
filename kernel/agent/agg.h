/*
 * Aggregation where the probe fires (kernel/agent/agg.c has the essay):
 * a session's tables region (lib/agg.h), its per-marker lost counters,
 * and the handler that updates a thread's table at each hit of a probe a
 * script only aggregates.
 */
#ifndef DJP_KERNEL_TRACE_AGG_H
#define DJP_KERNEL_TRACE_AGG_H

#include "djprobe/djprobe.h"
#include "kernel/agent/recorder.h"
#include "lib/agg.h"

struct djp_agg;

/* The largest tables region an agent makes (the rings' bound). */
#define DJP_AGG_MAX_REGION (64ull << 30)

/* What each plan's handler gets as its data. */
struct djp_agg_probe {
	struct djp_agg *agg;
	unsigned plan;
};

struct djp_agg {
	int fd;
	uint8_t *base;
	size_t size;
	struct djp_tables_hdr *hdr;
	struct djp_region *ring; /* whose slots the tables follow */
	uint32_t nslots, capacity, nplans;
	struct djp_agg_plan plan[DJP_AGG_MAX_PLANS]; /* private copies: the geometry the writers trust */
	struct djp_agg_probe probe[DJP_AGG_MAX_PLANS];
	/* a named plan's: per site id, its arguments' indexes (agg.c) */
	uint32_t *argmap[DJP_AGG_MAX_PLANS];
};

/* A tables region for the recorder's ring with these plans (their
 * geometry filled in here); its lost counters become the recorder's.
 * NULL with errno: EINVAL for a plan out of bounds. */
struct djp_agg *djp_agg_create(struct djp_recorder *rec, const struct djp_agg_plan *plans, unsigned nplans,
			       uint32_t capacity);
/* Only once no probe connected with it can run. */
void djp_agg_destroy(struct djp_agg *a);

/* Connect plan `plan`'s handler to the markers of `pattern` (flags:
 * DJP_RECORD_PENDING, DJP_RECORD_INT3): djp_connect's id or -errno. */
int djp_agg_connect(struct djp_agg *a, unsigned plan, const char *pattern, unsigned flags, unsigned *nsites);

void djp_agg_hit(const struct djp_hit *hit, void *data);

#endif
