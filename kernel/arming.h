/*
 * The batch mechanism: bringing sites to the state their handler lists ask
 * for (kernel/arm.c), and what a batch needs from the rest of the process:
 * every core serialised after a text write (sync.c), the engine's signal
 * (engine_signal.c), no thread inside the instructions a jump covers
 * (threads_check.c), no thread that blocks SIGTRAP (sigmask.c), or every
 * other thread stopped (freeze.c).  It decides nothing about probes:
 * kernel/probes.h does, and calls down here.
 */
#ifndef DJP_KERNEL_ARMING_H
#define DJP_KERNEL_ARMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/site.h"

/* arm.c: bring every site of `sites` to the state its new list asks for,
 * in one batch (lock held; it owns the lists from then on). */
int djp_sites_apply(struct djp_site **sites, size_t n, const struct djp_handler_list **new_lists);
/* The sites another tool's breakpoint took over, given up: a jump with
 * its int3 on or in it given back to the original instructions around
 * that int3, an int3 probe whose int3 the other tool wrote the file's byte
 * over (arm.c has why).  Lock held; how many, or -errno. */
int djp_sites_yield_to_foreign_traps(void);
/* The sites given up with their handlers whose bytes are the file's again
 * (the other tool gone), in *out (to free): how many (0 when out of
 * memory).  Lock held.  Retaking them is the probe code's
 * (djp_sites_retake). */
size_t djp_sites_yielded_whole(struct djp_site ***out);
/* The object is unmapped while armed: forget its sites' state without a
 * text write (lock held). */
void djp_sites_forget(struct djp_object *o);
/* The bytes a site holds in `state` (to its trampoline `flavour`). */
void djp_site_expected(const struct djp_site *s, int state, int flavour, uint8_t *out);
/* Does every trampoline flavour of site s keep %rsp and %rbp in its view
 * (its arguments read them, or it is an instruction probe's full one),
 * not only the DJP__STACK variants?  And the registers the view of a hit
 * holds (1 << enum djp_reg): every one for a SIGTRAP's or a return's; for
 * a trampoline's, what that trampoline stores (the one whose slot the
 * hit's key lies in). */
bool djp__site_views_hold_stack(const struct djp_site *s);
uint32_t djp__view_regs(const struct djp_hit *hit);

/* sync.c, engine_signal.c */
int djp_sync_init(void);
int djp_sync_cores(void); /* 0 or -errno */
int djp_engine_signal_init(void);

/* threads_check.c: before a jump covers several instructions, whether a
 * thread is inside them (arch_poke_batch's check); and the engine signal
 * handler's part of it. */
void djp_threads_outside(struct djp_poke *p, size_t n);
/* The same while every other thread is stopped (kernel/freeze.c): _new,
 * before they are, allocates what _run needs; _run, while they are,
 * allocates nothing and returns 0 when every other thread is stopped and
 * none is inside a range of a poke marked `check`, -EAGAIN when one is
 * (or a thread's place cannot be read), -EDEADLK when one is not stopped. */
struct djp_stopped_check;
struct djp_stopped_check *djp_stopped_check_new(struct djp_poke *p, size_t n);
int djp_stopped_check_run(struct djp_stopped_check *c);
void djp_stopped_check_free(struct djp_stopped_check *c);
void djp_threads_check_answer(void *ucontext);

/* sigmask.c: the engine's signal (0: none), and the SigBlk checks. */
int djp_engine_signal(void);
int djp_check_sigblk(void);
/* One look, no waiting: -EDEADLK when a thread blocks a signal of `bad`
 * (bit sig - 1) now. */
int djp_sigblk_now(unsigned long long bad);
/* The same for the signals of `bad` (bit sig - 1). */
int djp_check_blocked(unsigned long long bad);

/* freeze.c (the freezer itself is the client's: kernel/engine.h).  For a
 * batch of pokes (sites[i] each's site): 0 when no thread blocks SIGTRAP
 * or the engine's signal (the int3 bootstrap serves), 1 when one does and
 * this thread has a freezer (djp_freeze_poke then writes the batch), or
 * -EDEADLK: one does and there is no freezer, or a site would be left an
 * int3 probe where a thread blocks SIGTRAP (remembered:
 * djp__refused_site). */
int djp_freeze_needed(struct djp_site *const *sites, const struct djp_poke *p, size_t n);
/* Stop the other threads, check that none is inside a range a poke covers
 * (retried a few times, the threads let go between), write the batch
 * whole, let them go.  0 or -errno (nothing written). */
int djp_freeze_poke(struct djp_poke *p, size_t n);

#endif
