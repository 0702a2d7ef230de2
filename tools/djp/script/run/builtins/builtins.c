/*
 * The table of built-in functions, made from builtins.def: a row per id
 * (its name, types, flags and function), and the names in the file's
 * order, aliases included, which check.c looks a call up in and
 * --dump-functions lists.
 */
#include <string.h>

#include "builtins.h"
#include "tools/djp/script/lang/lang.h"

#define TY_NONE TY_UNK
#define BUILTIN_FN_LONG(fn) .num = fn
#define BUILTIN_FN_STR(fn) .str = fn

const struct builtin_def builtins[B_COUNT] = {
#define BUILTIN(id, nm, res, min, a1, a2, a3, fl, fn)                                              \
	[B_##id] = { .name = nm,                                                                   \
		     .ret = TY_##res,                                                              \
		     .min_args = min,                                                              \
		     .max_args = (TY_##a1 != TY_NONE) + (TY_##a2 != TY_NONE) + (TY_##a3 != TY_NONE), \
		     .arg = { TY_##a1, TY_##a2, TY_##a3 },                                         \
		     .flags = fl,                                                                  \
		     BUILTIN_FN_##res(fn) },
#define ALIAS(id, name)
#include "builtins.def"
#undef BUILTIN
#undef ALIAS
};

static const struct {
	const char *name;
	enum builtin id;
} names[] = {
#define BUILTIN(id, nm, res, min, a1, a2, a3, fl, fn) { nm, B_##id },
#define ALIAS(id, nm) { nm, B_##id },
#include "builtins.def"
#undef BUILTIN
#undef ALIAS
};

int builtin_find(const char *name, int nargs, const struct builtin_def **named)
{
	*named = NULL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct builtin_def *b = &builtins[names[i].id];
		if (strcmp(names[i].name, name))
			continue;
		if (nargs >= b->min_args && nargs <= b->max_args)
			return (int)names[i].id;
		*named = b;
	}
	return -1;
}

/* One line per name and arity: "substr:string (arg1:string, arg2:long,
 * arg3:long)". */
void dump_functions(FILE *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct builtin_def *b = &builtins[names[i].id];
		if (names[i].name[0] == '@') /* an operator (@var), not a function */
			continue;
		for (int n = b->min_args; n <= b->max_args; n++) {
			fprintf(out, "%s:%s (", names[i].name, b->ret == TY_STR ? "string" : "long");
			for (int a = 0; a < n; a++)
				fprintf(out, "%sarg%d:%s", a ? ", " : "", a + 1, b->arg[a] == TY_STR ? "string" : "long");
			fputs(")\n", out);
		}
	}
}
