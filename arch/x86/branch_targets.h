/*
 * Every direct branch target of an object's code (branch_targets.c): what
 * may land inside a run of instructions a jump would cover.
 */
#ifndef DJP_ARCH_X86_BRANCH_TARGETS_H
#define DJP_ARCH_X86_BRANCH_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What may land in an object's code, at link-time addresses. */
struct djp_branch_map {
	/* every address a branch of the object can go to, sorted (repeats
	 * kept): direct jmp, jcc and call targets, code addresses the object
	 * holds, switch-table entries */
	uint64_t *targets;
	size_t ntargets;
	/* the indirect jumps whose targets are not known, sorted */
	uint64_t *blind;
	size_t nblind;
	size_t indirect; /* how many indirect jumps there are */
	/* words of an ET_EXEC's data and immediates of its code that lie in
	 * its code, sorted: addresses if they are instruction boundaries */
	uint64_t *guess;
	size_t nguess;
	/* the function starts the walk decoded from, sorted */
	uint64_t *starts;
	size_t nstarts;
	/* where a byte did not decode (the first of each run), sorted */
	uint64_t *bad;
	size_t nbad;
};

/* The map of the file's executable sections, decoded from each function
 * start its symbols give and each of `starts` (link-time addresses,
 * sorted; may be NULL): 0, or -errno. */
int djp_branch_targets_of_file(const char *path, const uint64_t *starts, size_t nstarts, struct djp_branch_map *m);
void djp_branch_map_free(struct djp_branch_map *m);
/* Is a target strictly between lo and hi? */
bool djp_branch_target_inside(const uint64_t *v, size_t n, uint64_t lo, uint64_t hi);
/*
 * The run of instructions a jump at `addr` may cover in the function whose
 * bytes are code[0..size) at `start`: djp_insn_jump_range's rules but for
 * indirect jumps, at most DJP_SITE_MAX_LEN bytes, no indirect jump of the
 * function whose targets are not known, and no target of the object (m,
 * at link-time addresses, `bias` below the run's) strictly inside.  Where
 * the run from `addr` is refused because the function ends or a branch
 * lands in it, and `pre` is not NULL, a run that starts up to
 * DJP_SITE_MAX_LEN bytes before `addr` and ends just past it under the same
 * rules, its start checked against every target as the rest of it is
 * (djp_insn_jump_runs_before): it covers [addr - *pre, addr - *pre +
 * *len).  0 and *len (and *pre, 0 for a run from addr), or -errno with
 * *why, the run from addr's (m NULL: not known, refused).
 */
int djp_jump_run(const uint8_t *code, size_t size, uintptr_t start, uintptr_t addr, const struct djp_branch_map *m,
		 uintptr_t bias, unsigned *pre, unsigned *len, const char **why);

#endif
