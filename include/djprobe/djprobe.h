/*
 * <djprobe/djprobe.h>: connect handlers to markers in the running process.
 *
 *   static void on_hit(const struct djp_hit *hit, void *data)
 *   {
 *           printf("%s %lld\n", djp_hit_name(hit), (long long)djp_hit_arg(hit, 0));
 *   }
 *   int id = djp_connect("req_*", on_hit, NULL, 0);
 *   ...
 *   djp_disconnect(id);
 *
 * Nothing needs to be called first: the first connect initialises the engine.
 * A pattern is a glob (fnmatch) over marker names in every loaded object,
 * including objects loaded later with dlopen.  Several probes may share a
 * marker; one probe covers every site that matches.
 *
 * Handlers run in the thread that hit the marker, in a signal-like context:
 * they must not take locks that the instrumented code may hold.  A marker hit
 * from inside a handler is not reported (it is counted as a miss).
 *
 * Every int function returns >= 0 on success or -errno (and sets errno).
 */
#ifndef DJPROBE_DJPROBE_H
#define DJPROBE_DJPROBE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DJP_BUILDING_LIB)
#define DJP_API __attribute__((visibility("default")))
#else
#define DJP_API
#endif

struct djp_hit;
typedef void (*djp_handler_fn)(const struct djp_hit *hit, void *data);

/* The handler promises not to touch vector or x87 state (no libc string or
 * stdio calls, no floating point): the lean trampoline serves it. */
#define DJP_GPR_ONLY (1u << 0)
/* Arm as an int3 probe even where a jump could be placed. */
#define DJP_FORCE_INT3 (1u << 1)

/* Returns a probe id >= 0, or -ENOENT when no marker matches, -EBUSY when a
 * matching site holds bytes that are not ours (a debugger's breakpoint, a
 * uprobe), -EDEADLK when a thread blocks SIGTRAP or when called from a
 * handler or from a signal handler that interrupted this thread inside
 * djp_connect/djp_disconnect, or another -errno.  Neither call is
 * async-signal-safe: from a signal handler they work only when the thread
 * was not inside the engine, and refuse (never deadlock) when it was. */
DJP_API int djp_connect(const char *pattern, djp_handler_fn fn, void *data, unsigned flags);

/* On return the handler is running nowhere and will never run again. */
DJP_API int djp_disconnect(int id);

DJP_API const char *djp_hit_name(const struct djp_hit *hit);
DJP_API unsigned djp_hit_nargs(const struct djp_hit *hit);
/* Argument i (0-based), sign- or zero-extended as the marker's record says;
 * 0 when i >= nargs. */
DJP_API int64_t djp_hit_arg(const struct djp_hit *hit, unsigned i);
DJP_API uintptr_t djp_hit_site(const struct djp_hit *hit);

/* Start the agent, the thread through which the djp tool traces this
 * process (docs/TRACE.md); once: later calls return the first result.
 * libdjprobe.so's constructor calls it; a program linked statically with
 * libdjprobe.a calls it, or links with -Wl,-u,djp_agent_start. */
DJP_API int djp_agent_start(void);

#ifdef __cplusplus
}
#endif

#endif /* DJPROBE_DJPROBE_H */
