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

#ifdef __KERNEL__
/* In the kernel the same calls are djprobe.ko's exported (GPL) API:
 * docs/KERNEL.md, and the kernel section at the end of this file. */
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DJP_BUILDING_LIB) && !defined(__KERNEL__)
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
/* Kernel only: arm with register_kprobe() at the marker's address, the
 * fallback used where no jump can be placed (docs/KERNEL.md). */
#define DJP_FORCE_KPROBE (1u << 2)
/* User space only: the handler reads no argument (djp_hit_nargs and
 * djp_hit_arg may then say none).  A function or line probe's site is
 * made without reading its function's parameters from the DWARF, which
 * for function("*") over a large program is most of the connect; a probe
 * without it that comes to such a site later has them read then. */
#define DJP_NO_ARGS (1u << 3)

/* Returns a probe id >= 0, or -ENOENT when no marker matches, -EBUSY when a
 * matching site holds bytes that are not ours (a debugger's breakpoint, a
 * uprobe), -EDEADLK when a thread blocks SIGTRAP or when called from a
 * handler or from a signal handler that interrupted this thread inside
 * djp_connect/djp_disconnect, or another -errno.  Neither call is
 * async-signal-safe: from a signal handler they work only when the thread
 * was not inside the engine, and refuse (never deadlock) when it was. */
DJP_API int djp_connect(const char *pattern, djp_handler_fn fn, void *data, unsigned flags);

/*
 * Probes at any instruction, not only at markers (docs/ENGINE.md,
 * "Instruction probes").  `where` names the points, libbpf-style: set `sz`
 * to sizeof(struct djp_point_opts), so that fields added later read as
 * zero from a caller built against this version.
 *
 *   object   a path or a glob over paths and file names ("libc.so*");
 *            NULL: the main program (with `addr` alone: whatever object
 *            holds that address)
 *   func     a glob over function symbols; with `offset`, that many bytes
 *            into each (an instruction boundary, inside the function);
 *            "GLOB@FILE:LINE" (":N-M", ":*", or "GLOB@FILE") keeps the
 *            functions DWARF says are declared in FILE, at or around LINE
 *   addr     a runtime address (when func and line are NULL)
 *   line     "file.c:123": every address the line tables give that line
 *   retprobe at the return of each function (func only): the handlers
 *            run as the call returns, with the return value in
 *            djp_hit_reg(hit, 0) and as the last argument
 *
 * djp_hit_name gives "func" at an entry, "func+0x12" inside, and the
 * hit's registers are all there: djp_hit_reg reads one by its DWARF
 * number (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15
 * r8-r15, 16 the return address column: the probed instruction's own
 * address; %rbx, %rbp and %r12-%r15 at a DJP_GPR_ONLY jump are found by
 * unwinding the handler's frames: 0 if a frame on the way has no call-frame
 * information).  A probe made here is disconnected with djp_disconnect.
 * Returns a probe id, or -ENOENT (nothing matches), -EINVAL (a point that
 * is not an instruction boundary, bad options), -ENOTSUP (an instruction
 * that cannot run out of line; a return probe in a process with a CET
 * shadow stack), -EPERM (a return probe of code no call enters: the
 * program's entry point, a .cold part), or what djp_connect returns.
 */
#ifndef __KERNEL__
struct djp_point_opts {
	size_t sz;
	const char *object;
	const char *func;
	uint64_t offset;
	uintptr_t addr;
	const char *line;
	_Bool retprobe;
};
DJP_API int djp_connect_at(const struct djp_point_opts *where, djp_handler_fn fn, void *data, unsigned flags);
#endif /* !__KERNEL__ */
/* At a marker armed as a jump: the caller-saved registers, those its
 * arguments read and the site (16); any other reads 0.  At an int3 or an
 * instruction probe: every one, as above. */
DJP_API uint64_t djp_hit_reg(const struct djp_hit *hit, unsigned dwarf_reg);

/* On return the handler is running nowhere and will never run again. */
DJP_API int djp_disconnect(int id);

DJP_API const char *djp_hit_name(const struct djp_hit *hit);
DJP_API unsigned djp_hit_nargs(const struct djp_hit *hit);
/* Argument i (0-based), sign- or zero-extended as the marker's record says;
 * 0 when i >= nargs. */
DJP_API int64_t djp_hit_arg(const struct djp_hit *hit, unsigned i);
DJP_API uintptr_t djp_hit_site(const struct djp_hit *hit);

#ifndef __KERNEL__
/* Start the agent, the thread through which the djp tool traces this
 * process (docs/TRACE.md); once: later calls return the first result, but
 * in a child of fork, which the parent's agent thread did not follow, the
 * first call starts the child's own.  libdjprobe.so's constructor calls
 * it; a program linked statically with libdjprobe.a calls it, or links
 * with -Wl,-u,djp_agent_start. */
DJP_API int djp_agent_start(void);
#else /* __KERNEL__ */
/*
 * The kernel API (djprobe.ko, docs/KERNEL.md).  The calls above keep their
 * meaning, with these differences:
 *
 *  - a pattern is "NAMEGLOB", over the names of the markers of every loaded
 *    module, or "MODGLOB:NAMEGLOB" to name the module too (glob_match());
 *    a connected probe also covers modules loaded later (armed as they come,
 *    disarmed before their text goes);
 *  - handlers run with preemption disabled, in the context that hit the
 *    marker: a task, a softirq, a hard interrupt or an NMI-like int3 trap;
 *    they must not sleep;
 *  - djp_connect and djp_disconnect sleep (they may wait for grace periods)
 *    and must not be called from a handler or atomic context;
 *  - djp_hit_reg reads the hit's struct pt_regs by DWARF number (16: the
 *    site's address); djp_hit_site is the marker's address in module text;
 *  - DJP_FORCE_KPROBE arms with register_kprobe() instead of a jump, and
 *    DJP_FORCE_INT3 means the same in the kernel; a site already armed
 *    keeps its way while it has probes, so that none of them misses a
 *    hit, and a probe that joins it runs from what is there.
 */
DJP_API const char *djp_hit_module(const struct djp_hit *hit);
DJP_API const char *djp_hit_format(const struct djp_hit *hit);

/* One marker of a loaded module, as djp_for_each_marker shows it. */
struct djp_kmarker {
	const char *module;	/* the module's name */
	const char *name;	/* the marker's name */
	const char *format;	/* printf format, "" when none */
	const char *args;	/* argument locations, "8@%rdi -4@$5" */
	unsigned long site;	/* the site's address */
	unsigned int nargs;
	unsigned int probes;	/* probes connected to it now */
	const char *how;	/* "off", "jump", "int3" (bootstrap under way),
				   "kprobe" */
};
/* Calls fn for every marker of every loaded module, under the engine's
 * lock (fn may not connect or disconnect); stops at fn's first non-zero
 * return and returns it, else 0. */
DJP_API int djp_for_each_marker(int (*fn)(const struct djp_kmarker *m, void *data), void *data);
#endif /* __KERNEL__ */

#ifdef __cplusplus
}
#endif

#endif /* DJPROBE_DJPROBE_H */
