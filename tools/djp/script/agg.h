/*
 * Aggregation in the target (tools/djp/script/agg.c): which probes the
 * target runs itself, and the merge of what its tables gathered into the
 * script's globals.
 */
#ifndef DJP_SCRIPT_AGG_H
#define DJP_SCRIPT_AGG_H

#include <stdbool.h>

#include "run/run.h"

/* Before arming: pick the probes the target can run (p->agg), and give
 * the source their plans (src->agg_plans). */
void agg_prepare(struct script *sc, struct djp_source *src);
/* Merge what the tables gained into the globals. */
void agg_sync(struct run *r, struct script *sc, struct djp_source *src);
/* The warnings of events and hits lost, per probe (after the source's
 * finish: final). */
void agg_report_lost(struct script *sc, struct djp_source *src);
void agg_free(struct script *sc);

#endif
