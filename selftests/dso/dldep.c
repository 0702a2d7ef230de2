/* A library with a marker that is loaded only as the dependency of
 * dltop.c: unloaded with it, by a dlclose that never names it. */
#include "djprobe/marker.h"

__attribute__((noinline)) int dldep_run(int x)
{
	MARK(dldep_hit, "x=%d", x);
	return x + 2;
}
