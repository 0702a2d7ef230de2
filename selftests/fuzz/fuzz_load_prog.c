/*
 * libFuzzer target for typed accesses' load programs (lib/load_prog.h):
 * the agent reads them from the tool's LOADS payload and runs them at a
 * hit, and the tool reads their results from events the traced process
 * wrote (lib/ring.h).  The input's first byte picks which:
 *
 *   0: a payload of programs: each one djp_load_get accepts is run, from a
 *      base taken from the input, over a window of the input as memory;
 *      every load must lie inside the window (the reader refuses the rest,
 *      as the agent's fault-safe reader would fault) and a program never
 *      makes more than DJP_LOAD_MAX_DEREF + 1 loads;
 *   1: an event: its results, their strings and its stack are read as
 *      the tool reads them, and all must lie inside the event.
 */
#include <stdint.h>
#include <string.h>

#include "lib/load_wire.h"
#include "lib/ring.h"

#define WINDOW_BASE 0x10000ull

struct window {
	const uint8_t *p;
	size_t n;
	unsigned loads;
};

static bool read_window(void *ctx, uint64_t addr, unsigned size, uint64_t *out)
{
	struct window *w = ctx;
	if (++w->loads > DJP_LOAD_MAX_DEREF + 1)
		__builtin_trap();
	if (size != 1 && size != 2 && size != 4 && size != 8)
		__builtin_trap();
	if (addr < WINDOW_BASE || addr - WINDOW_BASE > w->n || w->n - (addr - WINDOW_BASE) < size)
		return false;
	*out = 0;
	memcpy(out, w->p + (addr - WINDOW_BASE), size);
	return true;
}

static void programs(const uint8_t *data, size_t size)
{
	struct djp_preader r;
	struct djp_load_prog p;
	struct window w = { data, size, 0 };

	djp_preader_init(&r, data, size);
	for (int k = 0; k < DJP_LOAD_MAX_PROGS && !r.bad && r.left; k++) {
		uint64_t base = WINDOW_BASE + (k * 8 % (size + 1)), v;
		if (djp_load_get(&r, &p))
			continue;
		w.loads = 0;
		(void)djp_load_run_idx(&p, base, (uint64_t)k * 3, read_window, &w, &v);
	}
}

static void event(const uint8_t *data, size_t size)
{
	static uint64_t buf[65536 / 8];
	const struct djp_event *ev = (const struct djp_event *)buf;
	uint64_t faulted, strs, fl, ptr;
	const uint64_t *v;
	unsigned n;
	uint32_t len;

	if (size < DJP_EV_HDR_SIZE || size > sizeof(buf))
		return;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data, size);
	/* what the consumer checks before it hands an event out */
	if (ev->size < DJP_EV_HDR_SIZE + 8u * ev->nargs || ev->size > size || (ev->size & 7))
		return;
	v = djp_event_loads(ev, &n, &faulted, &strs);
	if (v && ((const char *)v < (const char *)ev->args || (const char *)(v + n) > (const char *)ev + ev->size))
		__builtin_trap();
	for (unsigned i = 0; v && i < n; i++) {
		const char *t;
		if (!(strs >> i & 1))
			continue;
		t = djp_event_load_str(ev, v[i], &len, &fl, &ptr);
		if (t && (t < (const char *)ev->args || t + len + 1 > (const char *)ev + ev->size || t[len]))
			__builtin_trap();
	}
	{
		const uint64_t *pcs = djp_event_ustack(ev, &n);
		if (pcs && (const char *)(pcs + n) > (const char *)ev + ev->size)
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1)
		event(data + 1, size - 1);
	else
		programs(data + 1, size - 1);
	return 0;
}
