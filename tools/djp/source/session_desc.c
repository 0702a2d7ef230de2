/*
 * What both process sources make of a session with an agent: the
 * descriptor of one of its markers, and whether its process may be a
 * wrapper of the command (session_desc.h).
 */
#include <string.h>

#include "lib/mapped_file.h"
#include "lib/marker_match.h"
#include "session_desc.h"
#include "tools/djp/cmd_path.h"

void session_desc_of_marker(struct djp_ev_desc *d, uint32_t id, const struct session_marker *m)
{
	size_t plen;

	*d = (struct djp_ev_desc){
		.id = id,
		.label = m->name,
		.name = djp_marker_split(m->name, &plen), /* an SDT probe: provider:name */
		.provider = m->name,
		.format = m->format ? m->format : "",
		.object = m->object,
		.nargs = m->nargs,
		.site = m->addr,
		.site_runtime = true,
	};
	d->provider_len = (unsigned)plen;
	if (m->fmt)
		d->fmt = *m->fmt;
}

/* No probes but libc's (and the agent's own): a shell, env, runuser. */
static bool only_libc_probes(const struct session *s)
{
	for (uint32_t id = 0; id < s->nmarkers; id++)
		if (s->markers[id].known && s->markers[id].object && !djp_path_is_libc(s->markers[id].object) &&
		    !(s->markers[id].name && djp_marker_reserved(s->markers[id].name))) /* the agent's own */
			return false;
	return true;
}

bool session_may_be_wrapper(const struct session *s, const char *cmd)
{
	return only_libc_probes(s) || cmd_path_runs_other(cmd, s->program);
}
