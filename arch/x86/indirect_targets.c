/*
 * Where an object's indirect jumps can land.
 *
 * A jump over several instructions needs to know that nothing starts
 * executing inside them; branch_targets.c collects every direct branch's
 * target, and this file adds what an indirect `jmp` can reach, so that a
 * function with one (CPython's computed gotos, any switch statement) is no
 * longer refused as a whole.
 *
 * A code address reaches a register in one of a few ways only, in code a
 * compiler made:
 *
 *  - it is stored in the object's data.  In a PIE or shared object every
 *    such word carries a relocation, since the loader must add the load
 *    address: R_X86_64_RELATIVE (and IRELATIVE) with the address as its
 *    addend, R_X86_64_64 with a symbol plus addend, a GOT slot (GLOB_DAT,
 *    JUMP_SLOT) with a symbol this object defines.  In an ET_EXEC (a
 *    non-PIE program, such as Debian's python3.11) nothing is relocated,
 *    and the linker wrote the address itself: every 8-byte aligned word
 *    of the allocated data that falls inside the code is taken as one
 *    where it is an instruction boundary (a string's bytes may look like
 *    an address, "ABC" is 0x434241, and an address in the middle of an
 *    instruction is none: compiled code does not overlap its
 *    instructions).  CPython's `opcode_targets[]` is such a table;
 *  - the code computes it: a rip-relative `lea label(%rip)` (GCC's
 *    `&&label`, a function's address), or in an ET_EXEC an immediate
 *    (`mov $label, %eax`).  branch_targets.c adds these as it decodes;
 *  - it is a return address, which follows a call: a run holds a call only
 *    as its last instruction, so a return lands at its end at most;
 *  - it is computed from a table of offsets: GCC's switch tables in
 *    position-independent code, `lea TABLE(%rip), %B; movslq (%B,%I,4), %R;
 *    add %B, %R; jmp *%R`, each entry relative to the table, the index
 *    bounded by a `cmp $MAX, %I; ja default` before.  Those entries are
 *    read here, MAX + 1 of them.
 *
 * So each indirect jmp is proven one of two kinds, from the instructions
 * that run straight into it (no call, return or jump between).  Another
 * path may join between the first of them and the jmp: checked once every
 * target is known, each join must be a direct jump's or jcc's target only
 * (no call's, no code address held as data), and each of those branches
 * must bring a whole address loaded the same way in the same register
 * (CPython's dispatch is tail-merged so: many `mov table(,%rax,8), %rax;
 * jmp L` end at one `L: mov %rbx, %rbp; jmp *%rax`).  A switch table's
 * proof allows no join.
 *
 *  - the address is loaded whole from memory (`jmp *mem`, or `mov mem, %R;
 *    jmp *%R`): it is a code address held as data, already among the
 *    targets;
 *  - the switch-table pattern above, every register of it traced to the
 *    instruction that wrote it: its entries are added.
 *
 * Anything else is not understood, and its function keeps the refusal.
 *
 * Where the proof stops: a code address stored unaligned (a packed
 * structure) in an ET_EXEC, or stored after arithmetic on label addresses
 * (`&&a - &&b` tables, as glibc's vfprintf has, are recognised only in the
 * switch form: another form is not understood and refused, but such a
 * difference stored to memory and later jumped through as a whole address
 * is not seen); a 32-bit compare that bounds a 64-bit index whose upper
 * half the compiler knows is zero; C++ landing pads, reached from the
 * unwinder (as before: they follow a call's return in the code compilers
 * make); and code that is not the compiler's (hand-written assembly
 * jumping to computed addresses, JIT code).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <Zydis/Zydis.h>

#include "arch/x86/indirect_targets.h"

int djp_image_open(Elf *elf, struct djp_image *im)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	memset(im, 0, sizeof(*im));
	im->elf = elf;
	if (!gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	im->exec_type = eh.e_type == ET_EXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d = NULL;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		if (sh.sh_type != SHT_NOBITS && (!(d = elf_getdata(scn, NULL)) || d->d_size != sh.sh_size))
			continue;
		if (im->nsec == cap) {
			void *nv = realloc(im->sec, (cap = cap ? 2 * cap : 32) * sizeof(*im->sec));
			if (!nv) {
				djp_image_close(im);
				return -ENOMEM;
			}
			im->sec = nv;
		}
		im->sec[im->nsec++] = (struct djp_isec){ .addr = sh.sh_addr,
							 .size = sh.sh_size,
							 .data = d ? d->d_buf : NULL,
							 .exec = sh.sh_flags & SHF_EXECINSTR };
		if (sh.sh_flags & SHF_EXECINSTR) {
			if (im->code_lo == im->code_hi || sh.sh_addr < im->code_lo)
				im->code_lo = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > im->code_hi)
				im->code_hi = sh.sh_addr + sh.sh_size;
		}
	}
	return 0;
}

void djp_image_close(struct djp_image *im)
{
	free(im->sec);
	im->sec = NULL;
	im->nsec = 0;
}

bool djp_image_is_code(const struct djp_image *im, uint64_t addr)
{
	if (addr - im->code_lo >= im->code_hi - im->code_lo)
		return false; /* an ET_EXEC's data words, mostly */
	for (size_t i = 0; i < im->nsec; i++)
		if (im->sec[i].exec && addr - im->sec[i].addr < im->sec[i].size)
			return true;
	return false;
}

/* n bytes at addr from the file's sections, or NULL. */
static const uint8_t *image_bytes(const struct djp_image *im, uint64_t addr, uint64_t n)
{
	for (size_t i = 0; i < im->nsec; i++) {
		const struct djp_isec *s = &im->sec[i];
		if (s->data && addr - s->addr < s->size && n <= s->size - (addr - s->addr))
			return s->data + (addr - s->addr);
	}
	return NULL;
}

static int reloc_targets(const struct djp_image *im, djp_addr_fn fn, void *ctx)
{
	Elf_Scn *scn = NULL;
	int err;

	while ((scn = elf_nextscn(im->elf, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Data *d, *syms = NULL;
		Elf_Scn *symscn;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		if ((symscn = elf_getscn(im->elf, sh.sh_link)) && gelf_getshdr(symscn, &symsh) &&
		    (symsh.sh_type == SHT_DYNSYM || symsh.sh_type == SHT_SYMTAB))
			syms = elf_getdata(symscn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			uint64_t a;
			if (!gelf_getrela(d, (int)i, &r))
				continue;
			switch (GELF_R_TYPE(r.r_info)) {
			case R_X86_64_RELATIVE:
			case R_X86_64_IRELATIVE:
				a = (uint64_t)r.r_addend;
				break;
			case R_X86_64_64:
			case R_X86_64_GLOB_DAT:
			case R_X86_64_JUMP_SLOT:
				if (!syms || !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) ||
				    sym.st_shndx == SHN_UNDEF)
					continue;
				a = sym.st_value + (uint64_t)r.r_addend;
				break;
			default:
				continue;
			}
			if (djp_image_is_code(im, a) && (err = fn(ctx, a)))
				return err;
		}
	}
	return 0;
}

int djp_data_code_addresses(const struct djp_image *im, djp_addr_fn fn, djp_addr_fn guess, void *ctx)
{
	int err = reloc_targets(im, fn, ctx);

	if (err || !im->exec_type)
		return err;
	for (size_t i = 0; i < im->nsec; i++) {
		const struct djp_isec *s = &im->sec[i];
		if (s->exec || !s->data)
			continue;
		for (uint64_t a = (s->addr + 7) & ~7ULL; a + 8 <= s->addr + s->size; a += 8) {
			uint64_t w;
			memcpy(&w, s->data + (a - s->addr), 8);
			if (djp_image_is_code(im, w) && (err = guess(ctx, w)))
				return err;
		}
	}
	return 0;
}

/* ---- one indirect jmp ---------------------------------------------------- */

#define WINDOW 16

struct dinsn {
	ZydisDecodedInstruction in;
	ZydisDecodedOperand op[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t addr;
};

static ZydisRegister whole(ZydisRegister r)
{
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
}

static bool writes(const struct dinsn *d, ZydisRegister r)
{
	for (unsigned i = 0; i < d->in.operand_count; i++)
		if (d->op[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (d->op[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    whole(d->op[i].reg.value) == whole(r))
			return true;
	return false;
}

/* Control leaves or comes back from elsewhere: what was written before is
 * not known to hold after it. */
static bool barrier(const struct dinsn *d)
{
	switch (d->in.meta.category) {
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_SYSTEM:
	case ZYDIS_CATEGORY_INTERRUPT:
		return true;
	default:
		return false;
	}
}

/* The last instruction before d[at] that writes r, or -1 (none in the window, or a barrier first). */
static int def_of(const struct dinsn *d, int at, ZydisRegister r)
{
	for (int j = at - 1; j >= 0; j--) {
		if (barrier(&d[j]))
			return -1;
		if (writes(&d[j], r))
			return j;
	}
	return -1;
}

static bool is_reg(const ZydisDecodedOperand *o, unsigned bits)
{
	return o->type == ZYDIS_OPERAND_TYPE_REGISTER && o->size == bits;
}

/* `lea TABLE(%rip), %X`: TABLE, or 0. */
static uint64_t lea_riprel(const struct dinsn *d)
{
	ZyanU64 a;
	if (d->in.mnemonic != ZYDIS_MNEMONIC_LEA || !is_reg(&d->op[0], 64) || d->op[1].mem.base != ZYDIS_REGISTER_RIP ||
	    d->op[1].mem.index != ZYDIS_REGISTER_NONE ||
	    ZYAN_FAILED(ZydisCalcAbsoluteAddress(&d->in, &d->op[1], d->addr, &a)))
		return 0;
	return a;
}

/* Does d write memory, or the registers that address m? */
static bool disturbs(const struct dinsn *d, const ZydisDecodedOperand *m)
{
	for (unsigned i = 0; i < d->in.operand_count; i++)
		if (d->op[i].type == ZYDIS_OPERAND_TYPE_MEMORY && (d->op[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			return true;
	return (m->mem.base != ZYDIS_REGISTER_NONE && writes(d, m->mem.base)) ||
	       (m->mem.index != ZYDIS_REGISTER_NONE && writes(d, m->mem.index));
}

static bool same_mem(const ZydisDecodedOperand *a, const ZydisDecodedOperand *b)
{
	return a->type == ZYDIS_OPERAND_TYPE_MEMORY && b->type == ZYDIS_OPERAND_TYPE_MEMORY && a->size == b->size &&
	       a->mem.base == b->mem.base && a->mem.index == b->mem.index && a->mem.scale == b->mem.scale &&
	       a->mem.disp.value == b->mem.disp.value && a->mem.segment == b->mem.segment &&
	       a->mem.base != ZYDIS_REGISTER_RIP;
}

/*
 * How many entries the index of the movslq at d[mv] can select: a `cmp
 * $MAX, %I` then `ja`/`jae` before it, with nothing but a zero-extending
 * `mov %eI, %eI` writing I after the compare; or a `cmp $MAX, MEM`, `ja`,
 * then `mov MEM, %eI` from the same memory, nothing storing to memory or
 * changing its address between (PostgreSQL's CommitTransaction switches
 * on a field so).  0 when not found.  *lo is the compare.
 */
static uint64_t switch_bound(const struct dinsn *d, int mv, ZydisRegister idx, uint64_t *lo)
{
	const ZydisDecodedOperand *load = NULL;
	int j = mv - 1;
	uint64_t max;
	bool ja;

	for (; j >= 0; j--) {
		const struct dinsn *x = &d[j];
		if (barrier(x) || (load && disturbs(x, load)))
			return 0;
		if (x->in.meta.category == ZYDIS_CATEGORY_COND_BR)
			break;
		if (!writes(x, idx))
			continue;
		if (x->in.mnemonic == ZYDIS_MNEMONIC_MOV && is_reg(&x->op[0], 32) && is_reg(&x->op[1], 32) &&
		    whole(x->op[1].reg.value) == whole(idx) && whole(x->op[0].reg.value) == whole(idx) && !load)
			continue;
		if (x->in.mnemonic == ZYDIS_MNEMONIC_MOV && is_reg(&x->op[0], 32) &&
		    x->op[1].type == ZYDIS_OPERAND_TYPE_MEMORY && !load) {
			load = &x->op[1];
			continue;
		}
		return 0;
	}
	if (j < 1 || (d[j].in.mnemonic != ZYDIS_MNEMONIC_JNBE && d[j].in.mnemonic != ZYDIS_MNEMONIC_JNB))
		return 0;
	ja = d[j].in.mnemonic == ZYDIS_MNEMONIC_JNBE;
	/* the flags the jcc tests are the compare's */
	for (j--; j >= 0; j--) {
		const struct dinsn *x = &d[j];
		if (barrier(x) || (!load && writes(x, idx)))
			return 0;
		if (x->in.cpu_flags && (x->in.cpu_flags->modified & ZYDIS_CPUFLAG_CF))
			break;
		if (load && disturbs(x, load))
			return 0;
	}
	if (j < 0 || d[j].in.mnemonic != ZYDIS_MNEMONIC_CMP || d[j].op[1].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
	    d[j].op[0].size < 32)
		return 0;
	if (load ? !same_mem(&d[j].op[0], load)
		 : d[j].op[0].type != ZYDIS_OPERAND_TYPE_REGISTER || whole(d[j].op[0].reg.value) != whole(idx))
		return 0;
	/* the immediate sign-extended to the compare's width, read unsigned */
	max = d[j].op[1].imm.value.u;
	if (d[j].op[0].size == 32)
		max &= 0xffffffffu;
	if (max > 1 << 16)
		return 0;
	*lo = d[j].addr;
	return ja ? max + 1 : max;
}

/* GCC's position-independent switch: the add at d[a] that makes the
 * jump's register.  1 with the entries handed to fn, 0 not understood. */
static int switch_table(const struct djp_image *im, const struct dinsn *d, int a, djp_addr_fn fn, void *ctx,
			uint64_t *lo)
{
	ZydisRegister r = d[a].op[0].reg.value, s = d[a].op[1].reg.value, base;
	int dr = def_of(d, a, r), ds = def_of(d, a, s), mv, le;
	uint64_t table, n;
	const uint8_t *ent;
	int err;

	if (dr < 0 || ds < 0)
		return 0;
	mv = d[dr].in.mnemonic == ZYDIS_MNEMONIC_MOVSXD ? dr : ds;
	le = mv == dr ? ds : dr;
	if (d[mv].in.mnemonic != ZYDIS_MNEMONIC_MOVSXD || !is_reg(&d[mv].op[0], 64) ||
	    d[mv].op[1].type != ZYDIS_OPERAND_TYPE_MEMORY || d[mv].op[1].mem.scale != 4 || d[mv].op[1].size != 32 ||
	    d[mv].op[1].mem.disp.value ||
	    d[mv].op[1].mem.segment != ZYDIS_REGISTER_DS || !(table = lea_riprel(&d[le])))
		return 0;
	base = d[mv].op[1].mem.base;
	/* the table's base register and the one added are the lea's, unchanged since */
	if (whole(base) != whole(d[le].op[0].reg.value) || def_of(d, mv, base) != le || le > mv)
		return 0;
	if (!(n = switch_bound(d, mv, d[mv].op[1].mem.index, lo)) || !(ent = image_bytes(im, table, 4 * n)))
		return 0;
	for (uint64_t k = 0; k < n; k++) {
		int32_t e;
		memcpy(&e, ent + 4 * k, 4);
		if (!djp_image_is_code(im, table + (uint64_t)(int64_t)e))
			return 0;
	}
	for (uint64_t k = 0; k < n; k++) {
		int32_t e;
		memcpy(&e, ent + 4 * k, 4);
		if ((err = fn(ctx, table + (uint64_t)(int64_t)e)))
			return err;
	}
	return 1;
}

static int decode_window(struct dinsn *d, const uint8_t *code, uint64_t addr, const size_t *offs, size_t n)
{
	ZydisDecoder dec;

	if (ZYAN_FAILED(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, code + offs[i], 15, &d[i].in, d[i].op)))
			return -1;
		d[i].addr = addr + offs[i];
	}
	return 0;
}

/* Is d[def] `mov mem, %R`, a whole 8-byte address loaded from memory? */
static bool whole_load(const struct dinsn *d)
{
	return d->in.mnemonic == ZYDIS_MNEMONIC_MOV && is_reg(&d->op[0], 64) &&
	       d->op[1].type == ZYDIS_OPERAND_TYPE_MEMORY && d->op[1].size == 64;
}

int djp_indirect_jump_targets(const struct djp_image *im, const uint8_t *code, uint64_t addr, const size_t *offs,
			      size_t n, djp_addr_fn fn, void *ctx, uint64_t *lo, unsigned *reg)
{
	struct dinsn d[WINDOW];
	const struct dinsn *j;
	int k, def;

	if (n > WINDOW) {
		offs += n - WINDOW;
		n = WINDOW;
	}
	*reg = 0;
	if (!n || decode_window(d, code, addr, offs, n))
		return 0;
	k = (int)n - 1;
	j = &d[k];
	*lo = j->addr;
	if (j->in.meta.category != ZYDIS_CATEGORY_UNCOND_BR || j->in.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
		return 0;
	/* jmp *mem: a whole address held as data */
	if (j->op[0].type == ZYDIS_OPERAND_TYPE_MEMORY && j->op[0].size == 64)
		return 1;
	if (!is_reg(&j->op[0], 64) || (def = def_of(d, k, j->op[0].reg.value)) < 0)
		return 0;
	*lo = d[def].addr;
	/* mov mem, %R; jmp *%R */
	if (whole_load(&d[def])) {
		*reg = whole(j->op[0].reg.value);
		return 1;
	}
	/* add %S, %R; jmp *%R */
	if (d[def].in.mnemonic == ZYDIS_MNEMONIC_ADD && is_reg(&d[def].op[0], 64) && is_reg(&d[def].op[1], 64))
		return switch_table(im, d, def, fn, ctx, lo);
	return 0;
}

int djp_branch_brings_whole_load(const uint8_t *code, uint64_t addr, const size_t *offs, size_t n, unsigned reg,
				 uint64_t *lo)
{
	struct dinsn d[WINDOW];
	int def;

	if (n > WINDOW) {
		offs += n - WINDOW;
		n = WINDOW;
	}
	if (!n || decode_window(d, code, addr, offs, n))
		return 0;
	/* the branch itself is no barrier: the value goes with it */
	if ((def = def_of(d, (int)n - 1, (ZydisRegister)reg)) < 0 || !whole_load(&d[def]))
		return 0;
	*lo = d[def].addr;
	return 1;
}
