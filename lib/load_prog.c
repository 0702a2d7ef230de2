/*
 * Load programs (lib/load_prog.h has the essay): the check both ends make
 * of a program, and its form on the wire.
 */
#include <errno.h>

#include "lib/load_prog.h"
#include "lib/markers.h"
#include "lib/load_wire.h"

static int loc_check(const struct djp_argloc *b);

int djp_load_check(const struct djp_load_prog *p)
{
	if (p->nderef > DJP_LOAD_MAX_DEREF)
		return -EINVAL;
	if (p->size != 0 && p->size != 1 && p->size != 2 && p->size != 4 && p->size != 8)
		return -EINVAL;
	if (p->bit_size && (!p->size || p->bit_size > 64 || p->bit_off + p->bit_size > 8 * p->size))
		return -EINVAL;
	if (p->idx.kind != DJP_LOC_NONE && (p->idx_step > p->nderef || loc_check(&p->idx)))
		return -EINVAL;
	return loc_check(&p->base);
}

/* A location a program reads a value from: its base, its index. */
static int loc_check(const struct djp_argloc *b)
{
	if (b->size != 1 && b->size != 2 && b->size != 4 && b->size != 8)
		return -EINVAL;
	switch (b->kind) {
	case DJP_LOC_REG:
		return b->reg >= 0 && b->reg < DJP_REG_COUNT && b->reg_shift % 8 == 0 && b->reg_shift <= 56 ? 0 : -EINVAL;
	case DJP_LOC_MEM:
		if ((b->reg != DJP_REG_NONE && (b->reg < 0 || b->reg >= DJP_REG_COUNT)) ||
		    (b->index != DJP_REG_NONE && (b->index < 0 || b->index >= DJP_REG_COUNT)))
			return -EINVAL;
		return b->scale == 1 || b->scale == 2 || b->scale == 4 || b->scale == 8 ? 0 : -EINVAL;
	case DJP_LOC_IMM:
	case DJP_LOC_ABS:
	case DJP_LOC_ADDR:
		return 0;
	case DJP_LOC_SAVED:
		return b->disp >= 0 && b->disp < 32 ? 0 : -EINVAL;
	case DJP_LOC_ARG:
		return b->disp >= 0 && b->disp < DJP_MARKER_MAX_ARGS ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

/* A location on the wire: kind, size, sign, reg, index, scale, reg_shift
 * and disp. */
static void loc_put(struct djp_pbuf *b, const struct djp_argloc *l)
{
	djp_put_u8(b, l->kind);
	djp_put_u8(b, l->size);
	djp_put_u8(b, l->is_signed);
	djp_put_u8(b, (uint8_t)l->reg);
	djp_put_u8(b, (uint8_t)l->index);
	djp_put_u8(b, l->scale);
	djp_put_u8(b, l->reg_shift);
	djp_put_u64(b, (uint64_t)l->disp);
}

static void loc_get(struct djp_preader *r, struct djp_argloc *l)
{
	l->kind = djp_get_u8(r);
	l->size = djp_get_u8(r);
	l->is_signed = djp_get_u8(r) != 0;
	l->reg = (int8_t)djp_get_u8(r);
	l->index = (int8_t)djp_get_u8(r);
	l->scale = djp_get_u8(r);
	l->reg_shift = djp_get_u8(r);
	l->disp = (int64_t)djp_get_u64(r);
}

void djp_load_put(struct djp_pbuf *b, const struct djp_load_prog *p)
{
	loc_put(b, &p->base);
	djp_put_u8(b, p->nderef);
	djp_put_u8(b, p->size);
	djp_put_u8(b, p->is_signed);
	djp_put_u8(b, p->bit_off);
	djp_put_u8(b, p->bit_size);
	for (unsigned i = 0; i < p->nderef && i < DJP_LOAD_MAX_DEREF; i++)
		djp_put_u64(b, (uint64_t)p->off[i]);
	djp_put_u64(b, (uint64_t)p->last);
	djp_put_u16(b, p->str_bound);
	loc_put(b, &p->idx);
	djp_put_u8(b, p->idx_step);
	djp_put_u64(b, (uint64_t)p->idx_scale);
	djp_put_u8(b, p->at_entry);
}

int djp_load_get(struct djp_preader *r, struct djp_load_prog *p)
{
	*p = (struct djp_load_prog){ 0 };
	loc_get(r, &p->base);
	p->nderef = djp_get_u8(r);
	p->size = djp_get_u8(r);
	p->is_signed = djp_get_u8(r) != 0;
	p->bit_off = djp_get_u8(r);
	p->bit_size = djp_get_u8(r);
	if (p->nderef > DJP_LOAD_MAX_DEREF)
		return -EINVAL;
	for (unsigned i = 0; i < p->nderef; i++)
		p->off[i] = (int64_t)djp_get_u64(r);
	p->last = (int64_t)djp_get_u64(r);
	p->str_bound = djp_get_u16(r);
	loc_get(r, &p->idx);
	p->idx_step = djp_get_u8(r);
	p->idx_scale = (int64_t)djp_get_u64(r);
	p->at_entry = djp_get_u8(r) != 0;
	return r->bad ? -EPROTO : djp_load_check(p);
}
