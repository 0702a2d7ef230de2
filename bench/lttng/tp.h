/* The LTTng-UST tracepoint provider of the comparison benchmark: one event
 * with the two fields of bench/trace_record.c's marker. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER djp_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "bench/lttng/tp.h"

#if !defined(DJP_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define DJP_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(djp_bench, hit,
	LTTNG_UST_TP_ARGS(int, a, long, b),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(int, a, a)
		lttng_ust_field_integer(long, b, b)
	)
)

#endif

#include <lttng/tracepoint-event.h>
