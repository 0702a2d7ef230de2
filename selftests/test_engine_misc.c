/*
 * The engine's rules, one test each: foreign bytes are refused with -EBUSY;
 * a thread that blocks SIGTRAP behind our back makes arming fail cleanly;
 * sigprocmask cannot block SIGTRAP; an application's SIGTRAP handler still
 * gets the traps that are not ours; dlopen arms, dlclose disarms; a forked
 * child runs with every site restored; no RWX mapping remains after a
 * batch; after the last disconnect the text equals the file byte for byte;
 * a hit inside a handler is a counted miss, not a recursion.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"

static atomic_long hits;
static uintptr_t last_site;

__attribute__((noinline)) static void misc_site(int i)
{
	MARK(misc_site, "i=%d", i);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void misc_other(int i)
{
	MARK(misc_other, "i=%d", i);
	__asm__ volatile("" ::: "memory");
}

static void count(const struct djp_hit *hit, void *data)
{
	(void)data;
	last_site = djp_hit_site(hit);
	atomic_fetch_add(&hits, 1);
}

static uintptr_t site_of(const char *pattern, void (*fire)(int))
{
	int id = djp_connect(pattern, count, NULL, DJP_FORCE_INT3);
	CHECK(id >= 0);
	fire(0);
	CHECK_EQ(djp_disconnect(id), 0);
	return last_site;
}

TEST(foreign_int3_is_ebusy)
{
	static const uint8_t int3 = 0xcc;
	uintptr_t a = site_of("misc_site", misc_site);
	int fd = open("/proc/self/mem", O_RDWR);
	CHECK(fd >= 0);
	/* A debugger's breakpoint appears at the site. */
	CHECK_EQ(pwrite(fd, &int3, 1, (off_t)a), 1);
	CHECK_EQ(djp_connect("misc_site", count, NULL, 0), -EBUSY);
	CHECK_EQ(*(uint8_t *)a, 0xcc); /* left alone */
	/* Other markers are unaffected. */
	int id = djp_connect("misc_other", count, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK_EQ(pwrite(fd, "\x66", 1, (off_t)a), 1);
	close(fd);
}

static atomic_int blocker_ready, blocker_stop;
static void *blocker(void *arg)
{
	sigset_t all;
	(void)arg;
	sigfillset(&all);
	/* Behind the engine's back: the raw system call. */
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, 8);
	atomic_store(&blocker_ready, 1);
	while (!atomic_load(&blocker_stop))
		usleep(1000);
	return NULL;
}

TEST(thread_blocking_sigtrap_refuses_arming)
{
	pthread_t th;
	uint8_t before[6];
	uintptr_t a = site_of("misc_site", misc_site);
	memcpy(before, (void *)a, 6);
	pthread_create(&th, NULL, blocker, NULL);
	while (!atomic_load(&blocker_ready))
		usleep(1000);
	CHECK_EQ(djp_connect("misc_site", count, NULL, 0), -EDEADLK);
	CHECK(memcmp(before, (void *)a, 6) == 0);
	atomic_store(&blocker_stop, 1);
	pthread_join(th, NULL);
	int id = djp_connect("misc_site", count, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST(sigprocmask_cannot_block_sigtrap)
{
	sigset_t all, now;
	sigfillset(&all);
	CHECK_EQ(sigprocmask(SIG_BLOCK, &all, NULL), 0);
	CHECK_EQ(pthread_sigmask(SIG_SETMASK, NULL, &now), 0);
	CHECK(!sigismember(&now, SIGTRAP));
	CHECK(sigismember(&now, SIGUSR1));
	/* And probes still work with everything else blocked. */
	atomic_store(&hits, 0);
	int id = djp_connect("misc_site", count, NULL, DJP_FORCE_INT3);
	CHECK(id >= 0);
	misc_site(1);
	CHECK_EQ(atomic_load(&hits), 1);
	CHECK_EQ(djp_disconnect(id), 0);
}

static atomic_int app_traps;
static void app_trap(int sig)
{
	(void)sig;
	atomic_fetch_add(&app_traps, 1);
}

TEST(foreign_sigtrap_is_chained)
{
	int id = djp_connect("misc_site", count, NULL, DJP_FORCE_INT3);
	CHECK(id >= 0);
	signal(SIGTRAP, app_trap); /* after the engine installed its handler */
	__asm__ volatile("int3");  /* not ours */
	CHECK_EQ(atomic_load(&app_traps), 1);
	atomic_store(&hits, 0);
	misc_site(2); /* ours still works */
	CHECK_EQ(atomic_load(&hits), 1);
	CHECK_EQ(app_traps, 1);
	raise(SIGTRAP); /* sent, not a breakpoint: chained */
	CHECK_EQ(atomic_load(&app_traps), 2);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST(dlopen_arms_dlclose_disarms)
{
	int (*run)(int);
	void *h;
	int id;
	atomic_store(&hits, 0);
	id = djp_connect("misc_*", count, NULL, 0); /* before the library exists */
	CHECK(id >= 0);
	h = dlopen(djp_test_path("libdjp_dltest.so"), RTLD_NOW);
	CHECK(h != NULL);
	run = (int (*)(int))dlsym(h, "dltest_run");
	CHECK_EQ(djp_connect("nomatch_*", count, NULL, 0), -ENOENT);
	int id2 = djp_connect("dltest_*", count, NULL, 0);
	CHECK(id2 >= 0);
	run(1);
	CHECK_EQ(atomic_load(&hits), 1);
	uintptr_t a = last_site;
	CHECK_EQ(*(uint8_t *)a, 0xe9);
	/* A second reference: dlclose keeps it loaded, and armed. */
	void *h2 = dlopen(djp_test_path("libdjp_dltest.so"), RTLD_NOW);
	CHECK_EQ(dlclose(h2), 0);
	run(2);
	CHECK_EQ(atomic_load(&hits), 2);
	CHECK_EQ(dlclose(h), 0);
	CHECK_EQ(djp_disconnect(id2), 0);
	/* Loaded again: the existing "dltest_*"-free probe does not match, a new one does. */
	h = dlopen(djp_test_path("libdjp_dltest.so"), RTLD_NOW);
	run = (int (*)(int))dlsym(h, "dltest_run");
	id2 = djp_connect("dltest_hit", count, NULL, 0);
	CHECK(id2 >= 0);
	run(3);
	CHECK_EQ(atomic_load(&hits), 3);
	CHECK_EQ(djp_disconnect(id2), 0);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK_EQ(dlclose(h), 0);
}

TEST(dlopen_after_connect_is_armed)
{
	int (*run)(int);
	void *h;
	int id;
	atomic_store(&hits, 0);
	id = djp_connect("*", count, NULL, 0);
	CHECK(id >= 0);
	h = dlopen(djp_test_path("libdjp_dltest.so"), RTLD_NOW);
	CHECK(h != NULL);
	run = (int (*)(int))dlsym(h, "dltest_run");
	run(5);
	CHECK_EQ(atomic_load(&hits), 1);
	CHECK_EQ(dlclose(h), 0);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST(fork_child_runs_restored)
{
	static const uint8_t nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	int id, st;
	pid_t pid;
	atomic_store(&hits, 0);
	id = djp_connect("misc_site", count, NULL, 0);
	CHECK(id >= 0);
	misc_site(1);
	uintptr_t a = last_site;
	CHECK_EQ(*(uint8_t *)a, 0xe9);
	pid = fork();
	if (pid == 0) {
		long before = atomic_load(&hits);
		misc_site(2);
		_exit(memcmp((void *)a, nop6, 6) != 0 || atomic_load(&hits) != before ? 1 : 0);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	misc_site(3); /* the parent is still armed */
	CHECK_EQ(atomic_load(&hits), 2);
	CHECK_EQ(djp_disconnect(id), 0);
}

static int rwx_mappings(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (fgets(line, sizeof(line), f))
		n += strstr(line, " rwx") != NULL;
	fclose(f);
	return n;
}

static int text_differs(struct dl_phdr_info *info, size_t size, void *data)
{
	int *diffs = data, fd;
	(void)size;
	if (info->dlpi_name[0])
		return 0;
	fd = open("/proc/self/exe", O_RDONLY);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uint8_t *file = malloc(ph->p_filesz);
		if (pread(fd, file, ph->p_filesz, (off_t)ph->p_offset) == (ssize_t)ph->p_filesz)
			*diffs += memcmp(file, (void *)(info->dlpi_addr + ph->p_vaddr), ph->p_filesz) != 0;
		else
			*diffs += 1;
		free(file);
	}
	close(fd);
	return 1;
}

TEST(no_rwx_and_text_equals_file)
{
	int ids[3], diffs = 0;
	CHECK_EQ(rwx_mappings(), 0);
	ids[0] = djp_connect("*", count, NULL, 0);
	ids[1] = djp_connect("misc_*", count, NULL, DJP_FORCE_INT3);
	ids[2] = djp_connect("*", count, NULL, DJP_GPR_ONLY);
	CHECK(ids[0] >= 0 && ids[1] >= 0 && ids[2] >= 0);
	CHECK_EQ(rwx_mappings(), 0);
	dl_iterate_phdr(text_differs, &diffs);
	CHECK(diffs > 0); /* armed: the text differs */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(djp_disconnect(ids[i]), 0);
	CHECK_EQ(rwx_mappings(), 0);
	diffs = 0;
	dl_iterate_phdr(text_differs, &diffs);
	CHECK_EQ(diffs, 0);
}

static void reenter(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&hits, 1);
	misc_other(7); /* instrumented too: must not recurse */
}

TEST(hit_inside_handler_is_a_miss)
{
	atomic_store(&hits, 0);
	int id = djp_connect("misc_*", reenter, NULL, 0);
	CHECK(id >= 0);
	misc_site(1);
	CHECK_EQ(atomic_load(&hits), 1);
	CHECK_EQ(djp_disconnect(id), 0);
}
