/*
 * C++ types for typed access: a class with a virtual destructor (its
 * vtable pointer a member), a struct in a namespace, a parameter passed
 * by reference.  checkout() has C linkage so that a probe names it as
 * written (function names are matched as the symbol table spells them);
 * it prints its own oracle line, the values a script reads.  And a
 * method, shop::Cart::total, named by a probe as stap names C++ functions
 * (lib/cxx_name.c), with its `this`:
 *
 *   typed_cxx N    N rounds: "COUNT FIRST_ID PRICE NAME K" (checkout)
 *                  and "total COUNT K" (Cart::total) each
 */
#include <cstdio>
#include <cstdlib>

namespace shop {
struct Item {
	int id;
	long price;
	const char *name;
};
class Cart {
public:
	explicit Cart(int n) : count(n), first{7, 1999, "apple"} {}
	virtual ~Cart() {}
	int total(int k);
	int count;
	Item first;
};

__attribute__((noinline)) int Cart::total(int k)
{
	std::printf("total %d %d\n", count, k);
	return count * 10 + k;
}
} // namespace shop

extern "C" __attribute__((noinline)) int checkout(shop::Cart &c, const shop::Item *it, int k)
{
	std::printf("%d %d %ld %s %d\n", c.count, c.first.id, it->price, it->name, k);
	return c.count + k;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "pear", "plum", "fig" };
	int n = argc > 1 ? std::atoi(argv[1]) : 1;
	long sum = 0;

	for (int i = 0; i < n; i++) {
		shop::Cart c(3 + i);
		shop::Item x{ 5 + i, 250L * (i + 1), names[i % 3] };
		sum += checkout(c, &x, i) + c.total(i);
	}
	std::fflush(stdout);
	return sum < 0;
}
