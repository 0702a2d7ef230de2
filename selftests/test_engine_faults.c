/*
 * Fault injection: every system call the engine makes on the way to
 * changing text fails in turn (lib/sysops.h), at every step of a connect
 * batch and of a disconnect batch, while another thread runs the sites.
 * After every failure the call returns -errno and the text is
 * byte-identical to what it was before the call.
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"
#include "lib/markers.h"
#include "lib/sysops.h"

#define NFAULT 4
static uintptr_t addr[NFAULT];
static atomic_int stop;

__attribute__((noinline)) static void fault_sites(long i)
{
	MARK(fault_a, "i=%ld", i);
	MARK(fault_b, "i=%ld", i);
	MARK(fault_c);
	MARK(fault_d, "i=%ld j=%ld", i, i);
}

static void *hammer(void *arg)
{
	(void)arg;
	for (long i = 0; !atomic_load(&stop); i++)
		fault_sites(i);
	return NULL;
}

static void nothing(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
}

static int exe_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (!info->dlpi_name[0]) {
		*(uintptr_t *)data = info->dlpi_addr;
		return 1;
	}
	return 0;
}

static void find_sites(void)
{
	struct djp_marker_list *l;
	char err[256];
	uintptr_t bias = 0;
	int n = 0;
	dl_iterate_phdr(exe_bias, &bias);
	CHECK(djp_markers_read_file("/proc/self/exe", DJP_READ_NO_DWARF, &l, err, sizeof(err)) == 0);
	for (size_t i = 0; i < l->count; i++)
		if (!strncmp(l->v[i].name, "fault_", 6) && n < NFAULT)
			addr[n++] = bias + l->v[i].site;
	djp_marker_list_free(l);
	CHECK_EQ(n, NFAULT);
}

static void snapshot(uint8_t (*out)[6])
{
	for (int i = 0; i < NFAULT; i++)
		memcpy(out[i], (void *)addr[i], 6);
}

static void check_same(uint8_t (*before)[6], const char *what, unsigned long n)
{
	for (int i = 0; i < NFAULT; i++)
		if (memcmp(before[i], (void *)addr[i], 6))
			djp_test_fail(__FILE__, __LINE__, "%s, failure at call %lu: site %d changed", what, n, i);
}

static void inject_everywhere(unsigned flags)
{
	static const uint8_t nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	uint8_t before[NFAULT][6], armed[NFAULT][6];
	pthread_t th;
	int failures = 0, done = 0;

	find_sites();
	/* Initialise the engine first, so that init's own calls are not counted. */
	CHECK_EQ(djp_disconnect(djp_connect("fault_c", nothing, NULL, 0)), 0);
	pthread_create(&th, NULL, hammer, NULL);
	for (unsigned long n = 1; !done && n < 2000; n++) {
		unsigned long c0 = djp_sysops_calls();
		int id;
		snapshot(before);
		djp_sysops_fail_nth(n, ENOSPC);
		id = djp_connect("fault_*", nothing, NULL, flags);
		djp_sysops_fail_nth(0, 0);
		if (id < 0) {
			if (id != -ENOSPC)
				djp_test_fail(__FILE__, __LINE__, "connect with failure at call %lu: %d", n, id);
			check_same(before, "connect", n);
			failures++;
			continue;
		}
		done = djp_sysops_calls() - c0 < n; /* the failure was never reached */
		/* Now the same for every call of the disconnect. */
		for (unsigned long m = 1; m < 2000; m++) {
			int r;
			snapshot(armed);
			djp_sysops_fail_nth(m, ENOSPC);
			r = djp_disconnect(id);
			djp_sysops_fail_nth(0, 0);
			if (r < 0) {
				if (r != -ENOSPC)
					djp_test_fail(__FILE__, __LINE__, "disconnect with failure at call %lu: %d", m, r);
				check_same(armed, "disconnect", m);
				failures++;
				continue;
			}
			for (int i = 0; i < NFAULT; i++)
				CHECK(memcmp((void *)addr[i], nop6, 6) == 0);
			break;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	CHECK(done);
	CHECK(failures >= 4);
	printf("# %d injected failures, all rolled back\n", failures);
}

TEST_TIMEOUT(faults_mprotect_membarrier, 120)
{
	inject_everywhere(0);
	inject_everywhere(DJP_FORCE_INT3);
}

TEST_TIMEOUT(faults_procmem_membarrier, 120)
{
	setenv("DJP_TEXT", "mem", 1);
	inject_everywhere(DJP_GPR_ONLY);
}

TEST_TIMEOUT(faults_mprotect_shootdown, 120)
{
	setenv("DJP_SYNC", "shootdown", 1);
	inject_everywhere(0);
}
