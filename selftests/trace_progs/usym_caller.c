/*
 * A shared object that calls back: usym_target loads it first and calls
 * the plugin's plugin_fire through caller_call, so that the plugin's
 * marker fires with a frame of this object on the stack.  Its own
 * marker, caller_ping, tells a test that a tool has armed it.
 */
#include <djprobe/marker.h>

volatile long caller_calls;

__attribute__((visibility("default"))) void caller_ping(void)
{
	MARK(caller_ping);
}

__attribute__((visibility("default"))) void caller_call(void (*f)(long), long n)
{
	f(n);
	caller_calls++; /* after the call: not a tail call, a frame of ours */
}
