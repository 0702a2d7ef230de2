/*
 * Marker patterns (marker_match.h).  The only work is finding where a
 * pattern's provider part ends: the first ':' that is not inside a
 * bracket expression, where "[[:alpha:]]" has colons of its own.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "marker_match.h"
#ifndef __KERNEL__ /* user space's functions may be C++ (kmod/Kbuild builds this file too) */
#include "lib/cxx_name.h"
#endif

long djp_marker_pattern_colon(const char *p)
{
	for (const char *c = p; *c; c++) {
		if (*c == '\\' && c[1]) {
			c++;
		} else if (*c == '[') {
			/* a bracket expression: to its ']' (one right after the
			 * '[' or '[!' is a member), skipping "[:class:]" */
			const char *e = c + 1;
			if (*e == '!' || *e == '^')
				e++;
			if (*e == ']')
				e++;
			while (*e && *e != ']') {
				if (e[0] == '[' && e[1] == ':') {
					const char *end = strstr(e + 2, ":]");
					e = end ? end + 2 : e + 1;
				} else {
					e++;
				}
			}
			if (*e)
				c = e; /* no ']': the '[' is a plain character */
		} else if (*c == ':') {
			return c - p;
		}
	}
	return -1;
}

#ifndef __KERNEL__
static int match_glob(const char *glob, const char *name)
{
	return fnmatch(glob, name, 0);
}

/* glob (NAME or NAME%return) against a function site's name (SYMBOL, or
 * SYMBOL%return) when SYMBOL is a C++ function's */
static bool cxx_site_match(const char *glob, const char *name)
{
	const char *gr = strstr(glob, "%return"), *nr = strstr(name, "%return");
	char g[256], n[512];

	if (!gr != !nr || (gr && gr[7]) || (nr && nr[7]))
		return false;
	snprintf(g, sizeof(g), "%.*s", (int)(gr ? (size_t)(gr - glob) : strlen(glob)), glob);
	snprintf(n, sizeof(n), "%.*s", (int)(nr ? (size_t)(nr - name) : strlen(name)), name);
	return djp_cxx_glob_match(g, n, match_glob);
}
#endif

bool djp_marker_match_n(const char *pattern, const char *provider, size_t provider_len, const char *name)
{
	long colon = djp_marker_pattern_colon(pattern);
	char pglob[256], prov[256];

	/* the library's own markers (kernel/threads.c): their name, spelled
	 * out, and no glob */
	if (djp_marker_reserved(name))
		return !provider_len && !strcmp(pattern, name);
	if (colon < 0)
		return fnmatch(pattern, name, 0) == 0;
	if (!provider || !provider_len || (size_t)colon >= sizeof(pglob) || provider_len >= sizeof(prov))
		return false;
	memcpy(pglob, pattern, (size_t)colon);
	pglob[colon] = 0;
	memcpy(prov, provider, provider_len);
	prov[provider_len] = 0;
	if (fnmatch(pglob, prov, 0))
		return false;
	if (!fnmatch(pattern + colon + 1, name, 0))
		return true;
#ifndef __KERNEL__
	/* a function's site, named by its symbol: a C++ one by its own or
	 * qualified name too (lib/cxx_name.c), "%return" kept apart */
	return !strcmp(prov, "func") && name[0] == '_' && name[1] == 'Z' && cxx_site_match(pattern + colon + 1, name);
#else
	return false;
#endif
}

bool djp_marker_match(const char *pattern, const char *provider, const char *name)
{
	return djp_marker_match_n(pattern, provider, provider ? strlen(provider) : 0, name);
}

const char *djp_marker_split(const char *full, size_t *provider_len)
{
	const char *colon = strchr(full, ':');
	*provider_len = colon ? (size_t)(colon - full) : 0;
	return colon ? colon + 1 : full;
}

char *djp_marker_full_name(char *buf, size_t sz, const char *provider, const char *name)
{
	if (provider && *provider)
		snprintf(buf, sz, "%s:%s", provider, name);
	else
		snprintf(buf, sz, "%s", name);
	return buf;
}
