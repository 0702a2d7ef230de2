/*
 * Running displaced instructions somewhere else.
 *
 * A jump probe writes a 5-byte `jmp rel32` over the first instructions of a
 * site.  Whatever those instructions did must still be done, so the
 * trampoline ends with a copy of them (the engine's "copy"), followed by a
 * jump back to the first byte after them.  The copy runs at another address,
 * and that is the only thing that may differ: same registers, same flags,
 * same memory, same stack, as if the original had run.  An instruction can
 * see where it is only through rip, so the instructions that need care are
 * exactly those that read rip, one rule each:
 *
 *  - A rip-relative operand (`mov sym(%rip),%rax`, a lea, a store, an AVX
 *    load) addresses rip + disp32, rip being the end of the instruction.
 *    The copy keeps the bytes and rewrites disp32 so that the sum is the
 *    same absolute address.  It is always 32 bits (mod 00, r/m 101: there
 *    is no disp8 form, not even compressed in EVEX), and Zydis tells where
 *    it sits, which matters when an immediate follows it
 *    (`cmpl $imm32, sym(%rip)`).  The new disp32 must still reach: the copy
 *    has to be within +-2 GiB of every such operand, which is why the
 *    engine places trampolines near the code and why out of reach is
 *    -ERANGE and not a silent truncation.  With an addr32 prefix the
 *    operand is eip-relative, truncated to 32 bits: refused, it never
 *    occurs in compiled code.
 *
 *  - A relative jmp or jcc keeps its absolute target.  A rel8 copied
 *    elsewhere reaches nothing useful, so every form becomes the rel32 one:
 *    e9 for jmp, 0f 8x for jcc (the condition is the low nibble of both the
 *    7x and the 0f 8x opcode).  loop, loope, loopne and jrcxz have no rel32
 *    form; they could be emulated with a few instructions, but not without
 *    either flags or a register, and compilers do not emit them: refused.
 *
 *  - A call pushes rip.  Copied as is, it would push an address inside the
 *    copy, and the callee would return into the trampoline: unwinders (and
 *    with them C++ exceptions, backtraces and profilers) would meet a
 *    return address that belongs to no function, and the engine could not
 *    free a trampoline while any callee anywhere may still return into it.
 *    So a call becomes "push the original return address, jmp to the
 *    target": the callee returns straight into the original code, and the
 *    copy is never on any stack.  The return address must then not be
 *    inside the bytes the jump overwrote, which is why a call may only be
 *    the last instruction of a run (djp_insn_jump_range).  Pushing a
 *    64-bit constant without touching a register or the flags takes two
 *    instructions: `push $imm32` stores the sign-extended low half and
 *    moves rsp, `movl $high, 4(%rsp)` fixes the high half (skipped when
 *    the sign extension is already right).  An indirect call becomes the
 *    same push followed by `jmp *operand`: the same bytes, with the ModRM
 *    reg field turned from /2 into /4.  Its operand is evaluated after the
 *    push, so an operand that uses %rsp would read 8 bytes off: refused.
 *    A rip-relative operand is adjusted as above.  (With a CET shadow
 *    stack the pushed return address has no shadow twin, and the callee's
 *    ret faults: such processes must use int3 probes.)
 *
 *  - int3 in the bytes to copy is someone else's breakpoint (a debugger's,
 *    or another tool's): moving it would make it fire at an address its
 *    owner does not know.  int1 likewise.  ud0/ud1/ud2 are deliberate
 *    faults whose handler may look up the faulting address (as the kernel's
 *    BUG() does).  xbegin's abort address is a rel32 that could be
 *    re-encoded, but a transaction's abort rewinds to it from anywhere in
 *    the region, which no test here can exercise (RTM is off on current
 *    CPUs): refused rather than relocated untested.  Far calls and jumps
 *    change the code segment: refused.
 *
 *  - Everything else runs anywhere: push, pop, syscall (it saves the copy's
 *    rip in rcx, and the kernel returns there), endbr64 (a no-op once
 *    reached by a direct jump), ret and indirect jmp (they leave; the jump
 *    back after them is never reached).
 *
 * Instructions are only ever copied whole, and an instruction that crosses
 * the end of the range is refused, since its tail would stay behind the
 * jump.  `map` says where each original instruction boundary landed in the
 * copy, so that the engine can move a thread stopped at a boundary inside
 * the range to the same point of the copy.
 *
 * Which ranges may be displaced at all, after the kernel's optprobes
 * (arch/x86/kernel/kprobes/opt.c, can_optimize()).  The jump is written over
 * whole instructions, the shortest run from the site that has 5 bytes, and
 * the bytes after the jump's first are garbage as instructions.  So nothing
 * may start executing strictly inside the run:
 *
 *  - the run must end inside the function: what follows belongs to another
 *    function or to padding that a jump may land after;
 *  - the whole function must decode linearly from its start, or its
 *    boundaries and branches are unknown; the site must be one of those
 *    boundaries;
 *  - no direct branch of the function may target a byte strictly inside
 *    the run (the site itself is fine: it holds the jump);
 *  - no indirect jmp in the function, since a jump table's targets are not
 *    known here and one of them may be inside the run, unless the caller
 *    has proven where they land (djp_insn_jump_range_known, with
 *    arch/x86/indirect_targets.c) and checks that (an indirect call goes to
 *    another function's entry, which is fine);
 *  - a call may only be the run's last instruction, else the callee returns
 *    into the overwritten bytes;
 *  - a ret or an indirect jmp may only be last: what follows it is reached
 *    by a jump only, from where this analysis cannot see;
 *  - every instruction of the run must relocate.
 *
 * What this cannot see, as the kernel cannot without its exception tables:
 * a jump from another function into the run (GCC's hot/cold splitting puts
 * a `foo.cold` part elsewhere that jumps back into `foo`), a C++ landing
 * pad or a computed-goto label inside the run.  The engine's callers decide
 * how much of that they rule out by other means.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <Zydis/Zydis.h>

#include "arch/x86/insn.h"
#include "arch/x86/insn_reloc.h"

/* What relocation needs besides the public description. */
struct xinsn {
	struct djp_insn pub;
	uint8_t disp_off;  /* rip-relative operand: offset of its disp32, else 0 */
	uint8_t modrm_off; /* indirect call: offset of its ModRM byte */
	uint8_t cc;	   /* jcc: the condition, 0-15 */
	uint8_t relbranch; /* a direct branch of any kind: pub.target is where it goes */
	uint8_t call;	   /* a call of any kind, even a refused one */
};

#define MAX_OUT_INSN 32 /* the longest relocated form: 13-byte push + 15-byte jmp */

static int decoder_init(ZydisDecoder *dec)
{
	return ZYAN_SUCCESS(ZydisDecoderInit(dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ? 0 : -ENOSYS;
}

static int bad(struct xinsn *x, const char *why)
{
	x->pub.kind = DJP_INSN_BAD;
	x->pub.why = why;
	return 0;
}

static int is_rsp(ZydisRegister r)
{
	return r == ZYDIS_REGISTER_RSP || r == ZYDIS_REGISTER_ESP || r == ZYDIS_REGISTER_SP;
}

/* 0; -EILSEQ when it does not decode; -ENODATA when it needs more than avail. */
static int decode(const ZydisDecoder *dec, const uint8_t *code, size_t avail, uintptr_t at, struct xinsn *x)
{
	ZydisDecoderContext ctx;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	const ZydisDecodedOperand *mem = NULL, *rel = NULL;
	unsigned nops = 0;
	ZyanStatus st;
	ZyanU64 abs;

	memset(x, 0, sizeof(*x));
	st = ZydisDecoderDecodeInstruction(dec, &ctx, code, avail, &in);
	if (st == ZYDIS_STATUS_NO_MORE_DATA)
		return -ENODATA;
	if (ZYAN_FAILED(st))
		return -EILSEQ;
	/* The operands only where they are read: a relative one (a branch's
	 * target, a rip-relative operand) or a call's.  Decoding them for
	 * every instruction was half of arming function("*"). */
	if ((in.attributes & ZYDIS_ATTRIB_IS_RELATIVE) || in.meta.category == ZYDIS_CATEGORY_CALL) {
		if (ZYAN_FAILED(ZydisDecoderDecodeOperands(dec, &ctx, &in, ops, in.operand_count)))
			return -EILSEQ;
		nops = in.operand_count;
	}
	x->pub.len = in.length;
	x->pub.kind = DJP_INSN_PLAIN;
	for (unsigned i = 0; i < nops; i++) {
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    (ops[i].mem.base == ZYDIS_REGISTER_RIP || ops[i].mem.base == ZYDIS_REGISTER_EIP))
			mem = &ops[i];
		if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative)
			rel = &ops[i];
	}
	if (rel) {
		if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(&in, rel, at, &abs)))
			return -EILSEQ;
		x->pub.target = abs;
		x->relbranch = 1;
	}
	if (mem) {
		if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(&in, mem, at, &abs)))
			return -EILSEQ;
		x->pub.target = abs;
		x->disp_off = in.raw.disp.offset;
	}
	x->call = in.meta.category == ZYDIS_CATEGORY_CALL;

	switch (in.mnemonic) {
	case ZYDIS_MNEMONIC_INT3:
		return bad(x, "int3 (someone else's breakpoint)");
	case ZYDIS_MNEMONIC_INT1:
		return bad(x, "int1 (a debug trap)");
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
		return bad(x, "ud0/ud1/ud2 (a deliberate fault at a known address)");
	case ZYDIS_MNEMONIC_LOOP:
	case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
	case ZYDIS_MNEMONIC_JCXZ:
	case ZYDIS_MNEMONIC_JECXZ:
	case ZYDIS_MNEMONIC_JRCXZ:
		return bad(x, "loop/jrcxz has no rel32 form");
	case ZYDIS_MNEMONIC_XBEGIN:
		return bad(x, "xbegin (its abort address is not relocated)");
	case ZYDIS_MNEMONIC_RET:
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
	case ZYDIS_MNEMONIC_SYSRET:
	case ZYDIS_MNEMONIC_SYSEXIT:
	case ZYDIS_MNEMONIC_UIRET:
		x->pub.kind = DJP_INSN_RET;
		return 0;
	default:
		break;
	}
	if (mem && mem->mem.base == ZYDIS_REGISTER_EIP)
		return bad(x, "eip-relative operand (addr32)");
	if (in.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR &&
	    (in.meta.category == ZYDIS_CATEGORY_CALL || in.meta.category == ZYDIS_CATEGORY_UNCOND_BR))
		return bad(x, "far call or jump");

	switch (in.meta.category) {
	case ZYDIS_CATEGORY_CALL:
		if (rel) {
			x->pub.kind = DJP_INSN_CALL_REL;
			return 0;
		}
		/* The target operand is the first; the hidden ones (rsp, rip) are the call's own. */
		if ((ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && is_rsp(ops[0].reg.value)) ||
		    (ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY && (is_rsp(ops[0].mem.base) || is_rsp(ops[0].mem.index))))
			return bad(x, "indirect call through %rsp");
		if (!(in.attributes & ZYDIS_ATTRIB_HAS_MODRM) || in.opcode_map != ZYDIS_OPCODE_MAP_DEFAULT || in.opcode != 0xff)
			return bad(x, "call of an unknown form");
		x->pub.kind = DJP_INSN_CALL_IND;
		x->modrm_off = in.raw.modrm.offset;
		return 0;
	case ZYDIS_CATEGORY_UNCOND_BR:
		x->pub.kind = rel ? DJP_INSN_JMP_REL : DJP_INSN_JMP_IND;
		return 0;
	case ZYDIS_CATEGORY_COND_BR:
		if (!rel)
			return bad(x, "conditional branch of an unknown form");
		x->pub.kind = DJP_INSN_JCC_REL;
		x->cc = in.opcode & 0xf; /* 7x rel8 and 0f 8x rel32 alike */
		return 0;
	default:
		break;
	}
	if (rel)
		return bad(x, "relative operand of an unknown kind");
	if (mem)
		x->pub.kind = DJP_INSN_RIPREL;
	return 0;
}

int djp_insn_decode(const uint8_t *code, size_t avail, uintptr_t at, struct djp_insn *out)
{
	ZydisDecoder dec;
	struct xinsn x;
	int err = decoder_init(&dec);

	if (!err)
		err = decode(&dec, code, avail, at, &x);
	if (err)
		return -EILSEQ;
	*out = x.pub;
	return 0;
}

static int set_why(const char **why, const char *s, int err)
{
	if (why)
		*why = s;
	return err;
}

/* Write rel32 at buf[off..off+3] so that an instruction at `at` ending at
 * at+end reaches `target`. */
static int put_rel32(uint8_t *buf, unsigned off, uintptr_t at, unsigned end, uintptr_t target)
{
	int32_t rel;

	if (!x86_rel32_fits(at, end, target))
		return -ERANGE;
	rel = (int32_t)(int64_t)(target - (at + end));
	memcpy(buf + off, &rel, 4);
	return 0;
}

/* push a 64-bit constant, no register or flag touched: 5 or 13 bytes. */
static unsigned put_push64(uint8_t *buf, uint64_t v)
{
	uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);

	buf[0] = 0x68; /* push $imm32, sign-extended */
	memcpy(buf + 1, &lo, 4);
	if ((uint64_t)(int64_t)(int32_t)lo == v)
		return 5;
	buf[5] = 0xc7; /* movl $imm32, 4(%rsp) */
	buf[6] = 0x44;
	buf[7] = 0x24;
	buf[8] = 0x04;
	memcpy(buf + 9, &hi, 4);
	return 13;
}

/* The copy of one instruction, which ran at `from`, to run at `to`: its length, or -errno. */
static int relocate_one(const struct xinsn *x, const uint8_t *code, uintptr_t from, uintptr_t to, uint8_t *buf,
			const char **why)
{
	const char *range = "a target is out of rel32 reach of the copy";
	unsigned len = x->pub.len, n;

	switch (x->pub.kind) {
	case DJP_INSN_PLAIN:
	case DJP_INSN_RET:
		memcpy(buf, code, len);
		return len;
	case DJP_INSN_RIPREL:
	case DJP_INSN_JMP_IND:
		memcpy(buf, code, len);
		if (x->disp_off && put_rel32(buf, x->disp_off, to, len, x->pub.target))
			return set_why(why, "a rip-relative operand is out of reach of the copy", -ERANGE);
		return len;
	case DJP_INSN_JMP_REL:
		buf[0] = 0xe9;
		if (put_rel32(buf, 1, to, 5, x->pub.target))
			return set_why(why, range, -ERANGE);
		return 5;
	case DJP_INSN_JCC_REL:
		buf[0] = 0x0f;
		buf[1] = 0x80 | x->cc;
		if (put_rel32(buf, 2, to, 6, x->pub.target))
			return set_why(why, range, -ERANGE);
		return 6;
	case DJP_INSN_CALL_REL:
		n = put_push64(buf, from + len);
		buf[n] = 0xe9;
		if (put_rel32(buf, n + 1, to + n, 5, x->pub.target))
			return set_why(why, range, -ERANGE);
		return n + 5;
	case DJP_INSN_CALL_IND:
		n = put_push64(buf, from + len);
		memcpy(buf + n, code, len);
		buf[n + x->modrm_off] = (buf[n + x->modrm_off] & ~0x38) | (4 << 3); /* ff /2 -> ff /4 */
		if (x->disp_off && put_rel32(buf + n, x->disp_off, to + n, len, x->pub.target))
			return set_why(why, "a rip-relative operand is out of reach of the copy", -ERANGE);
		return n + len;
	default:
		return set_why(why, x->pub.why, -ENOTSUP);
	}
}

/* The copies of code[0..len), then (back) the jump to from + len. */
static ssize_t relocate(const uint8_t *code, size_t len, uintptr_t from, uintptr_t to, uint8_t *out, size_t cap,
			uint8_t *map, bool back, const char **why)
{
	uint8_t buf[MAX_OUT_INSN];
	ZydisDecoder dec;
	struct xinsn x;
	size_t off = 0, o = 0;
	int n;

	if (decoder_init(&dec))
		return set_why(why, "no decoder", -ENOSYS);
	if (map)
		memset(map, 0xff, len + 1);
	while (off < len) {
		n = decode(&dec, code + off, len - off, from + off, &x);
		if (n == -ENODATA)
			return set_why(why, "an instruction crosses the end of the range", -ENOTSUP);
		if (n)
			return set_why(why, "undecodable instruction", -EILSEQ);
		n = relocate_one(&x, code + off, from + off, to + o, buf, why);
		if (n < 0)
			return n;
		if (map && o >= 0xff)
			return set_why(why, "the copy is too long for its map", -E2BIG);
		if (o + n > cap)
			return set_why(why, "the output buffer is too small", -ENOSPC);
		if (map)
			map[off] = o;
		memcpy(out + o, buf, n);
		off += x.pub.len;
		o += n;
	}
	if (!back)
		return (ssize_t)o;
	if (!x86_rel32_fits(to + o, X86_JMP_REL32_LEN, from + len))
		return set_why(why, "the jump back is out of rel32 reach", -ERANGE);
	if (map && o >= 0xff)
		return set_why(why, "the copy is too long for its map", -E2BIG);
	if (o + X86_JMP_REL32_LEN > cap)
		return set_why(why, "the output buffer is too small", -ENOSPC);
	if (map)
		map[len] = o;
	x86_encode_jmp(out + o, to + o, from + len);
	return o + X86_JMP_REL32_LEN;
}

ssize_t djp_insn_relocate(const uint8_t *code, size_t len, uintptr_t from, uintptr_t to, uint8_t *out, size_t cap,
			  uint8_t *map, const char **why)
{
	return relocate(code, len, from, to, out, cap, map, true, why);
}

ssize_t djp_insn_relocate_on(const uint8_t *code, size_t len, uintptr_t from, uintptr_t to, uint8_t *out, size_t cap,
			     const char **why)
{
	return relocate(code, len, from, to, out, cap, NULL, false, why);
}

/*
 * The rules for the instructions of one run [lo, end) of the function
 * that holds the site (lo <= site < end, all three offsets from the
 * function's start, already known to be instruction boundaries of its
 * linear decode).  A run that starts before its site (lo < site) must
 * also reach the site from its first byte by falling through: no jump,
 * call or return before it.
 */
static int run_insns_check(const ZydisDecoder *dec, const uint8_t *fcode, size_t fsize, uintptr_t fstart, size_t lo,
			   size_t site, size_t end, const char **why)
{
	struct xinsn x;

	for (size_t off = lo; off < end; off += x.pub.len) {
		int last;

		decode(dec, fcode + off, fsize - off, fstart + off, &x);
		last = off + x.pub.len == end;
		if (x.call && !last)
			return set_why(why, "a call in the middle of the range", -EBUSY);
		if (x.pub.kind == DJP_INSN_BAD)
			return set_why(why, x.pub.why, -ENOTSUP);
		if ((x.pub.kind == DJP_INSN_RET || x.pub.kind == DJP_INSN_JMP_IND) && !last)
			return set_why(why, "a ret or indirect jump in the middle of the range", -ENOTSUP);
		if (off < site && x.pub.kind == DJP_INSN_JMP_REL)
			return set_why(why, "a jump between the run's start and the site", -ENOTSUP);
	}
	return 0;
}

static const char *const target_inside = "a jump in the function lands inside the range";
static const char *const indirect_inside = "the function has an indirect jump (a jump table may land inside)";

/* A function's branches, kept by one decode of it (djp_insn_jump_range_known). */
struct branches {
	uintptr_t *v;
	size_t n, cap;
};

static int branches_push(struct branches *b, uintptr_t target)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		uintptr_t *v = realloc(b->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = target;
	return 0;
}

/* Every branch of the function, in its order: the first that lands
 * inside (lo, end), or is an indirect jmp whose targets are not known,
 * refuses the run. */
static int branches_kept_check(const struct branches *b, uintptr_t lo, uintptr_t end, const char **why)
{
	for (size_t i = 0; i < b->n; i++) {
		if (b->v[i] == UINTPTR_MAX)
			return set_why(why, indirect_inside, -EBUSY);
		if (b->v[i] > lo && b->v[i] < end)
			return set_why(why, target_inside, -EBUSY);
	}
	return 0;
}

int djp_insn_jump_range_known(const uint8_t *fcode, size_t fsize, uintptr_t fstart, uintptr_t addr, unsigned known,
			      unsigned *len, const char **why)
{
	ZydisDecoder dec;
	struct xinsn x;
	size_t off, site, end = 0;
	int boundary = 0, err;
	bool indirect_known = known & (DJP_RUN_INDIRECT_KNOWN | DJP_RUN_BRANCHES_KNOWN);

	if (decoder_init(&dec))
		return set_why(why, "no decoder", -ENOSYS);
	if (addr < fstart || addr - fstart >= fsize)
		return set_why(why, "the address is outside the function", -EINVAL);
	site = addr - fstart;

	/* The whole function decodes, the site is a boundary, and the run
	 * ends inside.  The same pass keeps the function's branches, in its
	 * order (an indirect jmp as UINTPTR_MAX), for branches_kept_check
	 * after it: one decode of the function, not two.  Where the caller
	 * knows all that of the function already (DJP_RUN_BRANCHES_KNOWN:
	 * the object's map, decoded from this function's start), the decode
	 * stops at the run's end: function("*") over python3.11 decodes 5
	 * instructions a function then, not 60. */
	struct branches br = { 0 };
	for (off = 0; off < fsize && !(end && (known & DJP_RUN_BRANCHES_KNOWN)); off += x.pub.len) {
		if (decode(&dec, fcode + off, fsize - off, fstart + off, &x)) {
			free(br.v);
			return set_why(why, "undecodable instruction in the function", -EILSEQ);
		}
		if (off == site)
			boundary = 1;
		if (off >= site && !end && off + x.pub.len - site >= X86_JMP_REL32_LEN)
			end = off + x.pub.len;
		if (known & DJP_RUN_BRANCHES_KNOWN)
			continue;
		if ((x.relbranch || (x.pub.kind == DJP_INSN_JMP_IND && !indirect_known)) &&
		    branches_push(&br, x.relbranch ? x.pub.target : UINTPTR_MAX)) {
			free(br.v);
			return set_why(why, "out of memory", -ENOMEM);
		}
	}
	err = !boundary ? set_why(why, "not an instruction boundary", -EINVAL)
	      : !end	? set_why(why, "the range crosses the function's end", -ERANGE)
			: run_insns_check(&dec, fcode, fsize, fstart, site, site, end, why);
	if (!err)
		err = branches_kept_check(&br, fstart + site, fstart + end, why);
	free(br.v);
	if (err)
		return err;
	*len = end - site;
	return 0;
}

/* The function, decoded once from its start: its instruction boundaries
 * and the offsets its direct branches land on, bit k of each for offset k
 * (fsize + 1 bits), and whether it has an indirect jmp. */
struct fmap {
	uint8_t *starts, *targets;
	bool indirect;
};

static bool bit(const uint8_t *v, size_t k)
{
	return v[k / 8] >> (k % 8) & 1;
}

static int fmap_read(const ZydisDecoder *dec, const uint8_t *fcode, size_t fsize, uintptr_t fstart, struct fmap *m)
{
	struct xinsn x;

	if (!(m->starts = calloc(2, fsize / 8 + 1)))
		return -ENOMEM;
	m->targets = m->starts + fsize / 8 + 1;
	m->indirect = false;
	for (size_t off = 0; off < fsize; off += x.pub.len) {
		if (decode(dec, fcode + off, fsize - off, fstart + off, &x))
			return -EILSEQ;
		m->starts[off / 8] |= (uint8_t)(1u << (off % 8));
		if (x.relbranch && x.pub.target >= fstart && x.pub.target - fstart <= fsize)
			m->targets[(x.pub.target - fstart) / 8] |= (uint8_t)(1u << ((x.pub.target - fstart) % 8));
		m->indirect |= x.pub.kind == DJP_INSN_JMP_IND;
	}
	m->starts[fsize / 8] |= (uint8_t)(1u << (fsize % 8)); /* the end is one */
	return 0;
}

int djp_insn_jump_runs_before(const uint8_t *fcode, size_t fsize, uintptr_t fstart, uintptr_t addr,
			      bool indirect_known, unsigned max, djp_run_fn ok, void *ctx, unsigned *pre, unsigned *len,
			      const char **why)
{
	ZydisDecoder dec;
	struct xinsn x;
	struct fmap m = { 0 };
	size_t site, lo, end;
	const char *w = "no earlier instruction boundary gives a run";
	int err = -ERANGE;

	if (decoder_init(&dec))
		return set_why(why, "no decoder", -ENOSYS);
	if (addr < fstart || addr - fstart >= fsize)
		return set_why(why, "the address is outside the function", -EINVAL);
	if (addr == fstart) /* (nothing before a function's first instruction) */
		return set_why(why, w, err);
	site = addr - fstart;
	if ((err = fmap_read(&dec, fcode, fsize, fstart, &m)) || !bit(m.starts, site)) {
		free(m.starts);
		return set_why(why, err == -ENOMEM ? "out of memory" : "not an instruction boundary",
			       err == -ENOMEM ? err : -EINVAL);
	}
	err = -ERANGE;
	if (m.indirect && !indirect_known) {
		free(m.starts);
		return set_why(why, indirect_inside, -EBUSY);
	}
	decode(&dec, fcode + site, fsize - site, addr, &x);
	/* Nearest start first: the run ends past the site's instruction,
	 * at the first boundary that makes it a jump's length. */
	for (lo = site; lo-- > 0 && site + x.pub.len - lo <= max;) {
		if (!bit(m.starts, lo))
			continue;
		end = site + x.pub.len;
		while (end < fsize && (end - lo < X86_JMP_REL32_LEN || !bit(m.starts, end)))
			end++;
		if (end - lo < X86_JMP_REL32_LEN || end - lo > max)
			continue;
		err = run_insns_check(&dec, fcode, fsize, fstart, lo, site, end, &w);
		for (size_t k = lo + 1; !err && k < end; k++)
			if (bit(m.targets, k))
				err = set_why(&w, target_inside, -EBUSY);
		if (!err && ok)
			err = ok(ctx, fstart + lo, (unsigned)(end - lo), &w);
		if (!err) {
			*pre = (unsigned)(site - lo);
			*len = (unsigned)(end - lo);
			break;
		}
	}
	free(m.starts);
	if (err)
		return set_why(why, w, err);
	return 0;
}

int djp_insn_jump_range(const uint8_t *fcode, size_t fsize, uintptr_t fstart, uintptr_t addr, unsigned *len,
			const char **why)
{
	return djp_insn_jump_range_known(fcode, fsize, fstart, addr, 0, len, why);
}

bool djp_insn_flags_dead(const uint8_t *code, size_t avail, uintptr_t at)
{
	const ZydisAccessedFlagsMask status = ZYDIS_CPUFLAG_CF | ZYDIS_CPUFLAG_PF | ZYDIS_CPUFLAG_AF | ZYDIS_CPUFLAG_ZF |
					      ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_OF;
	ZydisDecoder dec;
	size_t off = 0;

	if (decoder_init(&dec))
		return false;
	for (int k = 0; k < 32 && off < avail; k++) {
		ZydisDecodedInstruction in;
		ZydisAccessedFlagsMask written;
		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&dec, NULL, code + off, avail - off, &in)))
			return false;
		if (!in.cpu_flags || (in.cpu_flags->tested & status))
			return false;
		written = in.cpu_flags->modified | in.cpu_flags->set_0 | in.cpu_flags->set_1 | in.cpu_flags->undefined;
		if ((written & status) == status)
			return true;
		if (in.meta.category == ZYDIS_CATEGORY_COND_BR || in.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		    in.meta.category == ZYDIS_CATEGORY_CALL || in.meta.category == ZYDIS_CATEGORY_RET ||
		    in.meta.category == ZYDIS_CATEGORY_SYSTEM || in.meta.category == ZYDIS_CATEGORY_INTERRUPT)
			return false;
		off += in.length;
	}
	(void)at;
	return false;
}
