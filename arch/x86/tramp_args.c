/*
 * The argument prefetch: a DJP_LEAN_PREFETCH trampoline loads its site's
 * arguments into the third to sixth argument registers of its call to the
 * handler (%rdx, %rcx, %r8, %r9), sign- or zero-extended exactly as
 * djp_hit_arg would give them, so that a handler that takes them (the
 * recorder's fast entry) does no lookup and no decoding of locations.
 *
 * A location is compiled into one or two instructions: a register into a
 * move with the right extension (movsbq, movzbl, movswq, movzwl, movslq,
 * movl, movq), memory off any base and index the same way (with %rsp
 * meaning the site's %rsp, not the trampoline's), an immediate into a
 * move, a global into movabs of its address and a load.  Sources are read
 * from the registers themselves, which the trampoline has not changed,
 * except one that an earlier argument's load overwrote, and %rax when the
 * view needed the site's %rsp or %rip (computed there): those are read
 * from their slots in the view.  Up to DJP_TRAMP_PREFETCH arguments; a site
 * with more, or a location this does not know (%ah and the like), is not
 * prefetched (arch_tramp_prefetches says so, and the kernel then uses the
 * plain lean flavour).
 */
#include "arch/x86/tramp.h"

/* An instruction's register or memory operand, by hardware numbers. */
struct operand {
	int is_mem;
	int reg;	 /* !is_mem */
	int base, index; /* is_mem: -1 for none */
	int scale;	 /* 1, 2, 4, 8 */
	int32_t disp;
};

/* REX, opcode, ModRM (+ SIB, displacement) for `op regf, operand`. */
static void emit_rm(struct emit *e, int w, const char *op, size_t oplen, int regf, const struct operand *o)
{
	uint8_t rex = (uint8_t)(0x40 | (w ? 8 : 0) | ((regf & 8) ? 4 : 0));
	if (!o->is_mem) {
		/* always a REX: the byte registers are then %sil, %dil, ... */
		b1(e, (uint8_t)(rex | ((o->reg & 8) ? 1 : 0)));
		bytes(e, op, oplen);
		b1(e, (uint8_t)(0xc0 | (regf & 7) << 3 | (o->reg & 7)));
		return;
	}
	int ss = o->scale == 8 ? 3 : o->scale == 4 ? 2 : o->scale == 2 ? 1 : 0;
	int idx = o->index >= 0 ? (o->index & 7) : 4; /* 100: no index */
	rex |= (uint8_t)((o->index >= 0 && (o->index & 8)) ? 2 : 0);
	rex |= (uint8_t)((o->base >= 0 && (o->base & 8)) ? 1 : 0);
	b1(e, rex);
	bytes(e, op, oplen);
	if (o->base < 0) { /* disp32 with no base: SIB base=101, mod=00 */
		b1(e, (uint8_t)(0x04 | (regf & 7) << 3));
		b1(e, (uint8_t)(ss << 6 | idx << 3 | 5));
		b4(e, (uint32_t)o->disp);
		return;
	}
	int mod = (o->disp == 0 && (o->base & 7) != 5) ? 0 : (o->disp >= -128 && o->disp <= 127) ? 1 : 2;
	if (o->index >= 0 || (o->base & 7) == 4) {
		b1(e, (uint8_t)(mod << 6 | (regf & 7) << 3 | 4));
		b1(e, (uint8_t)(ss << 6 | idx << 3 | (o->base & 7)));
	} else {
		b1(e, (uint8_t)(mod << 6 | (regf & 7) << 3 | (o->base & 7)));
	}
	if (mod == 1)
		b1(e, (uint8_t)(int8_t)o->disp);
	else if (mod == 2)
		b4(e, (uint32_t)o->disp);
}

/* dst = the low `size` bytes of the operand, sign- or zero-extended. */
static void load_extended(struct emit *e, int dst, unsigned size, int is_signed, const struct operand *o)
{
	switch (size) {
	case 1:
		emit_rm(e, is_signed, is_signed ? "\x0f\xbe" : "\x0f\xb6", 2, dst, o); /* movsbq / movzbl */
		break;
	case 2:
		emit_rm(e, is_signed, is_signed ? "\x0f\xbf" : "\x0f\xb7", 2, dst, o); /* movswq / movzwl */
		break;
	case 4:
		emit_rm(e, is_signed, is_signed ? "\x63" : "\x8b", 1, dst, o); /* movslq / movl */
		break;
	default:
		emit_rm(e, 1, "\x8b", 1, dst, o); /* movq */
		break;
	}
}

/* The handler's third to sixth argument registers: %rdx %rcx %r8 %r9. */
static const uint8_t prefetch_reg[DJP_TRAMP_PREFETCH] = { 2, 1, 8, 9 };

static int prefetchable(const struct djp_argloc *a)
{
	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		return 0;
	switch (a->kind) {
	case DJP_LOC_REG:
		return a->reg >= 0 && a->reg < DJP_REG_RIP && !a->reg_shift && (a->reg != DJP_REG_RSP || a->size == 8);
	case DJP_LOC_MEM:
		return a->reg < DJP_REG_RIP && (a->index == DJP_REG_NONE || (a->index >= 0 && a->index < DJP_REG_RSP)) &&
		       a->disp >= INT32_MIN / 2 && a->disp <= INT32_MAX / 2;
	case DJP_LOC_IMM:
	case DJP_LOC_ABS:
	case DJP_LOC_NONE:
		return 1;
	default:
		return 0;
	}
}

int arch_tramp_prefetches(const struct djp_argloc *args, unsigned nargs)
{
	if (nargs > DJP_TRAMP_PREFETCH)
		return 0;
	for (unsigned i = 0; i < nargs; i++)
		if (!prefetchable(&args[i]))
			return 0;
	return 1;
}

/*
 * Where the value of register `reg` (enum djp_reg) is now, for a read: in
 * the register itself, unless an earlier prefetch overwrote it (`dirty`,
 * hardware numbers), then in its slot of the view.  %rsp is the site's,
 * which `f` says how to get.
 */
static struct operand reg_source(int reg, uint32_t dirty, const struct frame *f)
{
	struct operand o = { 0, hw[reg], -1, -1, 1, 0 };
	if (dirty & (1u << hw[reg]))
		o = (struct operand){ 1, 0, 4, -1, 1, f->view + 8 * reg };
	return o;
}

/* A base register for an address: the register, or `scratch` loaded with
 * its value; %rsp becomes the site's %rsp by adjusting *disp. */
static int base_reg(struct emit *e, int reg, uint32_t dirty, const struct frame *f, int scratch, int32_t *disp)
{
	struct operand o;
	if (reg == DJP_REG_RSP) {
		if (f->saved_rsp < 0) {
			*disp += f->to_site_rsp;
			return 4;
		}
		o = (struct operand){ 1, 0, 4, -1, 1, f->saved_rsp };
		emit_rm(e, 1, "\x8b", 1, scratch, &o);
		*disp += f->to_site_rsp;
		return scratch;
	}
	if (!(dirty & (1u << hw[reg])))
		return hw[reg];
	o = reg_source(reg, dirty, f);
	emit_rm(e, 1, "\x8b", 1, scratch, &o);
	return scratch;
}

/* Load each argument into its prefetch register (scratch: %r10, %r11,
 * which the trampoline saved). */
void djp_tramp_prefetch(struct emit *e, const struct djp_tramp_req *r, const struct frame *f)
{
	/* djp_tramp_save_view computed the site's %rsp or %rip in %rax when
	 * an argument reads one: %rax itself is then in its slot only */
	uint32_t dirty = (r->regs_used & (1u << DJP_REG_RSP | 1u << DJP_REG_RIP)) ? 1u << hw[DJP_REG_RAX] : 0;
	for (unsigned i = 0; i < r->nargs; i++) {
		const struct djp_argloc *a = &r->args[i];
		int d = prefetch_reg[i];
		struct operand o;
		int32_t disp = (int32_t)a->disp;
		switch (a->kind) {
		case DJP_LOC_REG:
			if (a->reg == DJP_REG_RSP) {
				if (f->saved_rsp < 0) {
					o = (struct operand){ 1, 0, 4, -1, 1, f->to_site_rsp };
				} else {
					o = (struct operand){ 1, 0, 4, -1, 1, f->saved_rsp };
					emit_rm(e, 1, "\x8b", 1, d, &o);
					o = (struct operand){ 1, 0, d, -1, 1, f->to_site_rsp };
				}
				emit_rm(e, 1, "\x8d", 1, d, &o); /* lea */
				break;
			}
			o = reg_source(a->reg, dirty, f);
			load_extended(e, d, a->size, a->is_signed, &o);
			break;
		case DJP_LOC_MEM: {
			int base = a->reg == DJP_REG_NONE ? -1 : base_reg(e, a->reg, dirty, f, 10, &disp);
			int index = a->index == DJP_REG_NONE ? -1 : base_reg(e, a->index, dirty, f, 11, &(int32_t){ 0 });
			o = (struct operand){ 1, 0, base, index, a->scale ? a->scale : 1, disp };
			load_extended(e, d, a->size, a->is_signed, &o);
			break;
		}
		case DJP_LOC_IMM:
			if (a->disp >= INT32_MIN && a->disp <= INT32_MAX) {
				o = (struct operand){ 0, d, -1, -1, 1, 0 };
				emit_rm(e, 1, "\xc7", 1, 0, &o); /* mov $imm32,%d */
				b4(e, (uint32_t)(int32_t)a->disp);
			} else {
				b1(e, (uint8_t)(0x48 | ((d & 8) ? 1 : 0))), b1(e, (uint8_t)(0xb8 | (d & 7)));
				b8(e, (uint64_t)a->disp); /* movabs $imm64,%d */
			}
			break;
		case DJP_LOC_ABS:
			b1(e, (uint8_t)(0x48 | ((d & 8) ? 1 : 0))), b1(e, (uint8_t)(0xb8 | (d & 7)));
			b8(e, (uint64_t)(r->bias + (uintptr_t)a->disp)); /* movabs $addr,%d */
			o = (struct operand){ 1, 0, d, -1, 1, 0 };
			load_extended(e, d, a->size, a->is_signed, &o);
			break;
		default: /* unknown: reads as 0 */
			o = (struct operand){ 0, d, -1, -1, 1, 0 };
			emit_rm(e, 0, "\x31", 1, d, &o); /* xor %d,%d */
			break;
		}
		dirty |= 1u << d;
	}
}

