/*
 * Decode, relocate and analyse x86-64 instructions (arch/x86/insn_reloc.c
 * has the reasoning): what it takes to run the instructions a 5-byte jump
 * displaces somewhere else, and whether a jump may displace them at all.
 */
#ifndef DJP_ARCH_X86_INSN_RELOC_H
#define DJP_ARCH_X86_INSN_RELOC_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum djp_insn_kind {
	DJP_INSN_PLAIN,    /* runs anywhere unchanged */
	DJP_INSN_RIPREL,   /* has a rip-relative memory operand: disp32 to adjust */
	DJP_INSN_JMP_REL,  /* jmp rel8/rel32 */
	DJP_INSN_JCC_REL,  /* jcc rel8/rel32 */
	DJP_INSN_CALL_REL, /* call rel32 */
	DJP_INSN_JMP_IND,  /* jmp through a register or memory (a jump table may follow) */
	DJP_INSN_CALL_IND, /* call through a register or memory (its return address is the next insn) */
	DJP_INSN_RET,      /* ret, iret... ends the flow */
	DJP_INSN_BAD,      /* cannot run anywhere but where it is (see why) */
};

struct djp_insn {
	uint8_t len;
	uint8_t kind;     /* enum djp_insn_kind */
	uintptr_t target; /* relative branch: absolute target; RIPREL: absolute address of the operand */
	const char *why;  /* DJP_INSN_BAD: a short reason, e.g. "loop/jrcxz has no rel32 form" */
};

/*
 * Decode one instruction of code[0..avail) at runtime address `at`: 0, or
 * -EILSEQ when it does not decode.  An indirect jmp or call through a
 * rip-relative operand has the operand's address in `target`; so has a
 * relative branch that is DJP_INSN_BAD (loop, jrcxz, xbegin) its target.
 */
int djp_insn_decode(const uint8_t *code, size_t avail, uintptr_t at, struct djp_insn *out);

/*
 * Copy the whole instructions of code[0..len) (which ran at `from`) so that
 * they run at `to`, then append `jmp rel32` back to from+len, into
 * out[0..cap).
 *  - rip-relative operands get their disp32 adjusted to the same absolute
 *    address;
 *  - jmp/jcc rel8 or rel32 become the rel32 form to the same absolute target;
 *  - call rel32 becomes "push the original return address, jmp rel32 target",
 *    and call *reg/mem "push the original return address, jmp *same operand"
 *    (refused when the operand uses %rsp);
 *  - refused (-ENOTSUP, *why set): loop/loope/loopne/jrcxz/jecxz, xbegin,
 *    int3, int1, ud0/ud1/ud2, far calls and jumps, eip-relative operands, an
 *    instruction crossing len; -EILSEQ for one Zydis cannot decode;
 *  - -ERANGE when a target or operand is out of rel32 reach from `to`;
 *    -ENOSPC when cap is too small; -E2BIG when `map` is given and an offset
 *    in out would not fit its uint8_t (255 or more).
 * If `map` is not NULL it has len+1 entries: map[k] = offset in out of the
 * copy of the original instruction that starts at offset k (0xff where k is
 * not an instruction boundary); map[len] = offset of the final jmp back.
 * Returns the number of bytes written (>0) or -errno; `why` may be NULL.
 */
ssize_t djp_insn_relocate(const uint8_t *code, size_t len, uintptr_t from, uintptr_t to, uint8_t *out, size_t cap,
			  uint8_t *map, const char **why);

/* The same copies without the jump back: code that goes on into what the
 * caller emits next (a trampoline's part before its site); 0 for len 0. */
ssize_t djp_insn_relocate_on(const uint8_t *code, size_t len, uintptr_t from, uintptr_t to, uint8_t *out, size_t cap,
			     const char **why);

/*
 * May a 5-byte jmp replace the instructions starting at `addr` inside the
 * function whose bytes are fcode[0..fsize) at runtime address fstart?
 * Picks the shortest run of whole instructions from addr that is >= 5 bytes
 * and checks it after the kernel's optprobes (can_optimize()):
 *  - -EINVAL: addr is not an instruction boundary of the linear decode;
 *  - -EILSEQ: an instruction of the function does not decode;
 *  - -ERANGE: the run crosses the function's end;
 *  - -EBUSY: a call that is not the run's last instruction; a direct
 *    branch of the function lands strictly inside (addr, addr+len); the
 *    function has an indirect jmp;
 *  - -ENOTSUP: an instruction of the run is DJP_INSN_BAD, or a ret or an
 *    indirect jmp that is not its last.
 * Returns 0 and *len, or -errno with *why (`why` may be NULL).
 */
int djp_insn_jump_range(const uint8_t *fcode, size_t fsize, uintptr_t fstart, uintptr_t addr, unsigned *len,
			const char **why);

/* The same, with what the caller knows of the function (`known`):
 * DJP_RUN_INDIRECT_KNOWN, where every indirect jmp of it lands (arch/x86/
 * indirect_targets.c), which the caller checks itself: an indirect jmp is
 * then no reason to refuse; DJP_RUN_BRANCHES_KNOWN, that it decodes whole
 * from its start and where each of its branches lands, direct and
 * indirect (an object's branch map, arch/x86/branch_targets.c), which the
 * caller checks: only the instructions up to the run's end are decoded. */
enum {
	DJP_RUN_INDIRECT_KNOWN = 1,
	DJP_RUN_BRANCHES_KNOWN = 2,
};
int djp_insn_jump_range_known(const uint8_t *fcode, size_t fsize, uintptr_t fstart, uintptr_t addr, unsigned known,
			      unsigned *len, const char **why);

/*
 * Where the run from `addr` is refused (the function ends, a branch lands
 * inside it), a run that starts at an earlier instruction boundary and
 * ends just past the site: [addr - pre, addr - pre + len), at most `max`
 * bytes, under the same rules (whole instructions of the linear decode
 * inside the function, a call only last, every one relocatable, no direct
 * branch of the function strictly inside, no indirect jump unless
 * indirect_known) and one more: no jump between its start and the site,
 * which it must reach by falling through.  The nearest start first; `ok`
 * (may be NULL) is asked of each run the rules allow, at its runtime
 * address, and a non-zero answer (-errno, *why set) tries the next.
 * 0 with *pre and *len, or -errno with *why.
 */
typedef int (*djp_run_fn)(void *ctx, uintptr_t start, unsigned len, const char **why);
int djp_insn_jump_runs_before(const uint8_t *fcode, size_t fsize, uintptr_t fstart, uintptr_t addr,
			      bool indirect_known, unsigned max, djp_run_fn ok, void *ctx, unsigned *pre, unsigned *len,
			      const char **why);

/*
 * Are the status flags (CF PF AF ZF SF OF) dead at the instruction at
 * code[0], which runs at `at`?  True when, following the code straight on
 * (code[0..avail)), an instruction writes all six before any instruction
 * reads one; false when one reads first, or a branch, call or return, or
 * the end of the bytes, comes first (not known: live).  A trampoline need
 * not keep flags that are dead.
 */
bool djp_insn_flags_dead(const uint8_t *code, size_t avail, uintptr_t at);

#endif
