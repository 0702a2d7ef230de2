/*
 * djp: the command-line tool.  The first argument names a subcommand, looked
 * up in one table; `djp help` and `djp --help` print every command's usage.
 * A subcommand adds one line to the table and one file beside this one.
 * Anything else is a SystemTap-style invocation (`djp -e SCRIPT -c CMD`,
 * `djp script.stp`): an argument that names no command goes to the probe
 * script front end (script/cli.c).
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "script/script.h"

static const struct djp_command commands[] = {
	{ "list", djp_cmd_list, djp_usage_list, "list the markers of files and running processes",
	  "djp list /usr/bin/python3.11" },
	{ "trace", djp_cmd_trace, djp_usage_trace, "record markers of a command (-c) or a process (-x)",
	  "djp trace -x PID --duration 5 'python:gc__start'" },
	{ "flame", djp_cmd_flame, djp_usage_flame, "draw folded stacks as an SVG flame graph",
	  "djp flame -o out.svg stacks.folded" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: djp COMMAND [ARGS...]\n"
		     "       djp [OPTIONS] SCRIPT_FILE | -e SCRIPT [ARGUMENTS]\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-8s %s\n  %-8s e.g. %s\n", commands[i].name, commands[i].summary, "",
			commands[i].example);
	/* the script front end is no command, but the third thing djp does */
	fprintf(out, "  %-8s %s\n  %-8s e.g. %s\n", "-e", "run a SystemTap-style probe script (its options: man djp)",
		"", "djp -e 'probe process.mark(\"req_*\") { println($$name) }' -c ./reqserver");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		fputc('\n', out);
		commands[i].usage(out);
	}
}

/* One line on stderr: `why` (may be "") and the command summary. */
static void short_usage(const char *why)
{
	fprintf(stderr, "djp: %susage: djp {", why);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(stderr, "%s%s", i ? "|" : "", commands[i].name);
	fprintf(stderr, "} ARGS... (djp --help for more)\n");
}

int main(int argc, char **argv)
{
	/* A session's buffers (its drain arena, its reply buffer) come and go
	 * with each traced process.  glibc raises its mmap threshold to the
	 * size of the first such block freed, after which they come from the
	 * heap, among the small blocks that stay, and the heap cannot shrink:
	 * a fork storm would leave the tool as big as its busiest moment.
	 * A fixed threshold keeps them mapped, and given back when freed. */
	mallopt(M_MMAP_THRESHOLD, 32 * 1024);
	if (argc < 2) {
		short_usage("");
		return 2;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	/* Anything else is SystemTap's command line: djp FILE, djp -e SCRIPT, -l... */
	return djp_script_main(argc, argv);
}
