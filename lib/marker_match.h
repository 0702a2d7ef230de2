/*
 * Marker patterns, one rule for the engine, the agent and the tool: a
 * pattern "GLOB" matches the name of a marker of any provider (or of none:
 * a `.markers` record has none), and "PGLOB:NGLOB" an SDT probe whose
 * provider matches PGLOB and whose name matches NGLOB (fnmatch(3) globs).
 * Across the session protocol an SDT probe travels by its full name,
 * "provider:name", as `djp list` shows it; providers and names are C
 * identifiers, so the first ':' splits them.
 *
 * A marker whose name begins with DJP_MARKER_RESERVED is the library's
 * own (kernel/threads.c: a thread's begin and end): only a pattern that is
 * its name exactly matches it, never a glob, so that "*" means the
 * program's markers as before.
 *
 * djprobe.ko matches its patterns, "NAMEGLOB" and "MODGLOB:NAMEGLOB", with
 * the same code (the module's name is the provider), its globs being the
 * kernel's glob_match() through kmod/compat/fnmatch.h.
 */
#ifndef DJP_LIB_MARKER_MATCH_H
#define DJP_LIB_MARKER_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define DJP_MARKER_RESERVED "__djp_"
/* The library's markers of a thread's life (kernel/threads.c). */
#define DJP_MARKER_THREAD_BEGIN "__djp_thread_begin"
#define DJP_MARKER_THREAD_END "__djp_thread_end"

/* Is `name` (a marker's, without its provider) one of the library's own? */
static inline bool djp_marker_reserved(const char *name)
{
	return !strncmp(name, DJP_MARKER_RESERVED, sizeof(DJP_MARKER_RESERVED) - 1);
}

bool djp_marker_match(const char *pattern, const char *provider, const char *name);
/* Where a pattern's provider glob ends: the offset of its ':', or -1 when
 * it has none (a colon inside a bracket expression or after a backslash
 * is the glob's own). */
long djp_marker_pattern_colon(const char *pattern);
/* The same with the provider as provider_len bytes at `provider`, not
 * NUL-terminated (0: none), as a full name holds it. */
bool djp_marker_match_n(const char *pattern, const char *provider, size_t provider_len, const char *name);

/* A full name ("provider:name" or "name") split: its name part, and in
 * *provider_len how many bytes at its start are the provider (0: none). */
const char *djp_marker_split(const char *full, size_t *provider_len);

/* "provider:name" into buf (or the name alone when provider is NULL or
 * empty), truncated to sz; returns buf. */
char *djp_marker_full_name(char *buf, size_t sz, const char *provider, const char *name);

#endif
