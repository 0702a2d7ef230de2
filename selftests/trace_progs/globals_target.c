/*
 * The @var test's target: globals and file statics of the types @var
 * reads, changed every round before a call of gl_tick(), and printed as
 * the program sees them, so that its own output is the oracle for what a
 * script reads of them at gl_tick's entry.
 *
 *   globals_target N    N rounds, then "done"
 */
#include <stdio.h>
#include <stdlib.h>

enum gl_color { GL_RED = -2, GL_GREEN = 1, GL_BLUE = 7 };

int gl_int;
static long gl_long;
unsigned short gl_u16;
signed char gl_s8 = -1;
_Bool gl_flag;
const char *gl_text = "";
enum gl_color gl_color = GL_RED;
long gl_init = 424242;
static const char *const texts[] = { "alpha", "beta", "gamma" };
static char gl_buf[16];

__attribute__((noinline, noipa)) void gl_tick(long i)
{
	__asm__ volatile("" ::"r"(i) : "memory");
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (long i = 0; i < n; i++) {
		gl_int = (int)(-1000 - i);
		gl_long = 0x123456789aL * (i + 1);
		gl_u16 = (unsigned short)(65530 + i);
		gl_s8 = (signed char)(-100 - i);
		gl_flag = i & 1;
		/* the text of the call, overwritten after it: a script
		 * that prints "gone" read it too late */
		snprintf(gl_buf, sizeof(gl_buf), "%s", texts[i % 3]);
		gl_text = i % 2 ? gl_buf : texts[i % 3];
		gl_color = i % 2 ? GL_BLUE : GL_RED;
		gl_tick(i);
		printf("vars %d %ld %u %d %d %#lx %d\n", gl_int, gl_long, gl_u16, gl_s8, gl_flag, (unsigned long)gl_text,
		       (int)gl_color);
		printf("text %s\n", texts[i % 3]);
		snprintf(gl_buf, sizeof(gl_buf), "gone");
	}
	printf("done\n");
	return 0;
}
