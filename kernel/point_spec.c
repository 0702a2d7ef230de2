/*
 * Points as the user gives them: a function glob with an offset, a
 * return, an address, a "file:line", in the objects a glob names.  Parsed
 * from a `func:`/`line:` pattern (the agent's spelling) or checked from
 * djp_connect_at's options, and kept whole in the probe: kernel/points.c
 * resolves them again in every object an attach looks at.  Nothing here
 * reads an object or takes the engine lock.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/engine.h"
#include "kernel/probes.h"

void djp_point_free(struct djp_point *pt)
{
	if (!pt)
		return;
	free(pt->object);
	free(pt->func);
	free(pt->glob);
	free(pt->line);
	free(pt);
}

bool djp_point_is_return(const struct djp_point *pt)
{
	return pt && pt->retprobe;
}

/*
 * The point's function glob, the first len bytes of func.  It may carry
 * SystemTap's source qualifier, "GLOB@FILE", "GLOB@FILE:LINE"
 * (lib/func_source.c): the glob is the part before the '@' (at most
 * GLOB_MAX - 1 bytes).  0, -EINVAL or -ENOMEM.
 */
#define GLOB_MAX 512
static int point_set_func(struct djp_point *pt, const char *func, size_t len)
{
	const char *at = memchr(func, '@', len);
	size_t n = at ? (size_t)(at - func) : len;

	if (!(pt->func = strndup(func, len)) || !(pt->glob = strndup(func, n)))
		return -ENOMEM;
	pt->has_src = at != NULL;
	if (!n || n >= GLOB_MAX)
		return -EINVAL;
	return pt->has_src ? djp_src_filter_parse(pt->func + n + 1, &pt->src) : 0;
}

/* ---- points by pattern, for the agent ------------------------------------ */

/*
 * The spelling `djp trace` and the agent's CONNECT use for points, beside
 * marker patterns (docs/TRACE.md):
 *
 *   func:GLOB            the entry of every function GLOB matches
 *   func:GLOB+OFFSET     OFFSET bytes into each (decimal or 0x)
 *   func:GLOB%return     their returns
 *   func:GLOB@FILE[:LINE]@OBJECT   only the functions declared in FILE
 *                        (at or around LINE; N-M, *), SystemTap's
 *                        function("GLOB@FILE:LINE"); OBJECT may be empty
 *                        for the main program (lib/func_source.c)
 *   line:FILE:LINE       the addresses of a source line
 *   ...@OBJECT           in the objects OBJECT (a path or file-name glob)
 *                        matches, instead of the main program
 *
 * The sites these make are named "func:NAME" or "func:NAME+0x12" as a
 * marker PROVIDER:NAME is, so that the same pattern matches their events.
 */
int djp__point_parse(const char *pattern, struct djp_point **out)
{
	struct djp_point *pt;
	const char *at, *body;
	char *end;
	size_t n;

	*out = NULL;
	if (strncmp(pattern, "func:", 5) && strncmp(pattern, "line:", 5))
		return 1;
	if (!(pt = calloc(1, sizeof(*pt))))
		return -ENOMEM;
	body = pattern + 5;
	at = strrchr(body, '@');
	n = at ? (size_t)(at - body) : strlen(body);
	/* "func:GLOB@FILE:LINE@OBJECT": the last '@' is the object's, and
	 * after a source qualifier an empty OBJECT is the main program */
	if (at && !at[1] && memchr(body, '@', n))
		at = NULL;
	else if (at && !(pt->object = strdup(at + 1)))
		goto enomem;
	if (pattern[0] == 'l') {
		if (!(pt->line = strndup(body, n)))
			goto enomem;
		if (!strchr(pt->line, ':'))
			goto inval;
	} else {
		const char *plus = memchr(body, '+', n), *pct = memchr(body, '%', n);
		size_t fn = plus ? (size_t)(plus - body) : pct ? (size_t)(pct - body) : n;
		int e = point_set_func(pt, body, fn);
		if (e == -ENOMEM)
			goto enomem;
		if (e)
			goto inval;
		if (plus) {
			errno = 0;
			pt->offset = strtoull(plus + 1, &end, 0);
			if (errno || end == plus + 1 || end != body + n)
				goto inval;
		} else if (pct) {
			if ((size_t)(body + n - pct) != 7 || strncmp(pct, "%return", 7))
				goto inval;
			pt->retprobe = true;
		}
	}
	if (!(pt->func ? pt->func[0] : pt->line[0]) || (pt->object && !pt->object[0]))
		goto inval;
	*out = pt;
	return 0;
inval:
	djp_point_free(pt);
	return -EINVAL;
enomem:
	djp_point_free(pt);
	return -ENOMEM;
}

/* ---- the public entry --------------------------------------------------- */

static char *dup_or_null(const char *s, int *err)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*err = -ENOMEM;
	return d;
}

int djp__point_make(const struct djp_point_opts *where, struct djp_point **out)
{
	struct djp_point_opts o = { 0 };
	struct djp_point *pt;
	int err = 0;

	if (!where || where->sz < offsetof(struct djp_point_opts, object))
		return -EINVAL;
	/* a caller built against a later version: what we do not know must
	 * be zero (libbpf's OPTS_VALID) */
	for (size_t i = sizeof(o); i < where->sz; i++)
		if (((const uint8_t *)where)[i])
			return -EINVAL;
	memcpy(&o, where, where->sz < sizeof(o) ? where->sz : sizeof(o));
	/* exactly one of func, line, addr; offset and retprobe with func */
	if ((!!o.func + !!o.line + !!o.addr) != 1 || (o.offset && !o.func) || (o.retprobe && (!o.func || o.offset)))
		return -EINVAL;
	if (!(pt = calloc(1, sizeof(*pt))))
		return -ENOMEM;
	if (o.func)
		err = point_set_func(pt, o.func, strlen(o.func));
	pt->object = dup_or_null(o.object, &err);
	pt->line = dup_or_null(o.line, &err);
	pt->offset = o.offset;
	pt->addr = o.addr;
	pt->retprobe = o.retprobe;
	if (err) {
		djp_point_free(pt);
		return err;
	}
	*out = pt;
	return 0;
}
