/*
 * C++ functions by the names a probe gives them (lib/cxx_name.c): the
 * qualified name and the function's own from Itanium mangled symbols as
 * gcc emits them, the ones it does not read refused (they are matched by
 * their symbol alone), and globs matched as stap matches them.
 */
#include <fnmatch.h>
#include <string.h>

#include "harness.h"
#include "lib/cxx_name.h"

static int glob(const char *g, const char *n)
{
	return fnmatch(g, n, 0);
}

TEST(cxx_names_of_mangled_symbols)
{
	static const struct {
		const char *sym, *name, *base;
	} cases[] = {
		{ "_ZN4shop4Cart5totalEv", "shop::Cart::total", "total" },
		{ "_Z8checkoutRN4shop4CartEPKNS_4ItemEi", "checkout", "checkout" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector::push_back", "push_back" },
		{ "_ZN4shop4CartC2Ei", "shop::Cart::Cart", "Cart" },
		{ "_ZN4shop4CartD0Ev", "shop::Cart::~Cart", "~Cart" },
		{ "_ZNK4shop4Cart3getEv", "shop::Cart::get", "get" },
		{ "_ZN4shop3fooB5cxx11Ev", "shop::foo", "foo" },
		{ "_Z3maxIiET_S0_S0_", "max", "max" },
		{ "_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv", "__gnu_cxx::new_allocator::allocate", "allocate" },
		{ "_ZplRK1AS1_", NULL, NULL },	   /* an operator */
		{ "_ZZ4mainE1x", NULL, NULL },	   /* a local name */
		{ "main", NULL, NULL },		   /* C */
		{ "_Z99short", NULL, NULL },	   /* a length past the end */
		{ "_ZN4shop", NULL, NULL },	   /* cut short */
	};
	char buf[512];
	const char *base;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool ok = djp_cxx_name(cases[i].sym, buf, sizeof(buf), &base);
		if (ok != (cases[i].name != NULL) || (ok && (strcmp(buf, cases[i].name) || strcmp(base, cases[i].base))))
			djp_test_fail(__FILE__, __LINE__, "%s: %s %s", cases[i].sym, ok ? buf : "refused", ok ? base : "");
	}
	/* too small a buffer refuses, never truncates */
	CHECK(!djp_cxx_name("_ZN4shop4Cart5totalEv", buf, 8, &base));
	/* globs: the own name, the qualified one, never a mangled glob */
	CHECK(djp_cxx_glob_match("total", "_ZN4shop4Cart5totalEv", glob));
	CHECK(djp_cxx_glob_match("tot*", "_ZN4shop4Cart5totalEv", glob));
	CHECK(djp_cxx_glob_match("shop::Cart::total", "_ZN4shop4Cart5totalEv", glob));
	CHECK(djp_cxx_glob_match("*::total", "_ZN4shop4Cart5totalEv", glob));
	CHECK(!djp_cxx_glob_match("Cart::total", "_ZN4shop4Cart5totalEv", glob));
	CHECK(!djp_cxx_glob_match("cart", "_ZN4shop4Cart5totalEv", glob));
	CHECK(!djp_cxx_glob_match("_ZN4shop*", "_ZN4shop4Cart5totalEv", glob));
}
