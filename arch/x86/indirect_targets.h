/*
 * Where an object's indirect jumps can land (arch/x86/indirect_targets.c
 * has the reasoning): the code addresses the object can hold as data, and
 * the entries of its switch tables.
 */
#ifndef DJP_ARCH_X86_INDIRECT_TARGETS_H
#define DJP_ARCH_X86_INDIRECT_TARGETS_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One allocated section of the object, as the file has it. */
struct djp_isec {
	uint64_t addr, size;
	const uint8_t *data; /* NULL for SHT_NOBITS */
	bool exec;
};

struct djp_image {
	Elf *elf;
	bool exec_type; /* ET_EXEC: link-time addresses are the run-time ones, unrelocated */
	struct djp_isec *sec;
	size_t nsec;
	uint64_t code_lo, code_hi; /* around every executable section: most words are not */
};

typedef int (*djp_addr_fn)(void *ctx, uint64_t addr);

/* Read the sections of elf (kept open by the caller); 0 or -errno. */
int djp_image_open(Elf *elf, struct djp_image *im);
void djp_image_close(struct djp_image *im);
/* Is addr inside an executable section? */
bool djp_image_is_code(const struct djp_image *im, uint64_t addr);

/*
 * Every code address the object holds outside its instructions: the
 * targets of its relocations (R_X86_64_RELATIVE, R_X86_64_IRELATIVE,
 * R_X86_64_64, GLOB_DAT and JUMP_SLOT to a defined symbol, with their
 * addends), each handed to
 * fn, and, in an ET_EXEC, every 8-byte aligned word of its allocated data
 * that lies in its code, each handed to guess (a word may only look like
 * an address: "ABC" is 0x434241).  0, or fn's error.
 */
int djp_data_code_addresses(const struct djp_image *im, djp_addr_fn fn, djp_addr_fn guess, void *ctx);

/*
 * The indirect jmp at code[offs[n - 1]] (section bytes `code` at `addr`;
 * offs[0..n) the offsets of the instructions that run straight into it,
 * oldest first): hand its possible targets that are not code addresses
 * held as data (a switch table's entries) to fn, and set *lo to the first
 * instruction its proof reads.  1 when its targets are known, 0 when they
 * are not, or fn's error.  The proof holds if nothing branches into
 * (lo, jmp]; or, when *reg is set (a whole address loaded into that
 * register), if every branch into there brings one too
 * (djp_branch_brings_whole_load).
 */
int djp_indirect_jump_targets(const struct djp_image *im, const uint8_t *code, uint64_t addr, const size_t *offs,
			      size_t n, djp_addr_fn fn, void *ctx, uint64_t *lo, unsigned *reg);

/* Does the direct jmp or jcc at code[offs[n - 1]] (as above) go with a
 * whole address loaded from memory into `reg` by the instructions that
 * run straight into it?  1 and *lo the load, else 0. */
int djp_branch_brings_whole_load(const uint8_t *code, uint64_t addr, const size_t *offs, size_t n, unsigned reg,
				 uint64_t *lo);

#endif
