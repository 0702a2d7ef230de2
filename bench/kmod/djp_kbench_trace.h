/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bench module's own tracepoints (djp_kbench.c), one per way a
 * tracepoint is measured, each in its own loop beside a marker's: off (the
 * static key's NOP), with an empty probe (register_trace_kb_tp_probe), and
 * as a trace event written to ftrace's ring buffer (enabled in tracefs,
 * events/djp_kbench/kb_tp_event).  They carry the loop counter, as the
 * markers do.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM djp_kbench

#if !defined(DJP_KBENCH_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define DJP_KBENCH_TRACE_H

#include <linux/tracepoint.h>

DECLARE_EVENT_CLASS(kb_tp_class,
	TP_PROTO(u64 i),
	TP_ARGS(i),
	TP_STRUCT__entry(__field(u64, i)),
	TP_fast_assign(__entry->i = i;),
	TP_printk("i=%llu", __entry->i)
);

DEFINE_EVENT(kb_tp_class, kb_tp_off, TP_PROTO(u64 i), TP_ARGS(i));
DEFINE_EVENT(kb_tp_class, kb_tp_probe, TP_PROTO(u64 i), TP_ARGS(i));
DEFINE_EVENT(kb_tp_class, kb_tp_event, TP_PROTO(u64 i), TP_ARGS(i));

#endif

/* Kbuild gives -I$(src): the header is found next to the module's source. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE djp_kbench_trace
#include <trace/define_trace.h>
