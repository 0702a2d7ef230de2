// The oracle's libstdc++ workload: exceptions of three types thrown,
// caught, and rethrown from a catch block (libstdcxx:throw, catch and
// rethrow), the same every run.
//
//   cxx_workload N
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

struct oracle_error {
	long code;
};

__attribute__((noinline)) static void thrower(long i)
{
	switch (i % 3) {
	case 0:
		throw oracle_error{ i };
	case 1:
		throw std::runtime_error("oracle " + std::to_string(i));
	default:
		throw i;
	}
}

__attribute__((noinline)) static long rethrower(long i)
{
	try {
		thrower(i);
	} catch (...) {
		if (i % 2)
			throw;
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10, caught = 0;

	for (long i = 0; i < n; i++) {
		try {
			rethrower(i);
		} catch (const oracle_error &e) {
			caught += e.code;
		} catch (const std::exception &e) {
			caught += 1;
		} catch (long v) {
			caught += v;
		}
	}
	std::printf("caught %ld\n", caught);
	return 0;
}
