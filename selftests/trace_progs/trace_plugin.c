/*
 * A shared object with a marker of its own, loaded with dlopen by
 * trace_target after tracing has begun: the `djp trace` dlopen test.
 */
#include <djprobe/marker.h>

__attribute__((visibility("default"))) void plugin_fire(long n)
{
	for (long i = 0; i < n; i++)
		MARK(tp_plugin, "n=%ld", i);
}
