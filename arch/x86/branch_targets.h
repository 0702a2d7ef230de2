/*
 * Every direct branch target of an object's code (branch_targets.c): what
 * may land inside a run of instructions a jump would cover.
 */
#ifndef DJP_ARCH_X86_BRANCH_TARGETS_H
#define DJP_ARCH_X86_BRANCH_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The link-time addresses every direct jmp, jcc and call of the file's
 * executable sections goes to, sorted (repeats kept); 0, or -errno. */
int djp_branch_targets_of_file(const char *path, uint64_t **out, size_t *n);
/* Is a target strictly between lo and hi? */
bool djp_branch_target_inside(const uint64_t *v, size_t n, uint64_t lo, uint64_t hi);
/*
 * The run of instructions a jump at `addr` may cover in the function whose
 * bytes are code[0..size) at `start`: djp_insn_jump_range's rules, at most
 * DJP_SITE_MAX_LEN bytes, and no target of the object (targets[0..n), at
 * link-time addresses, `bias` below the run's) strictly inside.  0 and
 * *len, or -errno with *why (targets NULL: not known, refused).
 */
int djp_jump_run(const uint8_t *code, size_t size, uintptr_t start, uintptr_t addr, const uint64_t *targets, size_t n,
		 uintptr_t bias, unsigned *len, const char **why);

#endif
