/*
 * dlclose against everything else.  Before an object being closed was kept
 * out of every batch, a connect that ran between dlclose's disarm and the
 * loader's unmap armed the object again, and the next batch wrote into
 * unmapped text (SIGSEGV in half the runs of this loop).  And a library
 * unloaded as the dependency of the one dlclose names was never disarmed
 * at all.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "harness.h"

static atomic_long hits;
static atomic_int stop;
static atomic_int failures;

static void count(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&hits, 1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Load, run, unload, as fast as it goes; `arg` names the library. */
static void *load_loop(void *arg)
{
	const char *lib = arg;
	while (!atomic_load(&stop)) {
		void *h = dlopen(djp_test_path(lib), RTLD_NOW);
		int (*run)(int);
		if (!h) {
			atomic_fetch_add(&failures, 1);
			break;
		}
		run = (int (*)(int))(uintptr_t)dlsym(h, strstr(lib, "dltop") ? "dltop_run" : "dltest_run");
		if (run)
			run(1);
		if (dlclose(h))
			atomic_fetch_add(&failures, 1);
	}
	return NULL;
}

/* Connect and disconnect, as fast as it goes. */
static void *probe_loop(void *arg)
{
	const char *pattern = arg;
	while (!atomic_load(&stop)) {
		int id = djp_connect(pattern, count, NULL, 0);
		if (id == -ENOENT)
			continue; /* nothing loaded that matches, at that instant */
		if (id < 0 || djp_disconnect(id)) {
			atomic_fetch_add(&failures, 1);
			break;
		}
	}
	return NULL;
}

static void race(const char *lib, const char *pattern, double seconds)
{
	pthread_t t[4];
	atomic_store(&stop, 0);
	atomic_store(&failures, 0);
	/* more threads than cores: two loaders, two probers */
	CHECK_EQ(pthread_create(&t[0], NULL, load_loop, (void *)lib), 0);
	CHECK_EQ(pthread_create(&t[1], NULL, load_loop, (void *)lib), 0);
	CHECK_EQ(pthread_create(&t[2], NULL, probe_loop, (void *)pattern), 0);
	CHECK_EQ(pthread_create(&t[3], NULL, probe_loop, (void *)"*_hit"), 0);
	for (double end = now() + seconds; now() < end;)
		usleep(10000);
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	CHECK_EQ(atomic_load(&failures), 0);
}

TEST_TIMEOUT(dlclose_racing_connect_never_arms_a_closing_object, 120)
{
	race("libdjp_dltest.so", "dltest_*", 4.0);
}

/* Whether a file whose name ends in `name` is mapped in this process. */
static bool mapped(const char *name)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strlen(line) >= strlen(name) && !strcmp(line + strlen(line) - strlen(name), name))
			found = true;
	}
	fclose(f);
	return found;
}

TEST_TIMEOUT(dlclose_disarms_the_dependencies_it_unloads, 120)
{
	int (*run)(int);
	void *h = dlopen(djp_test_path("libdjp_dltop.so"), RTLD_NOW);
	CHECK(h != NULL);
	run = (int (*)(int))(uintptr_t)dlsym(h, "dltop_run");
	CHECK(run != NULL);
	int id = djp_connect("dl*_hit", count, NULL, 0);
	CHECK(id >= 0);
	atomic_store(&hits, 0);
	run(1);
	CHECK_EQ(atomic_load(&hits), 2);
	CHECK_EQ(dlclose(h), 0); /* unloads libdjp_dldep.so too */
	/* both are gone from the address space, and with them every dl*_hit
	 * marker of the process: a connect finds none (a stale marker would
	 * be armed where something else may be mapped now) */
	CHECK(!mapped("libdjp_dltop.so"));
	CHECK(!mapped("libdjp_dldep.so"));
	CHECK_EQ(djp_connect("dl*_hit", count, NULL, 0), -ENOENT);
	CHECK_EQ(djp_disconnect(id), 0);
	race("libdjp_dltop.so", "dldep_*", 3.0);
}

/* Copy `from` to `to` through a temporary and a rename, as a package
 * upgrade does: the old file stays mapped, the path names the new one. */
static void replace_file(const char *from, const char *to)
{
	char tmp[4096], cmd[9000];
	snprintf(tmp, sizeof(tmp), "%s.new", to);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, tmp);
	CHECK_EQ(system(cmd), 0);
	CHECK_EQ(rename(tmp, to), 0);
}

/* The engine reads the file mapped, not the one its path names now; where
 * it cannot reach the mapped file (map_files needs CAP_SYS_ADMIN), it
 * leaves the object alone.  Before, it read the new version's markers and
 * used their addresses in the old mapping. */
static void replaced_flow(void)
{
	char dir[] = "/tmp/djp-replaced-XXXXXX", lib[4200];
	int (*run)(int);
	void *h;
	CHECK(mkdtemp(dir) != NULL);
	snprintf(lib, sizeof(lib), "%s/libplugin.so", dir);
	replace_file(djp_test_path("libdjp_dltest.so"), lib);
	CHECK((h = dlopen(lib, RTLD_NOW)) != NULL);
	run = (int (*)(int))(uintptr_t)dlsym(h, "dltest_run");
	CHECK(run != NULL);
	replace_file(djp_test_path("libdjp_dltest_renamed.so"), lib);

	/* the new version's marker is nowhere in this process */
	CHECK_EQ(djp_connect("dltest_renamed", count, NULL, 0), -ENOENT);
	int id = djp_connect("dltest_hit", count, NULL, 0);
	if (geteuid() == 0) {
		CHECK(id >= 0);
		atomic_store(&hits, 0);
		CHECK_EQ(run(41), 42);
		CHECK_EQ(atomic_load(&hits), 1);
		CHECK_EQ(djp_disconnect(id), 0);
	} else {
		CHECK_EQ(id, -ENOENT); /* out of reach: not probed */
		CHECK_EQ(run(41), 42);
	}
	CHECK_EQ(dlclose(h), 0);
	unlink(lib);
	rmdir(dir);
}

TEST(library_replaced_on_disk_is_read_from_the_mapping)
{
	replaced_flow();
	if (geteuid() == 0) { /* and as a user without CAP_SYS_ADMIN */
		int st;
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			if (setgid(65534) || setuid(65534))
				_exit(3);
			replaced_flow();
			_exit(0);
		}
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}
