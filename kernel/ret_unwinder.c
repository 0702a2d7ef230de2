/*
 * The unwinder's entry points, while return probes are connected.
 *
 * libgcc's unwinder (a C++ exception, pthread_exit or pthread_cancel,
 * backtrace()) reads the return addresses on the stack, and a diverted
 * call's holds the return trampoline's.  So while any return probe is
 * connected the engine keeps probes of its own (djp__internal_probe,
 * kernel/attach.c) on _Unwind_RaiseException, _Unwind_ForcedUnwind,
 * _Unwind_Backtrace and __cxa_begin_catch, in libgcc_s and libstdc++ or
 * the program: their handlers (kernel/retprobes.c, which has what they
 * do) give the thread's pending frames their return addresses back
 * before the unwinder reads one, and divert again those a catch keeps.
 * Counted here: the first return probe connected makes them, the last one
 * gone drops them.  Lock held.
 */
#include "kernel/engine.h"
#include "kernel/hit.h"
#include "kernel/lock.h"
#include "kernel/probes.h"

static const struct {
	const char *point;
	djp_handler_fn fn;
} unwinder_points[] = {
	{ "func:_Unwind_RaiseException@libgcc_s.so*", djp_ret_unwinder_hook },
	{ "func:_Unwind_ForcedUnwind@libgcc_s.so*", djp_ret_unwinder_hook },
	{ "func:_Unwind_Backtrace@libgcc_s.so*", djp_ret_unwinder_hook },
	{ "func:__cxa_begin_catch@libstdc++.so*", djp_ret_catch_hook },
	/* a program linked with them statically */
	{ "func:_Unwind_RaiseException", djp_ret_unwinder_hook },
	{ "func:_Unwind_ForcedUnwind", djp_ret_unwinder_hook },
	{ "func:_Unwind_Backtrace", djp_ret_unwinder_hook },
	{ "func:__cxa_begin_catch", djp_ret_catch_hook },
};
#define NHOOKS (sizeof(unwinder_points) / sizeof(unwinder_points[0]))
static int hook_ids[NHOOKS];
static int nreturn_probes;

static void hooks_drop(void)
{
	for (size_t i = 0; i < NHOOKS; i++)
		if (hook_ids[i] < -1 && !djp__internal_probe_drop(hook_ids[i]))
			hook_ids[i] = 0;
}

int djp_ret_probes_changed(int delta)
{
	DJP_LOCK_HELD();
	int err = 0;
	if (delta > 0 && !nreturn_probes) {
		for (size_t i = 0; i < NHOOKS && !err; i++) {
			struct djp_point *pt;
			if ((err = djp__point_parse(unwinder_points[i].point, &pt)) == 0)
				err = djp__internal_probe(pt, unwinder_points[i].fn, DJP_GPR_ONLY, &hook_ids[i]);
		}
		if (err) {
			hooks_drop();
			return err;
		}
	}
	nreturn_probes += delta;
	if (!nreturn_probes)
		hooks_drop();
	return 0;
}
