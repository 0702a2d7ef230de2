/*
 * libFuzzer target for the compiler of typed accesses (lib/typed_compile.c):
 * an access built from the input (a variable, steps of members and
 * indexes, a @cast, &, pretty printing) is compiled against the DWARF of
 * a fixed program, struct_target, at a fixed function, visit.  Whatever
 * the access, the compiler returns an error with a message, or a program
 * that the agent's check accepts (djp_load_check): what it sends is what
 * the agent would run.  Pretty printing likewise, each piece's program.
 *
 * The input: a byte of flags, then text split at bytes 0x01 into the
 * variable, then steps (a step that parses as a number is an index),
 * the last one a @cast type when the flags ask.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/func_params.h"
#include "lib/func_symbols.h"
#include "lib/typed_compile.h"

static struct djp_params_file *pf;
static uint64_t visit_addr;

static void open_once(void)
{
	char err[512];
	struct djp_func_table *t = NULL;

	if (pf)
		return;
	if (djp_params_open(TYPED_OBJ, &pf, err, sizeof(err)) || djp_funcs_read(TYPED_OBJ, &t, err, sizeof(err))) {
		fprintf(stderr, "fuzz_typed_compile: %s\n", err);
		abort();
	}
	for (size_t i = 0; i < t->count; i++)
		if (!strcmp(t->v[i].name, "visit"))
			visit_addr = t->v[i].addr;
	djp_funcs_free(t);
	if (!visit_addr)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[4096];
	struct djp_typed_access a = { 0 };
	struct djp_typed_result res;
	struct djp_pretty pr;
	char *parts[DJP_TYPED_MAX_STEPS + 2], err[1024];
	unsigned n = 0, flags;

	open_once();
	if (!size || size > sizeof(text) - 1)
		return 0;
	flags = data[0];
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	parts[n++] = text;
	for (char *c = text; *c && n < DJP_TYPED_MAX_STEPS + 2; c++)
		if (*c == 1) {
			*c = 0;
			parts[n++] = c + 1;
		}
	a.var = parts[0];
	a.addr_of = flags & 1;
	a.at_return = flags & 2;
	if ((flags & 4) && n > 1)
		a.cast_type = parts[--n];
	if (flags & 8) { /* an address in a register, as pointer_arg(1) */
		a.has_base_loc = true;
		a.base_loc = (struct djp_argloc){ .kind = DJP_LOC_REG, .size = 8, .reg = (int8_t)(flags >> 5),
						  .index = DJP_REG_NONE, .scale = 1 };
	}
	for (unsigned i = 1; i < n && a.nsteps < DJP_TYPED_MAX_STEPS; i++) {
		struct djp_typed_step *s = &a.step[a.nsteps++];
		char *end;
		long long v = strtoll(parts[i], &end, 10);
		if (*parts[i] && !*end) {
			s->is_index = true;
			s->index = v;
		} else if (parts[i][0] == '$' && (flags & 16)) {
			s->is_index = true;
			s->index_var = parts[i] + 1;
		} else {
			s->member = parts[i];
		}
	}
	if (!djp_typed_compile(pf, visit_addr, &a, &res, err, sizeof(err))) {
		if (djp_load_check(&res.prog))
			__builtin_trap();
	} else if (!err[0]) {
		__builtin_trap(); /* an error says what */
	}
	if (!djp_typed_pretty(pf, visit_addr, &a, 1 + (flags >> 7), &pr, err, sizeof(err))) {
		for (unsigned i = 0; i < pr.n; i++)
			if (djp_load_check(&pr.v[i].prog))
				__builtin_trap();
		djp_pretty_free(&pr);
	} else if (!err[0]) {
		__builtin_trap();
	}
	return 0;
}
