/*
 * The target of the backtrace test on objects the process has unloaded
 * since the tool read its mappings: plain C, nothing of djprobe (the
 * tool injects its agent with -x).
 *
 *   usym_target CALLER PLUGIN
 *
 * prints "ready PID" and reads commands from stdin, answering each:
 *
 *   caller   dlopen CALLER (trace_progs/usym_caller.c): "caller loaded"
 *   ping     call its caller_ping, which fires caller_ping: "pinged"
 *   plugin   dlopen PLUGIN (trace_progs/trace_plugin.c): "plugin loaded"
 *   call N   caller_call(plugin_fire, N): the plugin's marker fires N
 *            times under a frame of CALLER: "called N"
 *   unload   dlclose both: "unloaded"
 *
 * and exits 0 at end of stdin.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void (*call)(void (*)(long), long) = NULL, (*ping)(void) = NULL, (*fire)(long) = NULL;
	void *caller = NULL, *plugin = NULL;
	char line[256];
	long n;

	if (argc != 3) {
		fprintf(stderr, "usage: usym_target CALLER PLUGIN\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "caller\n")) {
			if (!(caller = dlopen(argv[1], RTLD_NOW)))
				return 1;
			call = (void (*)(void (*)(long), long))dlsym(caller, "caller_call");
			ping = (void (*)(void))dlsym(caller, "caller_ping");
			printf("caller loaded\n");
		} else if (!strcmp(line, "ping\n") && ping) {
			ping();
			printf("pinged\n");
		} else if (!strcmp(line, "plugin\n")) {
			if (!(plugin = dlopen(argv[2], RTLD_NOW)))
				return 1;
			fire = (void (*)(long))dlsym(plugin, "plugin_fire");
			printf("plugin loaded\n");
		} else if (sscanf(line, "call %ld", &n) == 1 && call && fire) {
			call(fire, n);
			printf("called %ld\n", n);
		} else if (!strcmp(line, "unload\n")) {
			dlclose(plugin);
			dlclose(caller);
			call = NULL, ping = NULL, fire = NULL;
			printf("unloaded\n");
		} else {
			fprintf(stderr, "usym_target: bad command: %s", line);
			return 1;
		}
	}
	return 0;
}
