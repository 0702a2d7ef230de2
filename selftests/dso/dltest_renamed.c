/* dltest.c with its marker renamed: what a library replaced on disk by
 * another version looks like to a reader that goes by path. */
#include "djprobe/marker.h"

__attribute__((noinline)) int dltest_run(int x)
{
	MARK(dltest_renamed, "x=%d", x);
	return x + 1;
}
