/*
 * The text output: one line per event,
 *   SECONDS.NANOS PID TID NAME field=value ...
 * the fields as the format names and converts them (argN= where it names
 * none).  Whatever the strings hold, an event stays one line: the name and
 * the fields are escaped as C does.
 */
#include <inttypes.h>

#include "lib/escape.h"
#include "output.h"

static void text_event(struct djp_output *o, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	/* twelve strings of DJP_RING_STR_BOUND_MAX bytes fit */
	char text[16384], safe[4 * sizeof(text)], safe_name[512];
	char cut[DJP_EV_MAX_ARGS][DJP_RING_STR_BOUND_MAX + 4];
	const char *strs[DJP_EV_MAX_ARGS];

	djp_output_strs(ev, strs, cut);
	djp_format_render(text, sizeof(text), fmt, ev->nargs, ev->args, strs);
	djp_escape_c(safe, sizeof(safe), text, false);
	djp_escape_c(safe_name, sizeof(safe_name), name, false);
	fprintf(o->out, "%" PRIu64 ".%09" PRIu64 " %d %u %s%s%s\n", ev->ts_ns / 1000000000u, ev->ts_ns % 1000000000u,
		(int)ev->pid, (uint32_t)ev->tid, safe_name, safe[0] ? " " : "", safe);
}

const struct djp_output_ops djp_output_text = {
	.name = "text",
	.event = text_event,
};
