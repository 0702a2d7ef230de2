/*
 * Built-in functions that read the target's memory: user_string() and
 * its kin, user_int() and its kin.
 *
 * A string whose address is a context variable the probe asked for
 * (user_string($arg2): check.c sets the bound) was copied by the target at
 * the hit, when the memory was there; any other address is read now,
 * through the source.  A fault is a run-time error, or the error string
 * the call gives; the _quoted forms say "NULL" or the address instead.
 */
#include <stdio.h>
#include <string.h>

#include "dwarfless.h"
#include "tapset.h"
#include "tools/djp/script/run/interp.h"
#include "tools/djp/script/typed.h"

/*
 * The string at the address argument a evaluates to, at most max bytes:
 * the copy the target made at the hit when a is a context variable whose
 * string the probe asked for, else read now through the source.  NULL on a
 * fault, with *addr the address.
 */
static const char *target_string(struct run *r, struct node *a, size_t max, uint64_t *addr, bool *cut)
{
	const char *buf_c;
	char *buf;
	*cut = false;
	if (a->kind == N_CTX && r->ev && r->bind) {
		int f = r->bind->field[a->slot];
		*addr = (uint64_t)r->ev->args[f];
		if (r->ev->strs[f]) {
			const char *t = r->ev->strs[f];
			if (!*addr || r->ev->str_fault[f])
				return NULL;
			if (strlen(t) > max)
				return *cut = true, arena_strn(r, t, max);
			return t;
		}
	} else if (a->kind == N_BUILTIN && (builtins[a->op].flags & BF_REGS)) { /* copied at the hit: dwarfless.c */
		bool have;
		const char *t = dwarfless_hit_string(r, a, addr, &have);
		if (have)
			return t && strlen(t) > max ? (*cut = true, arena_strn(r, t, max)) : t;
	} else if (a->kind == N_TYPED && r->ev && typed_string(r, a, &buf_c, addr)) {
		if (!buf_c || !*addr)
			return NULL;
		if (strlen(buf_c) > max)
			return *cut = true, arena_strn(r, buf_c, max);
		return buf_c;
	} else {
		*addr = (uint64_t)eval_n(r, a);
	}
	if (!r->src || !r->src->ops->read_str || !r->ev || !*addr)
		return NULL;
	if (max > MAXSTRINGLEN - 1)
		max = MAXSTRINGLEN - 1;
	buf = arena_alloc(r, max + 1);
	if (r->src->ops->read_str(r->src, r->ev->pid, *addr, buf, max + 1) < 0)
		return NULL;
	*cut = strlen(buf) == max;
	return buf;
}

/* user_string(addr[, err]), with has_n user_string_n(addr, n[, err]);
 * quoted: the _quoted forms */
static const char *user_string(struct run *r, struct node *n, bool has_n, bool quoted)
{
	int64_t want = has_n ? eval_n(r, n->args[1]) : (int64_t)MAXSTRINGLEN - 1;
	size_t max = want < 0 ? 0 : (size_t)want > MAXSTRINGLEN - 1 ? MAXSTRINGLEN - 1 : (size_t)want;
	uint64_t addr = 0;
	bool cut;
	const char *t = target_string(r, n->args[0], max, &addr, &cut);
	int err_arg = has_n ? 2 : 1;

	if (quoted) {
		if (!addr)
			return "NULL";
		if (t) {
			char *q = arena_alloc(r, MAXSTRINGLEN);
			tapset_text_str(t, max, true, cut, q, MAXSTRINGLEN);
			return q;
		}
		char *hex = arena_alloc(r, 24);
		snprintf(hex, 24, "0x%llx", (unsigned long long)addr);
		return hex;
	}
	if (t)
		return t;
	if (n->nargs > err_arg)
		return eval_s(r, n->args[err_arg]);
	rt_error(r, n, "user string copy fault -14 at 0x%llx", (unsigned long long)addr);
}

const char *bi_user_string(struct run *r, struct node *n)
{
	return user_string(r, n, false, false);
}

const char *bi_user_string_n(struct run *r, struct node *n)
{
	return user_string(r, n, true, false);
}

const char *bi_user_string_quoted(struct run *r, struct node *n)
{
	return user_string(r, n, false, true);
}

const char *bi_user_string_n_quoted(struct run *r, struct node *n)
{
	return user_string(r, n, true, true);
}

/* user_string_warn(addr): "" and a warning where the string cannot be
 * read, not an error */
const char *bi_user_string_warn(struct run *r, struct node *n)
{
	uint64_t addr = 0;
	bool cut;
	const char *t = target_string(r, n->args[0], MAXSTRINGLEN - 1, &addr, &cut);

	if (t)
		return t;
	rt_warn(r, "user string copy fault -14 at 0x%llx", (unsigned long long)addr);
	return "";
}

/* An integer of the target's memory, size bytes, sign-extended or not. */
static int64_t user_integer(struct run *r, struct node *n, unsigned size, bool sign)
{
	static const char *const what[] = { [1] = "char", [2] = "short", [4] = "int", [8] = "long" };
	uint64_t addr = (uint64_t)eval_n(r, n->args[0]);
	union {
		int8_t i8;
		int16_t i16;
		int32_t i32;
		int64_t i64;
	} v = { .i64 = 0 };
	if (!read_target(r, addr, &v, size))
		rt_error(r, n, "user %s copy fault -14 at 0x%llx", what[size], (unsigned long long)addr);
	if (!sign)
		return size == 8 ? v.i64 : (int64_t)((uint64_t)v.i64 & ((1ull << (8 * size)) - 1));
	return size == 1 ? v.i8 : size == 2 ? v.i16 : size == 4 ? v.i32 : v.i64;
}

/* user_int8() ... user_uint64(): one built-in per size and sign */
#define USER_INTEGER_BUILTIN(name, size, sign)               \
	int64_t bi_##name(struct run *r, struct node *n)     \
	{                                                    \
		return user_integer(r, n, size, sign);       \
	}
USER_INTEGER_BUILTIN(user_int8, 1, true)
USER_INTEGER_BUILTIN(user_int16, 2, true)
USER_INTEGER_BUILTIN(user_int32, 4, true)
USER_INTEGER_BUILTIN(user_int64, 8, true)
USER_INTEGER_BUILTIN(user_uint8, 1, false)
USER_INTEGER_BUILTIN(user_uint16, 2, false)
USER_INTEGER_BUILTIN(user_uint32, 4, false)
USER_INTEGER_BUILTIN(user_uint64, 8, false)
