/* The library's own calls are not the program's: with malloc, free and
 * open probed in a program of one thread (trace_progs/malloc_target.c),
 * every event is from that thread, every malloc meets its return, and the
 * re-arming that follows its dlopen and dlclose, which opens files and
 * allocates on its thread, shows nothing; nor does the taking back of the
 * probes in a child of fork. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

struct counts {
	long events, foreign, malloc_in, malloc_out, sized_in, sized_out, free, open;
};

/* Tally `djp trace` event lines ("TIME PID TID NAME args"). */
static void tally(const char *out, struct counts *c)
{
	memset(c, 0, sizeof(*c));
	for (const char *l = out; *l;) {
		const char *e = strchr(l, '\n');
		char line[512], name[128], args[256] = "";
		long pid, tid;
		snprintf(line, sizeof(line), "%.*s", (int)(e ? e - l : (long)strlen(l)), l);
		l = e ? e + 1 : l + strlen(l);
		if (sscanf(line, "%*s %ld %ld %127s %255[^\n]", &pid, &tid, name, args) < 3 ||
		    strncmp(name, "func:", 5))
			continue;
		c->events++;
		if (tid != pid) {
			if (c->foreign++ < 5)
				fprintf(stderr, "# not the program's thread: %s\n", line);
		}
		if (!strcmp(name, "func:malloc")) {
			c->malloc_in++;
			c->sized_in += !strcmp(args, "bytes=4321"); /* size_t: unsigned decimal */
		} else if (!strcmp(name, "func:malloc%return")) {
			c->malloc_out++;
			c->sized_out += !strncmp(args, "bytes=4321 ", 11);
		} else if (!strcmp(name, "func:free")) {
			c->free++;
		} else if (!strcmp(name, "func:open")) {
			c->open++;
			fprintf(stderr, "# %s\n", line);
		}
	}
}

TEST_TIMEOUT(trace_reports_only_the_programs_own_calls, 90)
{
	char cmd[8400];
	struct tproc *p;
	struct counts c;
	int st;

	snprintf(cmd, sizeof(cmd), "%s 1000 %s", djp_test_path("trace_progs/malloc_target"), tt_plugin());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:malloc@libc.so*",
				      "func:malloc%return@libc.so*", "func:free@libc.so*", "func:open@libc.so*", NULL },
		     false, -1);
	st = tt_finish(p, 80000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "pairs 2000\n") != NULL);
	tally(p->obuf, &c);
	fprintf(stderr, "# %ld events: malloc %ld, returns %ld, free %ld, open %ld, other threads' %ld\n", c.events,
		c.malloc_in, c.malloc_out, c.free, c.open, c.foreign);
	CHECK_EQ(c.foreign, 0);
	CHECK_EQ(c.sized_in, 2000);
	CHECK_EQ(c.sized_out, 2000);
	CHECK_EQ(c.malloc_in, c.malloc_out);
	CHECK(c.free >= 2000);
	/* the program opens nothing (the loader's own open is another
	 * function); the engine's reading of the plugin's file would */
	CHECK_EQ(c.open, 0);
	free(p);
}

/* A child of fork takes its probes back first (it makes its text the
 * file's again, with mprotect), with the parent's rings still mapped:
 * those calls were recorded as the parent's. */
TEST_TIMEOUT(trace_fork_child_taking_its_probes_back_is_not_traced, 60)
{
	char cmd[4200];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s 10 fork:3", djp_test_path("trace_progs/malloc_target"));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "func:mprotect@libc.so*", NULL }, false,
		     -1);
	st = tt_finish(p, 50000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "pairs 10\n") != NULL);
	if (tt_count(p->obuf, " func:mprotect"))
		djp_test_fail(__FILE__, __LINE__, "%d events: %s", tt_count(p->obuf, " func:mprotect"), p->obuf);
	free(p);
}
