/*
 * The recorder: what a probe does when nobody wants anything but the event.
 *
 * The agent connects this one handler to every pattern a tool asks for.  On
 * a hit it writes {timestamp, marker id, arguments} into the calling
 * thread's ring (lib/ring.h: the ring records the thread id once per slot,
 * not per event) and returns.  No formatting, no lookup by name, no lock:
 * the tool, in another process, turns ids into names with the marker table
 * the agent sends it, and arguments into text with the marker's format.
 *
 * It is connected with DJP_GPR_ONLY, so the engine serves it from the lean
 * trampoline, which saves the general registers only.  That is a promise
 * this file keeps by construction: it is compiled for general registers only
 * (the pragma below), so the compiler refuses to emit a vector or x87
 * instruction here, and everything the hit path calls is either inline in
 * a header compiled into this file (djp_ring_record, djp_clock_raw) or a
 * system call.  No libc string function is called: the argument fetch
 * below is written out instead of using djp_hit_arg or memcpy, and the
 * only helpers it reaches in other files are the ring's slow paths (the
 * first event of a thread, a nested record, the %s copy through
 * process_vm_readv), which lib/ring.c keeps to general registers too.
 * One cold path is the exception, and saves the vector state around
 * itself: matching a marker against the string patterns (fnmatch), on
 * the first hit of a marker id after a pattern with strings came
 * (match_string_patterns).  selftests/test_lean_reach.c reads the built
 * library and holds all of it: no vector instruction, and no call into
 * libc but system call wrappers and their like, in what a lean hit reaches.
 *
 * %s arguments: which arguments are strings is decided by the marker's
 * format (conversion 's'), and, for SDT probes, whose arguments have no
 * format, by the tool: a pattern may come with the arguments its markers
 * should have copied as strings (a script's user_string($arg2)).  The ring
 * copies them inline, bounded and fault-safe (lib/ring.c, kernel/
 * safe_copy.c).  The answer per marker id is computed once and cached in
 * the recorder's table indexed by id, tagged with the generation of the
 * pattern list it was computed from: a pattern added later bumps the
 * generation, and a stale entry is recomputed at its next hit.  Racing
 * threads at worst compute an entry twice.  A %p, or any other conversion,
 * is a word: the recorder never dereferences an argument.
 *
 * Lost events (a full ring in discard mode) are counted by the ring per
 * thread; the recorder also counts them per marker id, in a table of its
 * own, so the summary can say which markers lost events.
 *
 * The fast entry.  A site with at most four arguments and no %s gets a
 * trampoline that loads the arguments itself (DJP_LEAN_PREFETCH) and calls
 * one of recorder_fast0..4 with them, and with a per-site plan (marker id,
 * argument count, region id) as its data: no site lookup, no location
 * decoding, and the ring's djp_ring_try_words, which checks one bound and
 * writes the words.  The count is a constant in each entry, so the
 * compiler keeps everything in call-clobbered registers.  Anything unusual
 * (a thread's first event, a sub-buffer boundary, a full ring) goes to
 * the general record.  Measured: 11 ns a recorded event over the NOP,
 * against 25 ns through the generic handler.
 *
 * Typed accesses.  A site a tool gave load programs for (LOADS: a
 * script's $p->field, kernel/agent/loads.c) runs them at each hit and
 * records their results after the arguments (DJP_EVF_LOADS).  It has a
 * fast entry of its own when its programs start from a caller-saved
 * register (a function's pointer parameter at its entry) and read no
 * string: recorder_typed0..4, and for one program whose result needs no
 * finishing recorder_typed_one0..4, with recorder_typed_chainN_D for D =
 * 0 to 3 pointers then an 8-byte member (unrolled, the loads' status
 * tested once).  Their base is the prefetched argument that holds the
 * program's register when there is one (a function's pointer parameter
 * at its entry: a register, where the register block the trampoline has
 * just stored would add a store-to-load round trip to the chain), and
 * each load is one instruction with its own fixup (arch_load_safe).
 * Measured (bench/typed_hits, a function entry with one pointer
 * parameter, the three cases side by side): one member 2.6-2.9 ns over
 * the parameter alone, a chain of three loads 6.8-7.3 ns (5 and 9-10 when
 * each load was a call of a copy routine and the base came from the
 * register block); in instructions per hit with the trampoline
 * (callgrind), 84 for the parameter alone through recorder_fast1, 100
 * with one member, 109 with the chain (125 and 159 before), against 503
 * and 615 through the general record.  Other typed sites take the
 * general record; a recorder without
 * any pays one load of a NULL pointer.
 *
 * The CPU.  A reader that wants each hit's CPU (a script's cpu(): CONNECT's
 * DJP_CONNECT_CPU) sets rec->cpu before it connects; from then on the
 * plans offer no fast entry, and the generic handler appends the CPU
 * (sched_getcpu, the rseq area's word) as the event's last word.  Sessions
 * that do not ask pay nothing.
 *
 * The registers.  A reader that wants each hit's registers (a script's
 * register(), int_arg(n), returnval(): CONNECT's DJP_CONNECT_REGS) has
 * rec->regs set before it connects, and each of its patterns connected
 * with the engine's DJP__STACK, so that even a jump-armed marker's view
 * holds %rsp and %rbp besides the caller-saved registers every view has.
 * The event then carries the registers by DWARF number, the pc and which
 * of them the view held (DJP_EVF_REGS; lib/proto.h has the layout); a
 * callee-saved register a lean view does not store is 0 and said so (a
 * script that reads one is armed as int3, whose view has them all).  With
 * DJP_CONNECT_REGS_STACK it also carries the words above the return
 * address, the arguments past the sixth at a function's entry, read with
 * the fault-safe word read the stack walker uses (kernel/unwind.c), or
 * process_vm_readv where that is off: a bad %rsp is a word said
 * unreadable, never a fault.  A script's @var variables come the same way:
 * the tool names them once (VARS: object and link-time address), the agent
 * finds where each object is loaded, and each event carries the aligned
 * word that holds each variable, read at the hit; a pointer whose string
 * the script reads (user_string(@var(...))) has that string copied too,
 * as a %s argument after the marker's own, by the ring's fault-safe copy.
 * No fast entry, as for the CPU.
 *
 * The user stack.  A pattern connected with DJP_RECORD_USTACK (a script
 * whose probe calls ubacktrace(): CONNECT's DJP_CONNECT_USTACK) gets the
 * stack handler instead: the same record, and the call stack at the hit
 * walked in the process (kernel/unwind.c: tables read at connect time, no
 * allocation, no lock) and appended to the event (DJP_EVF_USTACK), at most
 * DJP_RECORDER_STACK_DEPTH pcs, SystemTap's MAXBACKTRACE.  The walk starts
 * from %rip, %rsp and %rbp: the probe is connected with the engine's
 * DJP__STACK, so that even a jump-armed marker's view holds the last two
 * (kernel/arm.c), and %rip is the site (a return probe's view has the
 * address returned to).  It has no fast entry.  A site that two patterns
 * of the session match, one with the stack and one without, runs one of
 * the two handlers per hit, the stack one (DJP__ONCE groups a client's
 * handlers by their data, kernel/dispatch.c), so that each hit is still
 * one event.
 */
/* The promise above, held by the compiler (see the essay). */
#pragma GCC target("general-regs-only")

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel/engine.h"
#include "kernel/hit_args.h"
#include "kernel/agent/loads.h"
#include "kernel/agent/recorder.h"
#include "lib/proto.h"
#include "kernel/unwind.h"
#include "lib/agg.h"
#include "lib/format.h"
#include "lib/marker_match.h"

/* What the first n string patterns ask of marker m, added to *mask and
 * *bound.  The one place a hit reaches code not compiled here: the
 * patterns are fnmatch(3) globs, and fnmatch, strlen and memcpy are
 * libc's, which picks AVX2 or EVEX versions that write ymm0-15, or
 * ymm16-31 and k0-7 (the first hit of a marker after a later pattern
 * changed zmm16 in a traced program, before this).  The lean trampoline
 * saved none of them, so they are saved here, around the matching, as
 * kernel/rcu.c saves them around a thread's registration: about 2.7 KB of
 * stack and two XSAVEs on the first hit of a marker id after a string
 * pattern came, nothing on any other hit. */
static __attribute__((noinline, cold)) void match_string_patterns(const struct djp_recorder *rec, unsigned n,
								  const struct djp_marker_info *m, uint32_t *mask,
								  unsigned *bound)
{
	uint8_t *area = arch_vector_area_on_stack();

	if (area)
		arch_vector_save(area);
	for (unsigned i = 0; i < n; i++) {
		const struct djp_recorder_strings *w = &rec->str_pat[i].want;
		if (!djp_marker_match(rec->str_pat[i].pattern, m->provider, m->name))
			continue;
		*mask |= w->args;
		if (w->bound > *bound)
			*bound = w->bound; /* the largest asked for (0: the region's) */
	}
	if (area)
		arch_vector_restore(area);
}

/* The string arguments of marker id (m) and their bound, computed from its
 * format and the recorder's string patterns. */
static __attribute__((noinline)) uint64_t strings_compute(struct djp_recorder *rec, uint32_t id,
							  const struct djp_marker_info *m)
{
	unsigned gen = __atomic_load_n(&rec->str_gen, __ATOMIC_ACQUIRE);
	unsigned n = __atomic_load_n(&rec->nstr_pat, __ATOMIC_ACQUIRE);
	uint32_t mask = m->from_sdt ? 0 : djp_format_str_mask(m->format, m->nargs);
	unsigned bound = mask ? rec->str_bound : 0;
	uint64_t v;

	if (n)
		match_string_patterns(rec, n, m, &mask, &bound);
	if (m->nargs < 32)
		mask &= (1u << m->nargs) - 1;
	v = (uint64_t)(gen & 0xffff) << 48 | (uint64_t)(bound & 0xffff) << 32 | mask;
	if (rec->str_cache && id < DJP_RECORDER_MAX_IDS)
		__atomic_store_n(&rec->str_cache[id], v, __ATOMIC_RELAXED);
	return v;
}

static inline uint32_t strings_of(struct djp_recorder *rec, uint32_t id, const struct djp_marker_info *m,
				  unsigned *bound)
{
	uint64_t v;

	if (__builtin_expect(rec->str_cache && id < DJP_RECORDER_MAX_IDS, 1)) {
		v = __atomic_load_n(&rec->str_cache[id], __ATOMIC_RELAXED);
		if (__builtin_expect(v && (v >> 48) == (__atomic_load_n(&rec->str_gen, __ATOMIC_RELAXED) & 0xffff), 1))
			goto known;
	}
	v = strings_compute(rec, id, m);
known:
	*bound = (unsigned)(v >> 32) & 0xffff;
	return (uint32_t)v;
}

static __attribute__((noinline, cold)) void count_lost(struct djp_recorder *rec, uint32_t id)
{
	uint64_t *shared = __atomic_load_n(&rec->lost_shared, __ATOMIC_ACQUIRE);
	if (shared && id < DJP_TABLES_NIDS)
		__atomic_fetch_add(&shared[id], 1, __ATOMIC_RELAXED);
	else if (rec->lost_by_id && id < DJP_RECORDER_MAX_IDS)
		__atomic_fetch_add(&rec->lost_by_id[id], 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&rec->lost_other, 1, __ATOMIC_RELAXED);
}

extern uint64_t djp_arch_read_word(uint64_t *dst, const void *src);

_Static_assert(DJP_REGS_STACK + DJP_REGS_STACK_WORDS + DJP_VARS_MAX <= DJP_RING_MAX_REGS &&
		       DJP_REGS_VARS_BIT + DJP_VARS_MAX <= 64,
	       "the block and its info word hold every register, stack word and variable");

/* The word at addr (8-aligned), fault-safe (see the essay): true when it
 * could be read. */
static bool read_word(uint64_t addr, uint64_t *w)
{
	struct iovec local = { w, 8 }, remote = { (void *)(uintptr_t)addr, 8 };
	long got;
	int saved;

	if (addr < 4096 || addr > UINT64_MAX - 8)
		return false;
	if (djp_safe_copy_on())
		return !(djp_arch_read_word(w, (const void *)(uintptr_t)addr) >> 63);
	saved = errno;
	got = syscall(SYS_process_vm_readv, (long)syscall(SYS_getpid), &local, 1L, &remote, 1L, 0L);
	errno = saved;
	return got == 8;
}

/* The hit's registers as DJP_EVF_REGS carries them (lib/proto.h), with
 * nstack stack words from %rsp + 8 up and the words of the session's
 * variables: how many words. */
static __attribute__((noinline)) unsigned regs_block(const struct djp_recorder *rec, const struct djp_hit *hit,
						     const struct djp_site *s, unsigned nstack, uint64_t *w)
{
	uint32_t view = djp__view_regs(hit);
	uint64_t info = 1ull << DJP_REGS_PC, *v;
	unsigned nvars = __atomic_load_n(&rec->nvars, __ATOMIC_ACQUIRE);

	for (unsigned d = 0; d < DJP_REGS_PC; d++) {
		int r = arch_dwarf_reg(d);
		bool in = r != DJP_REG_NONE && (view >> r & 1);
		w[d] = in ? hit->regs.r[r] : 0;
		info |= (uint64_t)in << d;
	}
	w[DJP_REGS_PC] = s->is_return ? hit->regs.r[DJP_REG_PC] : djp_site_pc(s);
	for (unsigned j = 0; j < nstack; j++) {
		uint64_t *x = &w[DJP_REGS_STACK + j];
		if ((view >> DJP_REG_SP & 1) && read_word(hit->regs.r[DJP_REG_SP] + 8 * (j + 1), x))
			info |= 1ull << (DJP_REGS_STACK + j);
		else
			*x = 0;
	}
	v = &w[DJP_REGS_STACK + nstack];
	for (unsigned j = 0; j < nvars && j < DJP_VARS_MAX; j++)
		if (rec->var_reg[j]) { /* a register whose string is copied */
			v[j] = w[rec->var_reg[j] - 1];
			info |= (info >> (rec->var_reg[j] - 1) & 1) << (DJP_REGS_VARS_BIT + j);
		} else if (rec->var_addr[j] && read_word(rec->var_addr[j] & ~7ull, &v[j])) {
			info |= 1ull << (DJP_REGS_VARS_BIT + j);
		} else {
			v[j] = 0;
		}
	w[DJP_REGS_INFO] = info;
	return DJP_REGS_STACK + nstack + (nvars < DJP_VARS_MAX ? nvars : DJP_VARS_MAX);
}

/* One hit's event: its arguments, and pcs (npcs of them) when not NULL. */
static inline __attribute__((always_inline)) void record_hit(const struct djp_hit *hit, struct djp_recorder *rec,
							     const struct djp_site *s, const uint64_t *pcs,
							     unsigned npcs)
{
	const struct djp_marker_info *m = s->m;
	uint64_t args[DJP_RING_MAX_ARGS];
	unsigned n = m->nargs;
	uint32_t id = s->id, mask;
	unsigned bound = 0, nregs = 0, want = __atomic_load_n(&rec->regs, __ATOMIC_RELAXED);
	uint64_t regs[DJP_REGS_STACK + DJP_REGS_STACK_WORDS + DJP_VARS_MAX];
	int err;

	if (n > DJP_MARKER_MAX_ARGS)
		n = DJP_MARKER_MAX_ARGS;
	for (unsigned i = 0; i < n; i++)
		args[i] = djp_arg_fetch(hit, s, &m->arg[i]);
	mask = n ? strings_of(rec, id, m, &bound) : 0;
	if (__builtin_expect(want != 0, 0)) {
		unsigned nstack = want > 1 ? DJP_REGS_STACK_WORDS : 0, nvars;
		nregs = regs_block(rec, hit, s, nstack, regs);
		nvars = nregs - DJP_REGS_STACK - nstack; /* the ones the block holds */
		/* the strings of @var pointers, as %s arguments after the
		 * marker's (a word that could not be read is NULL) */
		for (unsigned j = 0; j < nvars && j < DJP_VARS_MAX && n < DJP_RING_MAX_ARGS; j++) {
			if (!rec->var_str[j])
				continue;
			args[n] = regs[DJP_REGS_INFO] >> (DJP_REGS_VARS_BIT + j) & 1 ? regs[DJP_REGS_STACK + nstack + j] : 0;
			mask |= 1u << n++;
			if (rec->var_str[j] > bound)
				bound = rec->var_str[j];
		}
	}
	if (__builtin_expect(__atomic_load_n(&rec->loads, __ATOMIC_ACQUIRE) != NULL, 0)) {
		const struct djp_load_set *ls = djp_loads_of(rec->loads, id, s);
		if (ls) {
			uint64_t vals[DJP_LOAD_MAX_PROGS];
			uint64_t faulted = djp_loads_run(ls, hit, s, vals, rec);
			int cpu = __atomic_load_n(&rec->cpu, __ATOMIC_RELAXED) ? sched_getcpu() : -1;
			err = djp_ring_record_loads(rec->region, id, args, n, mask, bound, cpu, nregs ? regs : NULL,
						    nregs, pcs, npcs, vals, ls->n, faulted, ls->str_mask, ls->str_bound);
			goto done;
		}
	}
	if (__builtin_expect(__atomic_load_n(&rec->cpu, __ATOMIC_RELAXED), 0))
		err = djp_ring_record_ext(rec->region, id, args, n, mask, bound, sched_getcpu(), nregs ? regs : NULL,
					  nregs, pcs, npcs);
	else
		err = djp_ring_record_ext(rec->region, id, args, n, mask, bound, -1, nregs ? regs : NULL, nregs, pcs,
					  npcs);
done:
	if (__builtin_expect(err < 0, 0)) /* full, nested or no slot: the ring counted it */
		count_lost(rec, id);
}

void djp_recorder_hit(const struct djp_hit *hit, void *data)
{
	record_hit(hit, data, djp__hit_site(hit), NULL, 0);
}

/* The stack handler (see the essay).  Only %rip, %rsp and %rbp of `at`
 * are read by the walk, so only they are written: a whole struct would
 * be a copy the compiler may make a call of. */
void djp_recorder_hit_stack(const struct djp_hit *hit, void *data)
{
	const struct djp_site *s = djp__hit_site(hit);
	uint64_t pcs[DJP_RECORDER_STACK_DEPTH];
	struct djp_regs at;
	unsigned n;

	at.r[DJP_REG_PC] = s->is_return ? hit->regs.r[DJP_REG_PC] : djp_site_pc(s);
	at.r[DJP_REG_SP] = hit->regs.r[DJP_REG_SP];
	at.r[DJP_REG_FP] = hit->regs.r[DJP_REG_FP];
	n = djp__unwind(&at, pcs, DJP_RECORDER_STACK_DEPTH);
	record_hit(hit, data, s, pcs, n);
}

/*
 * The fast entries, for a site whose lean trampoline prefetched its
 * arguments (arch_tramp_prefetches) and that has no %s: djp_list_seal
 * installs one with this site's plan as its data.  No lookup, no argument
 * decoding: the trampoline passed the values, extended as djp_hit_arg
 * would give them, in the registers of arguments three to six.
 */
static __attribute__((noinline)) void record_words(const struct djp_fast_plan *p, uint64_t a0, uint64_t a1,
						   uint64_t a2, uint64_t a3)
{
	struct djp_recorder *rec = p->data;
	if (djp_ring_record(rec->region, p->id, (const uint64_t[4]){ a0, a1, a2, a3 }, p->nargs, 0, 0) < 0)
		count_lost(rec, p->id);
}

/* One entry per argument count, so that the count is a constant and the
 * compiler keeps every value in a call-clobbered register: the entry saves
 * nothing, and calls nothing unless the ring needs its general path. */
#define FAST_ENTRY(N)                                                                                        \
	static void recorder_fast##N(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2, \
				     uint64_t a3)                                                                \
	{                                                                                                    \
		const struct djp_fast_plan *p = plan;                                                        \
		(void)hit;                                                                                   \
		if (!djp_ring_try_words(p->aux, p->id, N, a0, a1, a2, a3))                                    \
			record_words(p, a0, a1, a2, a3);                                                     \
	}
FAST_ENTRY(0)
FAST_ENTRY(1)
FAST_ENTRY(2)
FAST_ENTRY(3)
FAST_ENTRY(4)

/*
 * The typed fast entries, for such a site that has load programs (a
 * script's $p->field) that djp_loads_fast_ok accepts: the plan's aux is
 * the site's set, found once, here, at connect, not by name per hit.  The
 * event is written in place at the thread's head, as djp_ring_try_words
 * writes one: the arguments the trampoline passed, each program's result
 * straight into its word (a load is one instruction, arch_load_safe),
 * the masks only when one faulted, the block's last word,
 * then the clock and the header.  Anything unusual goes to the general
 * record, which reads the site from the hit and runs the programs again
 * (they have no effect but their results): the thread's first event, a
 * sub-buffer boundary, a full ring, and a thread where the fast copy
 * cannot serve (djp_loads_fast_copy).
 */
static inline __attribute__((always_inline)) bool record_typed(const struct djp_hit *hit,
								const struct djp_fast_plan *p, unsigned nargs,
								uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	const struct djp_load_set *ls = (const struct djp_load_set *)p->aux2;
	const uint32_t start = DJP_EV_HDR_SIZE + 8 * nargs;
	uint32_t size;
	uint64_t faulted, *e;

	if (__builtin_expect(!djp_loads_fast_copy(), 0) ||
	    /* room for the results, their masks and the block's last word */
	    !(e = djp_ring_try_reserve(p->aux, start + 8 * ls->n + 24)))
		return false;
	djp_ring_put_words(e, nargs, a0, a1, a2, a3);
	faulted = djp_loads_run_fast(ls, hit, e + start / 8);
	size = start + 8 * ls->n;
	if (__builtin_expect(faulted != 0, 0)) {
		e[size / 8] = faulted;
		e[size / 8 + 1] = 0; /* no string results (djp_loads_fast_ok) */
		size += 16;
	}
	e[size / 8] = ls->n | (uint64_t)(size + 8 - start) << 8 | (uint64_t)(faulted != 0) << 24;
	djp_ring_try_commit(e, p->id, size + 8, nargs, DJP_EVF_LOADS);
	return true;
}

/* The typed entries of one program (the two below): room for the result
 * and its fault's masks at the thread's head, the arguments written, or
 * NULL (the general record takes the hit). */
static inline __attribute__((always_inline)) uint64_t *typed_one_reserve(const struct djp_fast_plan *p,
									  unsigned nargs, uint64_t a0, uint64_t a1,
									  uint64_t a2, uint64_t a3)
{
	uint64_t *e;

	if (__builtin_expect(!djp_loads_fast_copy(), 0) ||
	    !(e = djp_ring_try_reserve(p->aux, DJP_EV_HDR_SIZE + 8 * nargs + 32)))
		return NULL;
	djp_ring_put_words(e, nargs, a0, a1, a2, a3);
	return e;
}

/* ... and their commit: the result v, or the address that faulted. */
static inline __attribute__((always_inline)) void typed_one_commit(uint64_t *e, const struct djp_fast_plan *p,
								    unsigned nargs, uint64_t v, bool faulted)
{
	const uint32_t start = DJP_EV_HDR_SIZE + 8 * nargs;

	e[start / 8] = v;
	if (__builtin_expect(faulted, 0)) {
		e[start / 8 + 1] = 1; /* faulted */
		e[start / 8 + 2] = 0;
		e[start / 8 + 3] = 1 | 32 << 8 | 1 << 24;
		djp_ring_try_commit(e, p->id, start + 32, nargs, DJP_EVF_LOADS);
	} else {
		e[start / 8 + 1] = 1 | 16 << 8; /* one result, the block's 16 bytes */
		djp_ring_try_commit(e, p->id, start + 16, nargs, DJP_EVF_LOADS);
	}
}

/* A program's base register at the hit: the prefetched argument that
 * holds it when the plan found one (p->arg, a predicted branch: the
 * chain starts from a register, not from the register block the
 * trampoline has just stored), else the register block's. */
static inline __attribute__((always_inline)) uint64_t typed_base(const struct djp_hit *hit,
								 const struct djp_fast_plan *p, unsigned nargs, int reg,
								 uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	unsigned k = p->arg;

	/* each case a branch of its own (the empty asm keeps the compiler
	 * from a cmov, which would wait for p->arg's load); the first
	 * parameter first, the common base */
	if (__builtin_expect(k == 0 && nargs > 0, 1)) {
		__asm__ volatile("");
		return a0;
	}
	if (k >= nargs)
		k = 4; /* an entry of N arguments has a plan with arg < N or none */
	switch (k) { /* 0 is above */
	case 1:
		__asm__ volatile("");
		return a1;
	case 2:
		__asm__ volatile("");
		return a2;
	case 3:
		__asm__ volatile("");
		return a3;
	default:
		return hit->regs.r[reg];
	}
}

/* A chain walked load by load from v, for the address that faulted first
 * (record_typed_one's, out of line: the entry keeps its registers). */
static __attribute__((noinline)) void typed_one_walk(const struct djp_load_prog *lp, const struct djp_fast_plan *p,
						     unsigned nargs, uint64_t *e, uint64_t v)
{
	uint64_t a;

	for (unsigned j = 0; j < lp->nderef; j++)
		if (!djp_loads_read_fast(NULL, a = v + (uint64_t)lp->off[j], 8, &v))
			goto fault;
	a = v + (uint64_t)lp->last;
	if (lp->size && !djp_loads_read_fast(NULL, a, lp->size, &a))
		goto fault;
	typed_one_commit(e, p, nargs, a, false);
	return;
fault:
	typed_one_commit(e, p, nargs, a, true);
}

/* The same for a set of one program whose result needs no finishing
 * (djp_loads_fast_one): no loop over programs, and the block's last word
 * a constant unless it faulted.  A script that reads through pointers.
 * depth: the pointers loaded first when known here, 0 to 3, with an
 * 8-byte member last (the loop unrolled, the size's switch gone, the
 * loads' status tested once: arch_load8_acc), or -1. */
static inline __attribute__((always_inline)) bool record_typed_one(const struct djp_hit *hit,
								    const struct djp_fast_plan *p, unsigned nargs,
								    int depth, uint64_t a0, uint64_t a1, uint64_t a2,
								    uint64_t a3)
{
	const struct djp_load_prog *lp = ((const struct djp_load_set *)p->aux2)->prog;
	uint64_t v, a, w, *e = typed_one_reserve(p, nargs, a0, a1, a2, a3);
	uint32_t st = 0;

	if (!e)
		return false;
	v = typed_base(hit, p, nargs, lp->base.reg, a0, a1, a2, a3);
	if (depth < 0)
		goto walk;
	w = v;
	for (int j = 0; j < depth; j++) {
		if (__builtin_expect((a = w + (uint64_t)lp->off[j]) < 4096, 0))
			goto walk;
		w = arch_load8_acc(a, &st);
	}
	if (__builtin_expect((a = w + (uint64_t)lp->last) < 4096, 0))
		goto walk;
	w = arch_load8_acc(a, &st);
	if (__builtin_expect(!st, 1)) {
		typed_one_commit(e, p, nargs, w, false);
		return true;
	}
walk:
	typed_one_walk(lp, p, nargs, e, v);
	return true;
}

/* recorder_typedN (any set), recorder_typed_oneN (one program) and
 * recorder_typed_chainN_D (one program, D pointers then an 8-byte
 * member): N arguments prefetched. */
#define TYPED_FN(NAME, N, CALL)                                                                              \
	static void NAME(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) \
	{                                                                                                    \
		const struct djp_fast_plan *p = plan;                                                        \
		if (!CALL)                                                                                   \
			djp_recorder_hit(hit, p->data);                                                      \
	}
#define TYPED_ENTRY(N)                                                                                       \
	TYPED_FN(recorder_typed##N, N, record_typed(hit, p, N, a0, a1, a2, a3))                              \
	TYPED_FN(recorder_typed_one##N, N, record_typed_one(hit, p, N, -1, a0, a1, a2, a3))                  \
	TYPED_FN(recorder_typed_chain##N##_0, N, record_typed_one(hit, p, N, 0, a0, a1, a2, a3))             \
	TYPED_FN(recorder_typed_chain##N##_1, N, record_typed_one(hit, p, N, 1, a0, a1, a2, a3))             \
	TYPED_FN(recorder_typed_chain##N##_2, N, record_typed_one(hit, p, N, 2, a0, a1, a2, a3))             \
	TYPED_FN(recorder_typed_chain##N##_3, N, record_typed_one(hit, p, N, 3, a0, a1, a2, a3))
TYPED_ENTRY(0)
TYPED_ENTRY(1)
TYPED_ENTRY(2)
TYPED_ENTRY(3)
TYPED_ENTRY(4)

/* The prefetched argument of m that holds register reg whole, or 4. */
static unsigned arg_of_reg(const struct djp_marker_info *m, int reg)
{
	for (unsigned k = 0; k < m->nargs && k < DJP_TRAMP_PREFETCH; k++)
		if (m->arg[k].kind == DJP_LOC_REG && m->arg[k].reg == reg && m->arg[k].size == 8 &&
		    !m->arg[k].reg_shift)
			return k;
	return 4;
}

/* The fast entry's plan (kernel/site.h): the recorder asks for one at
 * connect, so the engine never has to know it. */
djp_fast_entry_fn djp_recorder_plan(void *data, const struct djp_site *s, struct djp_fast_plan *plan)
{
	static const djp_fast_entry_fn entry[DJP_TRAMP_PREFETCH + 1] = { recorder_fast0, recorder_fast1,
									   recorder_fast2, recorder_fast3,
									   recorder_fast4 };
	static const djp_fast_entry_fn typed[DJP_TRAMP_PREFETCH + 1] = { recorder_typed0, recorder_typed1,
									   recorder_typed2, recorder_typed3,
									   recorder_typed4 };
	static const djp_fast_entry_fn one[DJP_TRAMP_PREFETCH + 1] = { recorder_typed_one0, recorder_typed_one1,
									 recorder_typed_one2, recorder_typed_one3,
									 recorder_typed_one4 };
	static const djp_fast_entry_fn chain[DJP_TRAMP_PREFETCH + 1][4] = {
#define CHAINS(N)                                                                                            \
	{ recorder_typed_chain##N##_0, recorder_typed_chain##N##_1, recorder_typed_chain##N##_2,                    \
	  recorder_typed_chain##N##_3 }
		CHAINS(0), CHAINS(1), CHAINS(2), CHAINS(3), CHAINS(4),
#undef CHAINS
	};
	struct djp_recorder *rec = data;
	const struct djp_marker_info *m = s->m;
	const struct djp_load_set *ls = NULL;
	unsigned bound;
	_Static_assert(DJP_TRAMP_PREFETCH == 4, "one entry per argument count");
	struct djp_loads *loads = __atomic_load_n(&rec->loads, __ATOMIC_ACQUIRE);
	if (!arch_tramp_prefetches(m->arg, m->nargs) || (m->nargs && strings_of(rec, s->id, m, &bound)) ||
	    (loads && (ls = djp_loads_of(loads, s->id, s)) && !djp_loads_fast_ok(ls)) ||
	    __atomic_load_n(&rec->cpu, __ATOMIC_RELAXED) || __atomic_load_n(&rec->regs, __ATOMIC_RELAXED))
		return NULL;
	/* aux: the region's id, which the thread's ring cache must match;
	 * aux2: a typed site's set */
	*plan = (struct djp_fast_plan){
		.data = data, .id = s->id, .nargs = m->nargs, .aux = rec->region->id, .aux2 = (uintptr_t)ls,
		.arg = DJP_TRAMP_PREFETCH
	};
	if (!ls)
		return entry[m->nargs];
	if (!djp_loads_fast_one(ls))
		return typed[m->nargs];
	plan->arg = arg_of_reg(m, ls->prog[0].base.reg);
	if (ls->prog[0].size == 8 && ls->prog[0].nderef <= 3)
		return chain[m->nargs][ls->prog[0].nderef];
	return one[m->nargs];
}

/* ---- set-up (not on the hit path) ---------------------------------------- */

struct djp_recorder *djp_recorder_create(const struct djp_ring_opts *opts)
{
	struct djp_recorder *rec = calloc(1, sizeof(*rec));
	int err;

	if (!rec)
		return NULL;
	rec->region = djp_region_create(opts);
	if (!rec->region) {
		err = errno;
		free(rec);
		errno = err;
		return NULL;
	}
	rec->lost_by_id = calloc(DJP_RECORDER_MAX_IDS, sizeof(*rec->lost_by_id));
	rec->str_cache = calloc(DJP_RECORDER_MAX_IDS, sizeof(*rec->str_cache));
	rec->str_gen = 1;
	return rec;
}

void djp_recorder_destroy(struct djp_recorder *rec)
{
	if (!rec)
		return;
	djp_region_destroy(rec->region);
	free(rec->lost_by_id);
	free(rec->str_cache);
	djp_loads_destroy(rec->loads);
	for (unsigned i = 0; i < rec->nstr_pat; i++)
		free(rec->str_pat[i].pattern);
	free(rec);
}

struct count_ctx {
	const char *pattern;
	unsigned n;
	bool strings; /* a matching marker has a %s in its format */
};

static int count_site(void *ctx, uint32_t id, const char *object, uintptr_t addr, const struct djp_marker_info *m)
{
	struct count_ctx *c = ctx;
	if (djp_marker_match(c->pattern, m->provider, m->name)) {
		c->n++;
		c->strings |= !m->from_sdt && djp_format_str_mask(m->format, m->nargs);
	}
	return 0;
}

/* A pattern's string arguments, known to every hit from the next
 * generation on (see the essay). */
static int add_strings(struct djp_recorder *rec, const char *pattern, const struct djp_recorder_strings *w)
{
	unsigned n = rec->nstr_pat;
	if (n == DJP_RECORDER_MAX_STR_PATTERNS)
		return -E2BIG;
	if (!(rec->str_pat[n].pattern = strdup(pattern)))
		return -ENOMEM;
	rec->str_pat[n].want = *w;
	__atomic_store_n(&rec->nstr_pat, n + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&rec->str_gen, rec->str_gen + 1, __ATOMIC_RELEASE);
	return 0;
}

unsigned djp_recorder_count_sites(const char *pattern)
{
	struct count_ctx c = { pattern, 0, false };
	djp__sites_foreach(count_site, &c);
	return c.n;
}

int djp_recorder_connect(struct djp_recorder *rec, const char *pattern, unsigned flags,
			 const struct djp_recorder_strings *strings, unsigned *nsites)
{
	struct count_ctx c = { pattern, 0, false };
	bool ustack = flags & DJP_RECORD_USTACK, regs = flags & (DJP_RECORD_REGS | DJP_RECORD_REGS_STACK);
	/* once: a site that two of the session's patterns match records one
	 * event per hit, not two; the stack handler has no fast entry; the
	 * registers need %rsp and %rbp in the view, as the stack walk does */
	struct djp_connect_opts o = { .plan = ustack ? NULL : djp_recorder_plan,
				      .pending = flags & DJP_RECORD_PENDING,
				      .once = true,
				      .stack = ustack || regs,
				      .kernel_trap = flags & DJP_RECORD_KERNEL_TRAP };
	djp_handler_fn fn = ustack ? djp_recorder_hit_stack : djp_recorder_hit;
	unsigned how = DJP_GPR_ONLY | (flags & DJP_RECORD_INT3 ? DJP_FORCE_INT3 : 0);
	int id, err;

	if (flags & ~(DJP_RECORD_PENDING | DJP_RECORD_USTACK | DJP_RECORD_INT3 | DJP_RECORD_REGS |
		      DJP_RECORD_REGS_STACK | DJP_RECORD_KERNEL_TRAP))
		return -EINVAL;
	/* before the connect: its plans read it (sticky, as the CPU) */
	if (regs && rec->regs < (flags & DJP_RECORD_REGS_STACK ? 2 : 1))
		__atomic_store_n(&rec->regs, flags & DJP_RECORD_REGS_STACK ? 2 : 1, __ATOMIC_RELAXED);
	if (flags & DJP_RECORD_REGS_STACK)
		(void)djp_safe_copy_enable(); /* the fast word read, if it can be had */
	/* the call-frame tables, read now: a walk in a handler reads only
	 * what is ready (once; later objects are read as they come) */
	if (ustack && !rec->stack_ready) {
		if ((err = djp__unwind_prepare()) < 0)
			return err;
		rec->stack_ready = true;
	}
	if ((err = djp__point_parse(pattern, &o.point)) < 0)
		return err;
	if (o.point) { /* points have no arguments: no strings, no count */
		o.kernel_trap = false; /* the tool reads no point's arguments */
		return djp__connect(NULL, fn, rec, how, &o);
	}
	if (strings && strings->args && (err = add_strings(rec, pattern, strings)))
		return err;
	/* the sites it matches, and whether any has a %s, in one walk */
	djp__sites_foreach(count_site, &c);
	/* strings to copy: the fast copy if the engine can have it (else the
	 * ring's system call, still fault-safe) */
	if ((strings && strings->args) || c.strings)
		(void)djp_safe_copy_enable();
	id = djp__connect(pattern, fn, rec, how, &o);
	if (id >= 0 && nsites)
		*nsites = c.n;
	return id;
}
