/*
 * A parameter's or a variable's DWARF location at an address, as one
 * argument location (lib/func_params.c asks, away from a function's
 * entry or where the calling convention is not followed).
 *
 * The forms.  The DWARF location at pc (dwarf_getlocation_addr, so that
 * location lists count), of which these forms are one struct djp_argloc:
 * DW_OP_regN/regx (register), DW_OP_bregN/bregx (memory at a register
 * plus offset), DW_OP_fbreg (the same, once the frame base is: a register,
 * a register plus offset, or DW_OP_call_frame_cfa, whose rule at pc the
 * call-frame information gives, .eh_frame first, then .debug_frame; a
 * rule other than register plus offset is too complex), DW_OP_addr
 * (memory at a link-time address), a constant with DW_OP_stack_value, or
 * DW_OP_bregN 0 with DW_OP_stack_value (the register's value), each
 * optionally followed by one DW_OP_piece that covers the whole value.  At
 * the entry itself DW_OP_entry_value of a register is that register.
 * DW_AT_const_value is a constant.  The rest is "location too complex".
 *
 * DWARF's register numbers are the arch's (arch_dwarf_reg); a vector
 * register only gives the reason a value is unavailable.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/func_params_int.h"

/* A DWARF register number as the register view's, or DJP_REG_NONE: no
 * value lives in the pc (x86-64's return-address column). */
static int map_reg(Dwarf_Word dwarf)
{
	int r = arch_dwarf_reg(dwarf);
	return r == DJP_REG_PC ? DJP_REG_NONE : r;
}

/* The register of DW_OP_bregN (memory at it plus an offset), as the
 * view's, or DJP_REG_NONE. */
static int breg_op(const Dwarf_Op *op)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31)
		return map_reg(op->atom - DW_OP_breg0);
	return DJP_REG_NONE;
}

/* The register of DW_OP_regN or DW_OP_regx (the value is in it), or -1. */
static Dwarf_Word reg_op(const Dwarf_Op *op)
{
	if (op->atom >= DW_OP_reg0 && op->atom <= DW_OP_reg31)
		return op->atom - DW_OP_reg0;
	if (op->atom == DW_OP_regx)
		return op->number;
	return (Dwarf_Word)-1;
}

/* Unavailable, for a static reason. */
void djp_param_none(struct pwork *w, const char *why)
{
	memset(&w->loc, 0, sizeof(w->loc));
	w->loc.kind = DJP_LOC_NONE;
	w->loc.reg = w->loc.index = DJP_REG_NONE;
	w->why = why;
}

/* A location of kind `kind` with the value's size and signedness. */
void djp_param_loc(struct pwork *w, unsigned kind, int reg, int64_t disp)
{
	memset(&w->loc, 0, sizeof(w->loc));
	w->loc.kind = (uint8_t)kind;
	w->loc.size = (uint8_t)w->ti.size;
	w->loc.is_signed = w->ti.is_signed;
	w->loc.reg = (int8_t)reg;
	w->loc.index = DJP_REG_NONE;
	w->loc.scale = 1;
	w->loc.disp = disp;
	w->why = NULL;
}

/* A constant as the parameter's type reads it: its low bytes, extended. */
static int64_t as_value(const struct djp_tinfo *ti, uint64_t v)
{
	unsigned sh;
	if (!ti->size || ti->size >= 8)
		return (int64_t)v;
	sh = 64 - 8 * (unsigned)ti->size;
	return ti->is_signed ? (int64_t)(v << sh) >> sh : (int64_t)((v << sh) >> sh);
}

/* The CFA at pc as register + offset, from .eh_frame, else .debug_frame. */
static bool cfa_at(struct djp_loc_ctx *c, int *reg, int64_t *off)
{
	Dwarf_CFI *cfis[2];

	if (!c->pf->eh_looked) {
		c->pf->eh_looked = true;
		c->pf->eh_frame = dwarf_getcfi_elf(c->pf->elf);
	}
	cfis[0] = c->pf->eh_frame;
	cfis[1] = dwarf_getcfi(c->src->dw);
	for (unsigned i = 0; i < 2; i++) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Op *ops;
		size_t nops;
		bool ok;
		if (!cfis[i] || dwarf_cfi_addrframe(cfis[i], c->pc, &frame) != 0)
			continue;
		/* libdw gives a register rule as DW_OP_bregx reg, offset */
		ok = dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_bregx &&
		     map_reg(ops[0].number) != DJP_REG_NONE;
		if (ok) {
			*reg = map_reg(ops[0].number);
			*off = (int64_t)ops[0].number2;
		}
		free(frame);
		return ok; /* the table that covers pc says, whatever it says */
	}
	return false;
}

/* The frame base at pc as register + offset (DW_OP_fbreg's base). */
static bool frame_base(struct djp_loc_ctx *c, int *reg, int64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t n;

	if (!dwarf_attr(c->sub, DW_AT_frame_base, &a) || dwarf_getlocation_addr(&a, c->pc, &ops, &n, 1) != 1 ||
	    n != 1)
		return false;
	if (ops[0].atom == DW_OP_call_frame_cfa)
		return cfa_at(c, reg, off);
	if (breg_op(&ops[0]) != DJP_REG_NONE) {
		*reg = breg_op(&ops[0]);
		*off = (int64_t)ops[0].number;
		return true;
	}
	if (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31 &&
	    map_reg(ops[0].atom - DW_OP_reg0) != DJP_REG_NONE) { /* clang: the register's value */
		*reg = map_reg(ops[0].atom - DW_OP_reg0);
		*off = 0;
		return true;
	}
	return false;
}

/* A constant pushing operation's value. */
static bool const_op(const Dwarf_Op *op, uint64_t *v)
{
	if (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31) {
		*v = op->atom - DW_OP_lit0;
		return true;
	}
	switch (op->atom) {
	case DW_OP_const1u:
	case DW_OP_const1s:
	case DW_OP_const2u:
	case DW_OP_const2s:
	case DW_OP_const4u:
	case DW_OP_const4s:
	case DW_OP_const8u:
	case DW_OP_const8s:
	case DW_OP_constu:
	case DW_OP_consts:
		*v = op->number; /* libdw sign-extends the signed ones */
		return true;
	default:
		return false;
	}
}

/* DW_OP_entry_value(DW_OP_regN): the register N, else -1. */
static int entry_value_reg(Dwarf_Attribute *attr, Dwarf_Op *op)
{
	Dwarf_Attribute sub;
	Dwarf_Op *ops;
	size_t n;

	if (dwarf_getlocation_attr(attr, op, &sub) != 0 || dwarf_getlocation(&sub, &ops, &n) != 0 || n != 1)
		return -1;
	return reg_op(&ops[0]) == (Dwarf_Word)-1 ? -1 : map_reg(reg_op(&ops[0]));
}

/* One location expression, for a readable integer w, as one argloc. */
static void from_expr(struct djp_loc_ctx *c, struct pwork *w, Dwarf_Attribute *attr, Dwarf_Op *ops, size_t n)
{
	uint64_t v;
	int reg;
	int64_t off;

	/* a single piece that holds the whole value is the value */
	if (n >= 2 && ops[n - 1].atom == DW_OP_piece && ops[n - 1].number >= w->ti.size) {
		n--;
		for (size_t i = 0; i < n; i++)
			if (ops[i].atom == DW_OP_piece || ops[i].atom == DW_OP_bit_piece)
				goto complex;
	}
	if (n == 1) {
		Dwarf_Word r = reg_op(&ops[0]);
		if (r != (Dwarf_Word)-1) {
			if (map_reg(r) == DJP_REG_NONE)
				goto complex;
			djp_param_loc(w, DJP_LOC_REG, map_reg(r), 0);
			return;
		}
		if (breg_op(&ops[0]) != DJP_REG_NONE) {
			djp_param_loc(w, DJP_LOC_MEM, breg_op(&ops[0]), (int64_t)ops[0].number);
			return;
		}
		if (ops[0].atom == DW_OP_bregx && map_reg(ops[0].number) != DJP_REG_NONE) {
			djp_param_loc(w, DJP_LOC_MEM, map_reg(ops[0].number), (int64_t)ops[0].number2);
			return;
		}
		if (ops[0].atom == DW_OP_fbreg) {
			if (!frame_base(c, &reg, &off))
				goto complex;
			djp_param_loc(w, DJP_LOC_MEM, reg, off + (int64_t)ops[0].number);
			return;
		}
		if (ops[0].atom == DW_OP_addr) {
			djp_param_loc(w, DJP_LOC_ABS, DJP_REG_NONE, (int64_t)ops[0].number);
			return;
		}
	}
	if (n == 2 && ops[1].atom == DW_OP_stack_value) {
		if (const_op(&ops[0], &v)) {
			djp_param_loc(w, DJP_LOC_IMM, DJP_REG_NONE, as_value(&w->ti, v));
			return;
		}
		if (breg_op(&ops[0]) != DJP_REG_NONE && ops[0].number == 0) {
			djp_param_loc(w, DJP_LOC_REG, breg_op(&ops[0]), 0);
			return;
		}
		/* at the entry, the value a register had at the entry is in it */
		if ((ops[0].atom == DW_OP_entry_value || ops[0].atom == DW_OP_GNU_entry_value) &&
		    c->pc == c->func_addr && (reg = entry_value_reg(attr, &ops[0])) >= 0) {
			djp_param_loc(w, DJP_LOC_REG, reg, 0);
			return;
		}
	}
complex:
	djp_param_none(w, DJP_WHY_COMPLEX);
}

/* DW_AT_const_value: the constant, for a readable integer. */
void djp_param_const_value(struct pwork *w, Dwarf_Attribute *a)
{
	Dwarf_Sword s;
	Dwarf_Word u;

	switch (dwarf_whatform(a)) {
	case DW_FORM_sdata:
	case DW_FORM_implicit_const:
		if (dwarf_formsdata(a, &s) == 0) {
			djp_param_loc(w, DJP_LOC_IMM, DJP_REG_NONE, as_value(&w->ti, (uint64_t)s));
			return;
		}
		break;
	case DW_FORM_udata:
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
		if (dwarf_formudata(a, &u) == 0) {
			djp_param_loc(w, DJP_LOC_IMM, DJP_REG_NONE, as_value(&w->ti, u));
			return;
		}
		break;
	}
	djp_param_none(w, DJP_WHY_COMPLEX);
}

/* Is the location at pc one vector register (for the reason given)? */
static bool in_xmm(Dwarf_Attribute *a, uint64_t pc)
{
	Dwarf_Op *ops;
	size_t n;
	return dwarf_getlocation_addr(a, pc, &ops, &n, 1) == 1 && n >= 1 && arch_dwarf_is_vector(reg_op(&ops[0]));
}

/* The DWARF location of w at c->pc. */
void djp_param_dwarf_location(struct djp_loc_ctx *c, struct pwork *w)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t n;
	int got;

	if (!w->has_type) {
		djp_param_none(w, DJP_WHY_NOTYPE);
		return;
	}
	if (!w->has_conc) {
		djp_param_none(w, w->ti.kind == DJP_TK_INT ? DJP_WHY_OPTIMIZED : arch_why_not_int(&w->ti, false));
		return;
	}
	if (w->ti.kind != DJP_TK_INT) {
		bool vec = dwarf_attr(&w->conc, DW_AT_location, &a) && in_xmm(&a, c->pc);
		djp_param_none(w, arch_why_not_int(&w->ti, vec));
		return;
	}
	if (dwarf_attr(&w->conc, DW_AT_const_value, &a)) {
		djp_param_const_value(w, &a);
		return;
	}
	if (!dwarf_attr(&w->conc, DW_AT_location, &a)) {
		djp_param_none(w, DJP_WHY_OPTIMIZED);
		return;
	}
	got = dwarf_getlocation_addr(&a, c->pc, &ops, &n, 1);
	if (got == 0)
		djp_param_none(w, DJP_WHY_NOLOC);
	else if (got < 0 || !n)
		djp_param_none(w, DJP_WHY_COMPLEX);
	else
		from_expr(c, w, &a, ops, n);
}
