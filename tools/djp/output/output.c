/* The outputs by name, and what their implementations share (output.h). */
#include <string.h>

#include "output.h"

static const struct djp_output_ops *const outputs[] = {
	&djp_output_text,
	&djp_output_json,
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
