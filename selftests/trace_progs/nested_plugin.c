/*
 * A shared object whose constructor loads trace_plugin.c's library and
 * fires its marker 7 times, inside the dlopen that loads this one: the
 * loader's lock is held meanwhile, by the thread that arms the marker
 * (the dlopen interposer of a preloaded libdjprobe.so runs for the inner
 * dlopen).  Its plugin_fire(N) fires the inner marker N times more.
 * The inner library is the one beside this file, by its full path (a
 * name left to this object's $ORIGIN run path would be looked for from
 * the interposer's object instead).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void (*inner)(long);

__attribute__((constructor)) static void load_inner(void)
{
	char path[4096];
	const char *slash;
	Dl_info di;
	void *h = NULL;
	if (dladdr((void *)load_inner, &di) && di.dli_fname && (slash = strrchr(di.dli_fname, '/'))) {
		snprintf(path, sizeof(path), "%.*s/libtrace_plugin.so", (int)(slash - di.dli_fname), di.dli_fname);
		h = dlopen(path, RTLD_NOW);
	}
	inner = h ? (void (*)(long))dlsym(h, "plugin_fire") : NULL;
	if (inner)
		inner(7);
}

__attribute__((visibility("default"))) void plugin_fire(long n)
{
	if (inner)
		inner(n);
}
