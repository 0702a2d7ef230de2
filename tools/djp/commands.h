/*
 * The djp subcommands.  main.c dispatches on the first argument; each
 * command gets argv from its own name on and returns the exit status:
 * 0 success, 1 failure (one "djp: ..." line on stderr), 2 usage error.
 */
#ifndef DJP_TOOLS_COMMANDS_H
#define DJP_TOOLS_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

struct djp_command {
	const char *name;
	int (*run)(int argc, char **argv);
	void (*usage)(FILE *out);
	const char *summary;
	const char *example; /* one command line, for djp --help */
};

int djp_cmd_list(int argc, char **argv);
void djp_usage_list(FILE *out);
int djp_cmd_trace(int argc, char **argv);
/* The kernel variant of list (-k, klist.c); argv holds what follows the
 * options.  trace -k is trace.c's. */
int djp_cmd_klist(int argc, char **argv, bool json);
void djp_usage_trace(FILE *out);
int djp_cmd_flame(int argc, char **argv);
void djp_usage_flame(FILE *out);

#endif
