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

#endif
