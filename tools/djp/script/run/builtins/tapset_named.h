/*
 * Tapset state kept by name or id between hits: stopwatches, queue
 * statistics, speculative output (tapset_named.c has the essay).
 */
#ifndef DJP_SCRIPT_TAPSET_NAMED_H
#define DJP_SCRIPT_TAPSET_NAMED_H

#include <stdbool.h>
#include <stdint.h>

struct tapset_named;
struct tapset_named *tapset_named_new(void);
void tapset_named_free(struct tapset_named *t);

enum stopwatch_op { SW_START, SW_STOP, SW_READ, SW_DELETE };
/* false: no room for another name (MAXMAPENTRIES); SW_READ sets *out (ns) */
bool tapset_stopwatch(struct tapset_named *t, enum stopwatch_op op, const char *name, int64_t now_ns, int64_t *out);

enum queue_op { QS_WAIT, QS_RUN, QS_DONE, QS_START };
bool tapset_queue(struct tapset_named *t, enum queue_op op, const char *name, int64_t now_us);
enum queue_avg { QA_UTILIZATION, QA_BLOCKED, QA_WAIT_QUEUE_LENGTH, QA_SERVICE_TIME, QA_WAIT_TIME, QA_THROUGHPUT };
/* 1 and *out, 0 on stap's division by 0, -1 when full */
int tapset_queue_avg(struct tapset_named *t, enum queue_avg avg, const char *name, int64_t scale, int64_t now_us,
		     int64_t *out);

/* a new id, or -1 when full */
int64_t tapset_speculation(struct tapset_named *t);
void tapset_speculate(struct tapset_named *t, int64_t id, const char *text);
/* End speculation id: its text (malloc'd, may be NULL) when keep_text
 * (commit), else freed (discard).  NULL for an unknown id. */
char *tapset_spec_end(struct tapset_named *t, int64_t id, bool keep_text);

#endif
