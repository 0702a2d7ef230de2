/* The outputs by name, and what their implementations share (output.h). */
#include <string.h>

#include "output.h"
#include "tools/djp/json.h"

static const struct djp_output_ops *const outputs[] = {
	&djp_output_text,
	&djp_output_json,
	&djp_output_perfetto,
	&djp_output_html,
	&djp_output_ctf,
};

bool djp_output_init(struct djp_output *o, const char *name, FILE *out)
{
	for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++)
		if (!strcmp(outputs[i]->name, name)) {
			*o = (struct djp_output){ .ops = outputs[i], .out = out };
			return true;
		}
	return false;
}

void djp_output_event(struct djp_output *o, const struct djp_ev *ev)
{
	const struct djp_ev_desc *d = ev->desc;
	o->ops->event(o, ev, d->label ? d->label : d->name, &d->fmt);
}

void djp_output_strs(const struct djp_ev *ev, const char *strs[DJP_EV_MAX_ARGS],
		     char cut[][DJP_RING_STR_BOUND_MAX + 4])
{
	for (unsigned i = 0; i < ev->nargs; i++) {
		strs[i] = ev->strs[i];
		/* a string longer than the copy's bound says so: "..." */
		if (strs[i] && ev->str_cut[i]) {
			snprintf(cut[i], sizeof(cut[i]), "%s...", strs[i]);
			strs[i] = cut[i];
		}
	}
}

const char *djp_output_arg(char *buf, size_t sz, const struct djp_ev *ev, const struct djp_fmt *fmt, unsigned i,
			   const char *const strs[DJP_EV_MAX_ARGS], char key[DJP_FMT_NAME_MAX + 8], bool *number)
{
	struct djp_fmt one = { .nfields = 1 };
	const struct djp_fmt_field *f = fmt && i < fmt->nfields ? &fmt->field[i] : NULL;
	const char *val;

	if (f)
		one.field[0] = *f;
	else
		one.field[0].conv = 'x', one.field[0].width = one.field[0].prec = -1;
	one.field[0].name[0] = 0;
	djp_format_render(buf, sz, &one, 1, &ev->args[i], &strs[i]);
	val = strchr(buf, '=');
	val = val ? val + 1 : buf;
	if (f && f->name[0])
		snprintf(key, DJP_FMT_NAME_MAX + 8, "%s", f->name);
	else
		snprintf(key, DJP_FMT_NAME_MAX + 8, "arg%u", i + 1);
	*number = f && (f->conv == 'd' || f->conv == 'i' || f->conv == 'u') && !(f->flags & DJP_FMT_ZERO) &&
		  f->width < 0;
	return val;
}

void djp_output_json_args(FILE *out, const struct djp_ev *ev, const struct djp_fmt *fmt)
{
	char text[16384], key[DJP_FMT_NAME_MAX + 8];
	char cut[DJP_EV_MAX_ARGS][DJP_RING_STR_BOUND_MAX + 4];
	const char *strs[DJP_EV_MAX_ARGS];

	djp_output_strs(ev, strs, cut);
	fputc('{', out);
	for (unsigned i = 0; i < ev->nargs; i++) {
		bool number;
		const char *val = djp_output_arg(text, sizeof(text), ev, fmt, i, strs, key, &number);
		fputs(i ? "," : "", out);
		djp_json_string(out, key);
		fputc(':', out);
		if (number)
			fputs(val, out);
		else
			djp_json_string(out, val);
	}
	fputc('}', out);
}
