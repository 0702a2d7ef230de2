/*
 * The stack walker a probe handler may call at a hit (kernel/unwind.c has
 * the essay): the call stack from the hit's registers, unwound in this
 * process from call-frame information read ahead of time.
 */
#ifndef DJP_KERNEL_UNWIND_H
#define DJP_KERNEL_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/arch.h"
#include "lib/unwind_table.h"

/*
 * Read the call-frame information of every loaded object, and from now on
 * of every object loaded later (djp_objects_refresh keeps the tables in
 * step with the objects), and turn on the fault-safe copy when it can be
 * had (kernel/safe_copy.c).  Arm time: allocates, reads files.  0 or
 * -errno (-EDEADLK from a handler); an object without CFI is no error
 * (walks stop at it).  The _locked form is for a caller that holds the
 * engine lock; it leaves the fault-safe copy as it is (djp_safe_copy_enable
 * is asked for outside the lock), and walks use it whenever it is on.
 */
int djp__unwind_prepare(void);
int djp_unwind_prepare_locked(void);

/*
 * The call stack at `regs`: pcs[0] = the hit's %rip, then each caller's
 * return address, outermost last; returns how many were written (at most
 * max; 0 only when max is 0).  Stops at max, at a pc no table covers or a
 * row that says nothing we can follow, at an unreadable stack word, at a
 * frame that does not move up the stack, at the outermost frame, at a
 * return address of 0.  Signal frames are stepped through (the kernel's
 * restorer, as glibc installs it): the frame after one is the interrupted
 * pc itself.  No allocation, no lock, no system call once the fault-safe
 * copy is on (else one process_vm_readv per stack word).
 *
 * regs must hold %rip, %rsp and %rbp (no other register is read).  A
 * hit's view has them at an int3 probe; an instruction probe's has all
 * but %rip, which is djp_hit_site(hit); a jump-armed marker's has %rsp and
 * %rbp when the marker's arguments read them, or when the handler was
 * connected with DJP__STACK (kernel/site.h; unwind.c says more).
 *
 * Call it from a handler (inside the engine's read-side section, which
 * keeps the tables alive while objects come and go), or where no object
 * is being unloaded.
 */
unsigned djp__unwind(const struct djp_regs *regs, uint64_t *pcs, unsigned max);

/* dlhooks.c: whether a dlopen must refresh the objects for the tables'
 * sake (prepared, lock held; from then on every refresh of the registry
 * brings the tables in step). */
bool djp_unwind_prepared(void);

/* Tests: the table covering runtime address pc (and its load bias), or
 * NULL; read stack words with process_vm_readv even when the fault-safe
 * copy is on (true), or the copy whenever it is on (false). */
const struct djp_unwind_table *djp__unwind_table_at(uint64_t pc, uint64_t *bias);
void djp__unwind_syscall_reads(bool on);

#endif
