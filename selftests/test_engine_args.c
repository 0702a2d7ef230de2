/* Argument decoding at -O2 and -O0, in jump and int3 mode and through the
 * recorder (whose fast entry takes the values the lean trampoline
 * prefetched): runs progs/engine_args{,-O0}, which check every value
 * themselves, and checks that the two builds together met every location
 * kind. */
#include <sys/wait.h>

#include "harness.h"

static void run(const char *prog, const char *mode, char *kinds, size_t kindsz)
{
	char cmd[4200], line[64];
	FILE *p;
	int st;
	snprintf(cmd, sizeof(cmd), "%s %s", djp_test_path(prog), mode);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	while (fgets(line, sizeof(line), p))
		if (!strstr(kinds, line) && strlen(kinds) + strlen(line) < kindsz)
			strcat(kinds, line);
	st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "%s %s: status %#x", prog, mode, st);
}

static void run_all(const char *mode)
{
	char kinds[256] = "";
	run("progs/engine_args", mode, kinds, sizeof(kinds));
	run("progs/engine_args-O0", mode, kinds, sizeof(kinds));
	CHECK(strstr(kinds, "reg\n"));
	CHECK(strstr(kinds, "imm\n"));
	CHECK(strstr(kinds, "mem-rsp\n"));
	CHECK(strstr(kinds, "mem-rbp\n"));
	CHECK(strstr(kinds, "abs\n"));
}

TEST(args_every_size_and_location_jump)
{
	run_all("jump");
}

TEST(args_every_size_and_location_int3)
{
	run_all("int3");
}

TEST(args_every_size_and_location_recorded)
{
	run_all("recorder");
}
