/*
 * The JSON output: one object per event per line (bpftrace's -f json),
 *   {"ts_ns":N,"pid":N,"tid":N,["cpu":N,]"name":"...","args":{...}}
 * the arguments named as the format names them (argN where it names
 * none), decimal conversions as numbers and everything else as strings.
 */
#include <inttypes.h>
#include <string.h>

#include "output.h"
#include "tools/djp/json.h"

static void json_event(struct djp_output *o, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	char text[16384];
	char cut[DJP_EV_MAX_ARGS][DJP_RING_STR_BOUND_MAX + 4];
	const char *strs[DJP_EV_MAX_ARGS];
	FILE *out = o->out;

	djp_output_strs(ev, strs, cut);
	fprintf(out, "{\"ts_ns\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,", ev->ts_ns, (int)ev->pid, (uint32_t)ev->tid);
	if (ev->cpu >= 0)
		fprintf(out, "\"cpu\":%d,", (int)ev->cpu);
	fputs("\"name\":", out);
	djp_json_string(out, name);
	fputs(",\"args\":{", out);
	for (unsigned i = 0; i < ev->nargs; i++) {
		struct djp_fmt one = { .nfields = 1 };
		const struct djp_fmt_field *f = fmt && i < fmt->nfields ? &fmt->field[i] : NULL;
		char key[48];
		const char *val;
		if (f)
			one.field[0] = *f;
		else
			one.field[0].conv = 'x', one.field[0].width = one.field[0].prec = -1;
		one.field[0].name[0] = 0;
		djp_format_render(text, sizeof(text), &one, 1, &ev->args[i], &strs[i]);
		val = strchr(text, '=');
		val = val ? val + 1 : text;
		if (f && f->name[0])
			snprintf(key, sizeof(key), "%s", f->name);
		else
			snprintf(key, sizeof(key), "arg%u", i + 1);
		fputs(i ? "," : "", out);
		djp_json_string(out, key);
		fputc(':', out);
		if (f && (f->conv == 'd' || f->conv == 'i' || f->conv == 'u') && !(f->flags & DJP_FMT_ZERO) && f->width < 0)
			fputs(val, out);
		else
			djp_json_string(out, val);
	}
	fputs("}}\n", out);
}

const struct djp_output_ops djp_output_json = {
	.name = "json",
	.event = json_event,
};
