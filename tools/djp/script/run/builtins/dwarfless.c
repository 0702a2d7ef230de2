/*
 * Arguments without debug information: SystemTap's dwarfless tapset
 * (tapset/x86_64/registers.stp), register("rdi"), u_register(),
 * int_arg(n) and its kin, and returnval(), by the SysV ABI.
 *
 * Where the values come from.  A script that calls one of these (check.c
 * marks it through dwarfless_check_call) has every point of its session
 * connected with DJP_CONNECT_REGS: the target's recorder writes the
 * registers of the hit into each event as the probe fires (kernel/agent/
 * recorder.c; lib/proto.h has the block's layout), so what a function
 * reads is the register as it was at the probed instruction, in the
 * thread that ran it, never a value read later from outside.  A script
 * that asks for an argument past the sixth, which the ABI passes on the
 * stack, has DJP_CONNECT_REGS_STACK too: the words above the return
 * address, read fault-safe in the target at the hit.  One that names a
 * callee-saved register (rbx, r12-r15 and their parts), which a lean
 * jump's view does not store, has its probes armed as int3 breakpoints,
 * whose view holds every register: slower, never a wrong value.
 *
 * What they mean, as stap's do on x86-64: register() sign-extends a 32-,
 * 16- or 8-bit register and u_register() does not; int_arg(n) is argument
 * n's low 32 bits sign-extended, uint_arg(n) zero-extended, long_arg(n),
 * ulong_arg(n), longlong_arg(n), pointer_arg(n) and the s64/u64 forms the
 * 64-bit word; arguments 1-6 are %rdi, %rsi, %rdx, %rcx, %r8, %r9, and
 * argument 7 on the word at 8(%rsp), above the return address, as they
 * are at a function's entry (elsewhere they are what those registers and
 * words hold there, as in stap).  returnval() is %rax.  stap's run-time
 * errors are kept: "cannot access CPU registers in this context" where
 * the probe has no hit (begin, a timer), "Unknown register: NAME",
 * "cannot access arg(N)"; an unreadable stack word is stap's warning
 * "cannot access arg(N) at user stack address 0xADDR" and 0.  A literal
 * name or number that can never work is said at compile time instead.
 *
 * @var("name@file.c"[, "PATH"]), a global or file-static variable of the
 * program (or of PATH), is found in the DWARF at compile time (lib/
 * dwarf_globals.c: its link-time address, size and signedness) and read
 * the same way: the session names the variables to the agent (VARS),
 * which finds where each object is loaded, and every event carries the
 * aligned word that holds each one, read at the hit.  In a probe without
 * a hit (begin, end, a timer) it is read then, from outside, at the
 * address the agent gave.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarfless.h"
#include "tapset.h"
#include "arch/x86/arch.h"
#include "lib/dwarf_globals.h"
#include "lib/proto.h"
#include "tools/djp/source/source.h"
#include "tools/djp/script/lang/lang.h"
#include "tools/djp/script/run/interp.h"

/* stap's names (registers.stp's _reg_offsets, _r32_, _r16_, _r8_offsets):
 * the register by DWARF number (DJP_REGS_PC for the pc), the bytes the
 * name reads and from which byte.  The segment registers, the flags and
 * orig_rax are not in the view: named, so that they are said as such. */
struct reg_name {
	const char *name;
	int8_t dwarf; /* -1: not recorded */
	uint8_t size, shift;
};

static const struct reg_name reg_names[] = {
	{ "rax", 0, 8, 0 },  { "rdx", 1, 8, 0 },   { "rcx", 2, 8, 0 },    { "rbx", 3, 8, 0 },   { "rsi", 4, 8, 0 },
	{ "rdi", 5, 8, 0 },  { "rbp", 6, 8, 0 },   { "rsp", 7, 8, 0 },    { "r8", 8, 8, 0 },    { "r9", 9, 8, 0 },
	{ "r10", 10, 8, 0 }, { "r11", 11, 8, 0 },  { "r12", 12, 8, 0 },   { "r13", 13, 8, 0 },  { "r14", 14, 8, 0 },
	{ "r15", 15, 8, 0 }, { "rip", DJP_REGS_PC, 8, 0 },
	{ "eax", 0, 4, 0 },  { "edx", 1, 4, 0 },   { "ecx", 2, 4, 0 },    { "ebx", 3, 4, 0 },   { "esi", 4, 4, 0 },
	{ "edi", 5, 4, 0 },  { "ebp", 6, 4, 0 },   { "esp", 7, 4, 0 },    { "eip", DJP_REGS_PC, 4, 0 },
	{ "ax", 0, 2, 0 },   { "dx", 1, 2, 0 },    { "cx", 2, 2, 0 },     { "bx", 3, 2, 0 },    { "si", 4, 2, 0 },
	{ "di", 5, 2, 0 },   { "bp", 6, 2, 0 },    { "sp", 7, 2, 0 },     { "ip", DJP_REGS_PC, 2, 0 },
	{ "al", 0, 1, 0 },   { "ah", 0, 1, 8 },    { "dl", 1, 1, 0 },     { "dh", 1, 1, 8 },    { "cl", 2, 1, 0 },
	{ "ch", 2, 1, 8 },   { "bl", 3, 1, 0 },    { "bh", 3, 1, 8 },
	{ "orig_rax", -1, 8, 0 }, { "xcs", -1, 8, 0 }, { "eflags", -1, 8, 0 }, { "xss", -1, 8, 0 },
	{ "orig_eax", -1, 4, 0 }, { "orig_ax", -1, 2, 0 }, { "cs", -1, 2, 0 },  { "flags", -1, 2, 0 },
	{ "ss", -1, 2, 0 },
};

/* The argument registers of the SysV ABI, by DWARF number: rdi rsi rdx
 * rcx r8 r9. */
static const uint8_t arg_regs[6] = { 5, 4, 1, 2, 8, 9 };

#define ARGS_MAX (6 + DJP_REGS_STACK_WORDS)

static const struct reg_name *reg_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(reg_names) / sizeof(reg_names[0]); i++)
		if (!strcmp(reg_names[i].name, name))
			return &reg_names[i];
	return NULL;
}

int dwarfless_address_reg(const struct node *call, char *err, size_t errsz)
{
	const struct node *a = call->args[0];
	const struct reg_name *r;
	int dwarf;

	if (a->kind == N_NUM) {
		if (a->num < 1 || a->num > 6) {
			snprintf(err, errsz, "not supported yet: @cast of %s(%lld) (only the six arguments in registers)",
				 call->str, (long long)a->num);
			return -1;
		}
		dwarf = arg_regs[a->num - 1];
	} else {
		if (!(r = reg_lookup(a->str))) {
			snprintf(err, errsz, "Unknown register: %s", a->str);
			return -1;
		}
		if (r->size != 8 || r->dwarf < 0 || r->dwarf == DJP_REGS_PC) {
			snprintf(err, errsz, "@cast of register '%s': an address is in one of the 16 general registers",
				 a->str);
			return -1;
		}
		dwarf = r->dwarf;
	}
	return arch_dwarf_reg((uint64_t)dwarf);
}

/* rbx, rbp and r12-r15: kept in their registers, not in a lean view
 * (%rbp is, with DJP__STACK). */
static bool callee_saved(int dwarf)
{
	return dwarf == 3 || (dwarf >= 12 && dwarf <= 15);
}

/* @var(n->args): the variable found now, its index in sc->vars in
 * n->slot; the errors said. */
static int check_var(struct script *sc, struct node *n)
{
	struct node *a = n->args[0], *b = n->nargs > 1 ? n->args[1] : NULL;
	char name[256], exe[64], err[512], *object;
	const char *at;
	struct djp_global g;
	unsigned i;

	if (a->kind != N_STR || (b && b->kind != N_STR)) {
		diag(sc, n->line, n->col, "semantic error", "@var takes literal strings: @var(\"name@file.c\"[, \"PATH\"])");
		return 1;
	}
	at = strchr(a->str, '@');
	snprintf(name, sizeof(name), "%.*s", (int)(at ? (size_t)(at - a->str) : strlen(a->str)), a->str);
	if (!b && (!sc->src || sc->src->target_pid <= 0)) {
		diag(sc, n->line, n->col, "semantic error", "@var(\"%s\") without a PATH names the target's variable: give -c or -x",
		     a->str);
		return 1;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", sc->src ? (int)sc->src->target_pid : 0);
	if (!(object = realpath(b ? b->str : exe, NULL))) {
		diag(sc, (b ? b : n)->line, (b ? b : n)->col, "semantic error", "@var(\"%s\"): %s: %s", a->str,
		     b ? b->str : "the target", strerror(errno));
		return 1;
	}
	if (djp_global_find(object, name, at ? at + 1 : NULL, &g, err, sizeof(err))) {
		diag(sc, a->line, a->col, "semantic error", "@var(\"%s\"): %s", a->str, err);
		free(object);
		return 1;
	}
	if ((g.addr & 7) + g.size > 8) {
		diag(sc, a->line, a->col, "semantic error", "@var(\"%s\"): not aligned to its size at %#" PRIx64, a->str,
		     g.addr);
		free(object);
		return 1;
	}
	for (i = 0; i < sc->nvars && (sc->vars[i].addr != g.addr || strcmp(sc->vars[i].object, object)); i++)
		;
	if (i == sc->nvars) {
		if (i == DJP_VARS_MAX) {
			diag(sc, a->line, a->col, "semantic error", "@var: at most %u variables a script", DJP_VARS_MAX);
			free(object);
			return 1;
		}
		if (!sc->vars)
			sc->vars = pool_alloc(sc, DJP_VARS_MAX * sizeof(*sc->vars));
		sc->vars[i] = (struct script_var){ a->str, pool_strndup(sc, object, strlen(object)), g.addr, g.size,
						   g.is_signed, 0 };
		sc->nvars++;
	}
	free(object);
	n->slot = (int)i;
	return 0;
}

int dwarfless_check_call(struct script *sc, struct node *n)
{
	struct node *a = n->nargs ? n->args[0] : NULL;
	const char *name = builtins[n->op].name;

	if (!sc->uses_regs)
		sc->uses_regs = 1;
	if (!strcmp(name, "@var"))
		return check_var(sc, n);
	if (!strcmp(name, "register") || !strcmp(name, "u_register")) {
		const struct reg_name *rn;
		if (!a || a->kind != N_STR) { /* any register: every one in the view */
			sc->regs_callee = true;
			return 0;
		}
		if (!(rn = reg_lookup(a->str))) {
			diag(sc, a->line, a->col, "semantic error", "Unknown register: %s", a->str);
			return 1;
		}
		if (rn->dwarf < 0) {
			diag(sc, a->line, a->col, "semantic error",
			     "register '%s' is not recorded at a probe: the general registers and rip are", a->str);
			return 1;
		}
		sc->regs_callee |= callee_saved(rn->dwarf);
		return 0;
	}
	if (!strcmp(name, "returnval"))
		return 0;
	/* int_arg(n) and its kin */
	if (!a || a->kind != N_NUM) {
		sc->uses_regs = 2;
		return 0;
	}
	if (a->num < 1 || a->num > ARGS_MAX) {
		diag(sc, a->line, a->col, "semantic error", "cannot access arg(%" PRId64 "): djp reads arguments 1 to %u",
		     a->num, ARGS_MAX);
		return 1;
	}
	if (a->num > 6)
		sc->uses_regs = 2;
	return 0;
}

/* The hit's register block, or stap's error where there is no hit. */
static const uint64_t *hit_regs(struct run *r, struct node *n, const char *what)
{
	if (!r->ev || !r->ev->regs || r->ev->nregs < DJP_REGS_STACK)
		rt_error(r, n, "cannot access %s in this context", what);
	return r->ev->regs;
}

static int64_t read_register(struct run *r, struct node *n, bool sign)
{
	const char *name = eval_s(r, n->args[0]);
	const struct reg_name *rn = reg_lookup(name);
	const uint64_t *w;
	uint64_t v;
	unsigned bits;

	if (!rn)
		rt_error(r, n, "Unknown register: %s", name);
	w = hit_regs(r, n, "CPU registers");
	if (rn->dwarf < 0 || !(w[DJP_REGS_INFO] >> rn->dwarf & 1))
		rt_error(r, n, "register '%s' was not recorded at this probe", name);
	v = w[rn->dwarf] >> rn->shift;
	bits = 8u * rn->size;
	if (bits == 64)
		return (int64_t)v;
	v &= (1ull << bits) - 1;
	if (sign && (v >> (bits - 1) & 1))
		v |= ~0ull << bits;
	return (int64_t)v;
}

int64_t bi_register(struct run *r, struct node *n)
{
	return read_register(r, n, true);
}

int64_t bi_u_register(struct run *r, struct node *n)
{
	return read_register(r, n, false);
}

/* stap's _stp_arg2(n, sign_extend, truncate): the 64-bit word of argument
 * n, or its low half, extended as asked. */
static int64_t read_arg(struct run *r, struct node *n, bool sign, bool truncate)
{
	int64_t k = eval_n(r, n->args[0]);
	const uint64_t *w;
	uint64_t v;

	if (k < 1 || k > ARGS_MAX)
		rt_error(r, n, "cannot access arg(%" PRId64 ")", k);
	w = hit_regs(r, n, "function args");
	if (k <= 6) {
		v = w[arg_regs[k - 1]];
	} else {
		unsigned j = (unsigned)(k - 7);
		if (r->ev->nregs < DJP_REGS_STACK + j + 1)
			rt_error(r, n, "cannot access arg(%" PRId64 ")", k);
		if (!(w[DJP_REGS_INFO] >> (DJP_REGS_STACK + j) & 1)) {
			rt_warn(r, "cannot access arg(%" PRId64 ") at user stack address %#" PRIx64, k, w[7] + 8 * (j + 1));
			return 0;
		}
		v = w[DJP_REGS_STACK + j];
	}
	if (!truncate)
		return (int64_t)v;
	return sign ? (int64_t)(int32_t)(uint32_t)v : (int64_t)(uint32_t)v;
}

int64_t bi_int_arg(struct run *r, struct node *n)
{
	return read_arg(r, n, true, true);
}

int64_t bi_uint_arg(struct run *r, struct node *n)
{
	return read_arg(r, n, false, true);
}

int64_t bi_long_arg(struct run *r, struct node *n)
{
	return read_arg(r, n, true, false);
}

int64_t bi_ulong_arg(struct run *r, struct node *n)
{
	return read_arg(r, n, false, false);
}

int64_t bi_longlong_arg(struct run *r, struct node *n)
{
	return read_arg(r, n, false, false);
}

int64_t bi_pointer_arg(struct run *r, struct node *n)
{
	return read_arg(r, n, false, false);
}

int64_t bi_returnval(struct run *r, struct node *n)
{
	return (int64_t)hit_regs(r, n, "return value")[0];
}

/* returnstr(format): returnval() as return_str() writes it */
const char *bi_returnstr(struct run *r, struct node *n)
{
	int64_t format = eval_n(r, n->args[0]);
	char *buf = arena_alloc(r, 64);

	tapset_return_str(format, (int64_t)hit_regs(r, n, "return value")[0], buf, 64);
	return buf;
}

/* @var: the variable's word from the hit's block (lib/proto.h), or,
 * without a hit, read now at the address the agent gave. */
int64_t bi_at_var(struct run *r, struct node *n)
{
	const struct script_var *v = &r->sc->vars[n->slot];
	unsigned shift = 8u * (unsigned)(v->addr & 7), bits = 8u * v->size;
	uint64_t w = 0;

	if (r->ev && r->ev->regs) {
		unsigned at = DJP_REGS_STACK + (r->sc->uses_regs > 1 ? DJP_REGS_STACK_WORDS : 0) + (unsigned)n->slot;
		if (at >= r->ev->nregs || !(r->ev->regs[DJP_REGS_INFO] >> (DJP_REGS_VARS_BIT + n->slot) & 1))
			rt_error(r, n, "user variable '%s' copy fault at the hit", v->spec);
		w = r->ev->regs[at];
	} else {
		uint64_t addr = r->src && r->src->var_runtime ? r->src->var_runtime[n->slot] : 0;
		if (!addr || !read_target(r, addr & ~7ull, &w, 8))
			rt_error(r, n, "user variable '%s' copy fault at %#" PRIx64, v->spec, addr);
	}
	w >>= shift;
	if (bits == 64)
		return (int64_t)w;
	w &= (1ull << bits) - 1;
	if (v->is_signed && (w >> (bits - 1) & 1))
		w |= ~0ull << bits;
	return (int64_t)w;
}

/* The register a 64-bit read of call a is (pointer_arg(2), u_register("rsi")...):
 * its DWARF number, or -1. */
static int whole_register(const struct node *a)
{
	const struct node *x = a->nargs ? a->args[0] : NULL;
	const struct reg_name *rn;

	if (!x)
		return -1;
	if ((a->op == B_LONG_ARG || a->op == B_ULONG_ARG || a->op == B_LONGLONG_ARG || a->op == B_POINTER_ARG) &&
	    x->kind == N_NUM && x->num >= 1 && x->num <= 6)
		return arg_regs[x->num - 1];
	if ((a->op == B_REGISTER || a->op == B_U_REGISTER) && x->kind == N_STR && (rn = reg_lookup(x->str)) &&
	    rn->dwarf >= 0 && rn->size == 8)
		return rn->dwarf;
	return -1;
}

void dwarfless_string_ref(struct script *sc, struct node *a, unsigned bound)
{
	struct script_var *v;
	unsigned nstr = 0, i;
	int reg = a->op == B_AT_VAR ? -1 : whole_register(a);

	if (reg >= 0) { /* the register's string: a variable of its own, its word the register */
		for (i = 0; i < sc->nvars && (sc->vars[i].object[0] || sc->vars[i].addr != (uint64_t)reg); i++)
			;
		if (i == sc->nvars) {
			if (i == DJP_VARS_MAX)
				return;
			if (!sc->vars)
				sc->vars = pool_alloc(sc, DJP_VARS_MAX * sizeof(*sc->vars));
			sc->vars[i] = (struct script_var){ builtins[a->op].name, "", (uint64_t)reg, 8, false, 0 };
			sc->nvars++;
		}
		a->num = (int64_t)i + 1;
		v = &sc->vars[i];
	} else if (a->op == B_AT_VAR && a->slot >= 0 && (unsigned)a->slot < sc->nvars) {
		v = &sc->vars[a->slot];
	} else {
		return;
	}
	for (i = 0; i < sc->nvars; i++)
		nstr += sc->vars[i].str_bound != 0;
	if (v->size != 8 || (!v->str_bound && nstr == DJP_VARS_STR_MAX))
		return; /* not a pointer, or no room: read when the event is processed */
	if (v->str_bound < bound)
		v->str_bound = (bound + 7) & ~7u;
}

const char *dwarfless_hit_string(struct run *r, struct node *a, uint64_t *addr, bool *have)
{
	int slot = a->op == B_AT_VAR ? a->slot : (int)a->num - 1;
	const struct script_var *v = slot >= 0 ? &r->sc->vars[slot] : NULL;
	unsigned k = 0;

	*have = false;
	*addr = (uint64_t)eval_n(r, a); /* the pointer, or the error its read gives */
	if (!v || !v->str_bound || !r->ev || !r->ev->regs)
		return NULL;
	for (int i = 0; i < slot; i++)
		k += r->sc->vars[i].str_bound != 0;
	if (k >= r->ev->nvar_strs)
		return NULL;
	*have = true;
	return *addr && !r->ev->var_str_fault[k] ? r->ev->var_strs[k] : NULL;
}
