/*
 * The program the script corpus (selftests/scripts/corpus) traces: a small
 * request server with the markers a real one would have, whose workload is
 * a fixed function of the request number, so that every script's output is
 * the same from run to run.  One thread, no clocks, no randomness: the
 * "latency" of a request is computed, not measured.
 *
 * Per request i (0..REQUESTS-1): request_start, a few function entries and
 * exits (a call tree two or three deep), syscalls with their results, an
 * allocation (freed two requests later, one in 16 never), a lock taken and
 * released, reads, an error now and then, and request_done with a status
 * and the latency; every 50 requests a tick.
 */
#include <djprobe/marker.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUESTS 200

static const char *const paths[] = { "/index.html", "/api/users", "/api/orders", "/static/app.js", "/login" };
static const char *const locks[] = { "db", "cache", "session" };
static const char *const funcs[] = { "handle", "parse", "route", "render", "query" };

struct header { /* read field by field with user_int() and %m */
	int32_t magic;
	int32_t version;
	char tag[8];
};

__attribute__((noinline)) static void enter(const char *fn, int depth)
{
	MARK(func_entry, "name=%s depth=%d", fn, depth);
}

__attribute__((noinline)) static void leave(const char *fn, int depth, long ret)
{
	MARK(func_exit, "name=%s depth=%d ret=%ld", fn, depth, ret);
}

int main(void)
{
	static void *held[REQUESTS];
	static struct header hdr = { 0x44504a21, 3, "corpus\n" };
	static char msg[64];

	MARK(server_start, "version=%d workers=%d", 3, 4);
	MARK(config, "hdr=%p name=%s", (void *)&hdr, "corpus-server");
	for (int i = 0; i < REQUESTS; i++) {
		const char *path = paths[(i * 7) % 5];
		int status = i % 23 == 0 ? 500 : i % 11 == 0 ? 404 : i % 9 == 0 ? 302 : 200;
		int latency = 100 + (i * 37) % 900 + (status == 500 ? 5000 : 0);
		size_t size = (size_t)16 << (i % 8);

		MARK(request_start, "id=%d path=%s", i, path);
		enter(funcs[0], 0);
		enter(funcs[1], 1);
		leave(funcs[1], 1, (long)strlen(path));
		enter(funcs[2], 1);
		if (i % 3 == 0) {
			enter(funcs[4], 2);
			MARK(syscall_enter, "nr=%d", 0); /* read */
			MARK(syscall_exit, "nr=%d ret=%ld", 0, i % 13 == 0 ? -11L : (long)(i * 10 % 4096));
			MARK(read_bytes, "fd=%d bytes=%d", 3 + i % 4, i % 13 == 0 ? 0 : i * 10 % 4096);
			leave(funcs[4], 2, i % 13 == 0 ? -11 : 0);
		}
		leave(funcs[2], 1, status);
		enter(funcs[3], 1);
		MARK(syscall_enter, "nr=%d", 1); /* write */
		MARK(syscall_exit, "nr=%d ret=%ld", 1, status == 500 ? -32L : (long)latency);
		leave(funcs[3], 1, 0);
		leave(funcs[0], 0, status);

		held[i] = malloc(size);
		MARK(alloc, "size=%zu ptr=%p", size, held[i]);
		if (i >= 2 && (i - 2) % 16 != 5) {
			MARK(free, "ptr=%p", held[i - 2]);
			free(held[i - 2]);
			held[i - 2] = NULL;
		}
		{
			const char *lk = locks[i % 3];
			MARK(lock_acquire, "lock=%s waited=%d", lk, (i * 13) % 50);
			MARK(lock_release, "lock=%s held=%d", lk, (i * 29) % 200);
		}
		if (status >= 500) {
			snprintf(msg, sizeof(msg), "upstream \"%s\" failed\t(code %d)", path, status);
			MARK(error, "code=%d msg=%p", status, (void *)msg);
		}
		MARK(request_done, "id=%d status=%d latency_us=%d path=%s", i, status, latency, path);
		if ((i + 1) % 50 == 0)
			MARK(tick, "n=%d", (i + 1) / 50);
	}
	for (int i = 0; i < REQUESTS; i++)
		free(held[i]);
	MARK(server_stop, "served=%d", REQUESTS);
	return 0;
}
