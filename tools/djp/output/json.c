/*
 * The JSON output: one object per event per line (bpftrace's -f json),
 *   {"ts_ns":N,"pid":N,"tid":N,["cpu":N,]"name":"...","args":{...}}
 * the arguments named as the format names them (argN where it names
 * none), decimal conversions as numbers and everything else as strings.
 */
#include <inttypes.h>

#include "output.h"
#include "tools/djp/json.h"

static void json_event(struct djp_output *o, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	FILE *out = o->out;

	fprintf(out, "{\"ts_ns\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,", ev->ts_ns, (int)ev->pid, (uint32_t)ev->tid);
	if (ev->cpu >= 0)
		fprintf(out, "\"cpu\":%d,", (int)ev->cpu);
	fputs("\"name\":", out);
	djp_json_string(out, name);
	fputs(",\"args\":", out);
	djp_output_json_args(out, ev, fmt);
	fputs("}\n", out);
}

const struct djp_output_ops djp_output_json = {
	.name = "json",
	.event = json_event,
};
