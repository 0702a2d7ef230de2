/*
 * The last thread's exit (test_trace_last_thread.c): main calls
 * pthread_exit while its workers live, and the worker that ends last ends
 * the process, as glibc has it: exit(0), its atexit handlers run and its
 * stdio flushed.  Nothing of djprobe is linked: the agent comes by
 * LD_PRELOAD or by injection.
 *
 *   lastexit_target WORKERS [PLUGIN]
 *
 * main registers an atexit handler, starts WORKERS threads, prints
 * "ready PID" (flushed), reads a line of stdin (or its end), hits le_main
 * and calls pthread_exit.  Worker 0 joins the main thread; with PLUGIN it
 * then loads that library (trace_plugin.c), prints "plugin loaded" and
 * calls its plugin_fire(1) every 10 ms until it reads a line of stdin (or
 * its end); then it lets the other workers go.  Each worker hits le_work
 * i=INDEX, counts itself done and returns.  The atexit handler prints
 * "atexit: N workers done" and does not flush: only exit's flush writes
 * it.  So the process exits 0 with that line last, with no worker left.
 */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "djprobe/marker.h"

static pthread_t main_thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int main_gone;
static long done;
static const char *plugin;

static void report(void)
{
	printf("atexit: %ld workers done\n", __atomic_load_n(&done, __ATOMIC_SEQ_CST));
}

/* Load the plugin and fire its marker until stdin has a line or ends. */
static void load_plugin(void)
{
	void (*fire)(long);
	void *h = dlopen(plugin, RTLD_NOW);
	char line[64];

	if (!h || !(fire = (void (*)(long))dlsym(h, "plugin_fire"))) {
		fprintf(stderr, "lastexit_target: %s\n", dlerror());
		exit(1);
	}
	printf("plugin loaded\n");
	fflush(stdout);
	for (;;) {
		struct pollfd pf = { 0, POLLIN, 0 };
		fire(1);
		if (poll(&pf, 1, 10) > 0)
			break;
	}
	if (!fgets(line, sizeof(line), stdin))
		clearerr(stdin);
}

static void *worker(void *arg)
{
	long i = (long)arg;

	pthread_mutex_lock(&lock);
	if (i == 0) {
		pthread_mutex_unlock(&lock);
		if (pthread_join(main_thread, NULL))
			abort();
		if (plugin)
			load_plugin();
		pthread_mutex_lock(&lock);
		main_gone = 1;
		pthread_cond_broadcast(&cond);
	}
	while (!main_gone)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	MARK(le_work, "i=%ld", i);
	__atomic_add_fetch(&done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

int main(int argc, char **argv)
{
	char line[64];
	long workers;

	if (argc < 2 || argc > 3)
		return 2;
	workers = atol(argv[1]);
	plugin = argc == 3 ? argv[2] : NULL;
	atexit(report);
	main_thread = pthread_self();
	for (long i = 0; i < workers; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, (void *)i) || pthread_detach(t))
			return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		clearerr(stdin);
	MARK(le_main, "workers=%ld", workers);
	pthread_exit(NULL);
}
