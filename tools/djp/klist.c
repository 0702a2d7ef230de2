/*
 * `djp list -k [--json] [PATTERN...]`: the markers of loaded kernel
 * modules, as /dev/djprobe lists them (kdev_client.c).
 *
 * One line per marker, sorted by module then address:
 *   MODULE:NAME ADDRESS ARMING PROBES "FORMAT" ARGS
 * ARMING is how the site is armed now ("off", "jump", "int3" while the
 * bootstrap is under way, "kprobe"), PROBES how many probes are connected
 * to it (every tool's and every kernel caller's).  PATTERNs ("NAMEGLOB" or
 * "MODGLOB:NAMEGLOB") keep only the markers they match.  Without the
 * device (djprobe.ko not loaded) or as a user who may not open it, one
 * line on stderr and status 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "kdev_client.h"
#include "lib/escape.h"

static int by_module_then_site(const void *a, const void *b)
{
	const struct kmarker *x = *(const struct kmarker *const *)a, *y = *(const struct kmarker *const *)b;
	int c = strcmp(x->m.module, y->m.module);
	return c ? c : x->m.site < y->m.site ? -1 : x->m.site > y->m.site;
}

static bool wanted(const struct kmarker *m, char **patterns, int n)
{
	for (int i = 0; i < n; i++)
		if (kdev_matches(m, patterns[i]))
			return true;
	return n == 0;
}

static void put_json(FILE *out, const struct kmarker *m)
{
	fputs("{\"module\":", out);
	djp_json_string(out, m->m.module);
	fputs(",\"name\":", out);
	djp_json_string(out, m->m.name);
	fprintf(out, ",\"address\":\"0x%" PRIx64 "\",\"nargs\":%u,\"probes\":%u,\"arming\":", (uint64_t)m->m.site,
		m->m.nargs, m->m.probes);
	djp_json_string(out, m->m.how);
	fputs(",\"format\":", out);
	djp_json_string(out, m->m.format);
	fputs(",\"args\":", out);
	djp_json_string(out, m->m.args);
	fputs("}\n", out);
}

int djp_cmd_klist(int argc, char **argv, bool json)
{
	struct kdev k;
	char err[512], fmt[4 * sizeof(k.v->m.format)];
	const struct kmarker **rows;
	size_t n = 0;

	if (kdev_open(&k, err, sizeof(err))) {
		fprintf(stderr, "djp: list -k: %s\n", err);
		return 1;
	}
	if (!(rows = calloc(k.n ? k.n : 1, sizeof(*rows)))) {
		fprintf(stderr, "djp: out of memory\n");
		kdev_close(&k);
		return 1;
	}
	for (size_t i = 0; i < k.n; i++)
		if (wanted(&k.v[i], argv, argc))
			rows[n++] = &k.v[i];
	qsort(rows, n, sizeof(*rows), by_module_then_site);
	for (size_t i = 0; i < n; i++) {
		const struct kmarker *m = rows[i];
		if (json) {
			put_json(stdout, m);
			continue;
		}
		djp_escape_c(fmt, sizeof(fmt), m->m.format, false);
		printf("%s  0x%" PRIx64 "  %s  %u  \"%s\"%s%s\n", m->full, (uint64_t)m->m.site, m->m.how, m->m.probes, fmt,
		       m->m.args[0] ? "  " : "", m->m.args);
	}
	if (!n)
		fprintf(stderr, "djp: list -k: %s\n", argc ? "no loaded module has a marker that matches" : "no loaded module has markers");
	free(rows);
	kdev_close(&k);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
