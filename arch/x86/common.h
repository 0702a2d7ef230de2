/* Private to arch/x86/: helpers shared by its files. */
#ifndef DJP_ARCH_X86_COMMON_H
#define DJP_ARCH_X86_COMMON_H

#include <stddef.h>
#include <stdint.h>

struct djp_maps {
	size_t n;
	struct djp_map {
		uintptr_t lo, hi;
		int prot;
	} *m;
};
/* Snapshot of /proc/self/maps (sorted); free(ms->m) when done. */
int djp_maps_read(struct djp_maps *ms);

#endif
