/* A library with markers, loaded and unloaded by the engine's dlopen tests. */
#include "djprobe/marker.h"

__attribute__((noinline)) int dltest_run(int x)
{
	MARK(dltest_hit, "x=%d", x);
	return x + 1;
}
