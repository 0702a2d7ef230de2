/* The event source moved to tools/djp/source/source.h. */
#include "tools/djp/source/source.h"
