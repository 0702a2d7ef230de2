/* Loaded with dlopen; brings libdjp_dldep.so in as its dependency. */
#include "djprobe/marker.h"

int dldep_run(int x);

__attribute__((noinline)) int dltop_run(int x)
{
	MARK(dltop_hit, "x=%d", x);
	return dldep_run(x);
}
