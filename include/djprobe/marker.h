/*
 * <djprobe/marker.h>: static markers that cost one NOP while nobody listens.
 *
 * How it works.  MARK(name, "fmt", args...) expands to one asm statement that
 * emits, in the instruction stream, exactly the 6-byte NOP `66 0f 1f 44 00 00`
 * (nopw 0x0(%rax,%rax,1)), and, out of line, a record in the ELF section
 * `.markers` (layout in docs/ABI.md) plus a `.note.stapsdt` note in the format
 * of <sys/sdt.h>.  Arguments are asm operands with the "nor" constraint: the
 * compiler leaves each one wherever it already is (a register, a stack slot,
 * an immediate) and prints that location into the record as an SDT-style
 * string such as `8@%rdi -4@-12(%rbp) 4@$5`.  Nothing is loaded, tested or
 * called at a disabled site; the djprobe engine later overwrites the NOP with
 * a jump to a trampoline that decodes those locations.
 *
 * The format string cannot go through the extended asm (its `%` would be read
 * as operand references), so a second, operand-free asm statement appends it
 * to the record and closes it.  Volatile asm statements keep their relative
 * order, so the two halves always meet; the reader checks every record's size
 * and strings anyway and refuses a malformed section.
 *
 * Every address in the record is self-relative, so the section needs no
 * dynamic relocation in a PIE or a shared library.  The section is emitted in
 * the same COMDAT group as the function's text (the `?` flag), so an inline
 * function's record disappears with the copy of the function the linker drops,
 * and it is retained under --gc-sections (the `R` flag).
 *
 * Compile-time checks: each argument must be of integer, enum, bool or pointer
 * type (an array or a string literal is a pointer, as in a call); the format is checked as a printf format against the arguments, with
 * -Wformat raised to an error, so a conversion count that differs from the
 * argument count does not compile.
 *
 * Header-only, no link dependency.  Define DJPROBE_NO_SHORT_NAMES to get only
 * DJP_MARK, DJP_PROVIDER to name the SDT provider (default `djp`), and
 * DJP_NO_SDT_NOTE to omit the `.note.stapsdt` note.
 */
#ifndef DJPROBE_MARKER_H
#define DJPROBE_MARKER_H

#define DJP_MARKER_ABI_VERSION 1
#define DJP_MARKER_MAX_ARGS 12
#define DJP_MARKER_SITE_LEN 6

#ifndef DJP_PROVIDER
#define DJP_PROVIDER djp
#endif

#define _DJP_STR_(x) #x
#define _DJP_STR(x) _DJP_STR_(x)
#define _DJP_CAT_(a, b) a##b
#define _DJP_CAT(a, b) _DJP_CAT_(a, b)

/* Number of macro arguments, 1 to 14 (name, format and up to 12 values). */
#define _DJP_NARGS(...) _DJP_NARGS_(__VA_ARGS__, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define _DJP_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, n, ...) n

/* ---- argument type checks and size/signedness --------------------------- */

/*
 * An argument is typed as a function call would take it: an array, a string
 * literal say, is a pointer to its first element, which is also what the asm
 * operand receives.  The operand itself is the argument unchanged, so that a
 * value already in memory is described where it lies rather than loaded.
 */
#ifdef __cplusplus
#include <type_traits>
template <typename T> struct _djp_arg_traits {
	typedef typename std::decay<T>::type type;
	static const bool ok = std::is_integral<type>::value || std::is_enum<type>::value ||
			       std::is_pointer<type>::value;
	static const bool is_signed = std::is_signed<type>::value ||
				      (std::is_enum<type>::value && (type)-1 < (type)1);
	static const int size = (int)sizeof(type);
};
#define _DJP_CHECK(i, x)                                                                      \
	static_assert(_djp_arg_traits<decltype(x)>::ok,                                       \
		      "MARK argument " #i " (" #x ") must have integer or pointer type");
#define _DJP_SIGNED(x) (_djp_arg_traits<decltype(x)>::is_signed)
#define _DJP_SIZE(x) (_djp_arg_traits<decltype(x)>::size)
#else
/* The comma operator converts its result as a call argument is converted
 * (an array to a pointer), without the integer promotions. */
#define _DJP_DECAY(x) ((void)0, (x))
/* __builtin_classify_type: 1 integer, 2 char, 3 enum, 4 bool, 5 pointer. */
#define _DJP_CLASS(x) __builtin_classify_type(_DJP_DECAY(x))
#define _DJP_TYPE_OK(x) (_DJP_CLASS(x) >= 1 && _DJP_CLASS(x) <= 5)
#define _DJP_CHECK(i, x)                                                                      \
	_Static_assert(_DJP_TYPE_OK(x), "MARK argument " #i " (" #x ") must have integer or pointer type");
#define _DJP_SIGNED(x) ((__typeof__(_DJP_DECAY(x)))-1 < (__typeof__(_DJP_DECAY(x)))1)
#define _DJP_SIZE(x) ((int)sizeof(__typeof__(_DJP_DECAY(x))))
#endif

/* The "n" operand holds size for unsigned, -size... negated by %n on output:
 * so a signed 4-byte argument prints as "-4@...", as in <sys/sdt.h>. */
#define _DJP_SZ(x) (_DJP_SIGNED(x) ? _DJP_SIZE(x) : -_DJP_SIZE(x))
#define _DJP_OP(i, x) [_djp_s##i] "n"(_DJP_SZ(x)), [_djp_a##i] "nor"(x)
#define _DJP_TP(i) "%n[_djp_s" #i "]@%[_djp_a" #i "]"

#define _DJP_OPS_1(a) _DJP_OP(1, a)
#define _DJP_OPS_2(a, b) _DJP_OPS_1(a), _DJP_OP(2, b)
#define _DJP_OPS_3(a, b, c) _DJP_OPS_2(a, b), _DJP_OP(3, c)
#define _DJP_OPS_4(a, b, c, d) _DJP_OPS_3(a, b, c), _DJP_OP(4, d)
#define _DJP_OPS_5(a, b, c, d, e) _DJP_OPS_4(a, b, c, d), _DJP_OP(5, e)
#define _DJP_OPS_6(a, b, c, d, e, f) _DJP_OPS_5(a, b, c, d, e), _DJP_OP(6, f)
#define _DJP_OPS_7(a, b, c, d, e, f, g) _DJP_OPS_6(a, b, c, d, e, f), _DJP_OP(7, g)
#define _DJP_OPS_8(a, b, c, d, e, f, g, h) _DJP_OPS_7(a, b, c, d, e, f, g), _DJP_OP(8, h)
#define _DJP_OPS_9(a, b, c, d, e, f, g, h, i) _DJP_OPS_8(a, b, c, d, e, f, g, h), _DJP_OP(9, i)
#define _DJP_OPS_10(a, b, c, d, e, f, g, h, i, j) _DJP_OPS_9(a, b, c, d, e, f, g, h, i), _DJP_OP(10, j)
#define _DJP_OPS_11(a, b, c, d, e, f, g, h, i, j, k)                                          \
	_DJP_OPS_10(a, b, c, d, e, f, g, h, i, j), _DJP_OP(11, k)
#define _DJP_OPS_12(a, b, c, d, e, f, g, h, i, j, k, l)                                       \
	_DJP_OPS_11(a, b, c, d, e, f, g, h, i, j, k), _DJP_OP(12, l)

#define _DJP_CHK_1(a) _DJP_CHECK(1, a)
#define _DJP_CHK_2(a, b) _DJP_CHK_1(a) _DJP_CHECK(2, b)
#define _DJP_CHK_3(a, b, c) _DJP_CHK_2(a, b) _DJP_CHECK(3, c)
#define _DJP_CHK_4(a, b, c, d) _DJP_CHK_3(a, b, c) _DJP_CHECK(4, d)
#define _DJP_CHK_5(a, b, c, d, e) _DJP_CHK_4(a, b, c, d) _DJP_CHECK(5, e)
#define _DJP_CHK_6(a, b, c, d, e, f) _DJP_CHK_5(a, b, c, d, e) _DJP_CHECK(6, f)
#define _DJP_CHK_7(a, b, c, d, e, f, g) _DJP_CHK_6(a, b, c, d, e, f) _DJP_CHECK(7, g)
#define _DJP_CHK_8(a, b, c, d, e, f, g, h) _DJP_CHK_7(a, b, c, d, e, f, g) _DJP_CHECK(8, h)
#define _DJP_CHK_9(a, b, c, d, e, f, g, h, i) _DJP_CHK_8(a, b, c, d, e, f, g, h) _DJP_CHECK(9, i)
#define _DJP_CHK_10(a, b, c, d, e, f, g, h, i, j)                                             \
	_DJP_CHK_9(a, b, c, d, e, f, g, h, i) _DJP_CHECK(10, j)
#define _DJP_CHK_11(a, b, c, d, e, f, g, h, i, j, k)                                          \
	_DJP_CHK_10(a, b, c, d, e, f, g, h, i, j) _DJP_CHECK(11, k)
#define _DJP_CHK_12(a, b, c, d, e, f, g, h, i, j, k, l)                                       \
	_DJP_CHK_11(a, b, c, d, e, f, g, h, i, j, k) _DJP_CHECK(12, l)

#define _DJP_TPL_0 ""
#define _DJP_TPL_1 _DJP_TP(1)
#define _DJP_TPL_2 _DJP_TPL_1 " " _DJP_TP(2)
#define _DJP_TPL_3 _DJP_TPL_2 " " _DJP_TP(3)
#define _DJP_TPL_4 _DJP_TPL_3 " " _DJP_TP(4)
#define _DJP_TPL_5 _DJP_TPL_4 " " _DJP_TP(5)
#define _DJP_TPL_6 _DJP_TPL_5 " " _DJP_TP(6)
#define _DJP_TPL_7 _DJP_TPL_6 " " _DJP_TP(7)
#define _DJP_TPL_8 _DJP_TPL_7 " " _DJP_TP(8)
#define _DJP_TPL_9 _DJP_TPL_8 " " _DJP_TP(9)
#define _DJP_TPL_10 _DJP_TPL_9 " " _DJP_TP(10)
#define _DJP_TPL_11 _DJP_TPL_10 " " _DJP_TP(11)
#define _DJP_TPL_12 _DJP_TPL_11 " " _DJP_TP(12)

/* ---- the format check --------------------------------------------------- */

static inline __attribute__((format(printf, 1, 2), unused)) void _djp_format_check(const char *fmt, ...)
{
	(void)fmt;
}
#define _DJP_FORMAT_CHECK(...)                                                                \
	_Pragma("GCC diagnostic push") _Pragma("GCC diagnostic error \"-Wformat\"")           \
		_Pragma("GCC diagnostic error \"-Wformat-extra-args\"")                      \
			_Pragma("GCC diagnostic ignored \"-Wformat-zero-length\"") if (0)    \
			_djp_format_check(__VA_ARGS__);                                       \
	_Pragma("GCC diagnostic pop")

/* ---- the emitted site, record and note ---------------------------------- */

#ifdef DJP_NO_SDT_NOTE
#define _DJP_NOTE(name, nargs)
#else
/* The note of <sys/sdt.h>, version 3: pc, base, semaphore, provider, name,
 * arguments.  _.stapsdt.base lets readers of a prelinked file find the bias. */
#define _DJP_NOTE(name, nargs)                                                                \
	".ifndef _.stapsdt.base\n"                                                            \
	".pushsection .stapsdt.base,\"aG\",@progbits,.stapsdt.base,comdat\n"                  \
	".weak _.stapsdt.base\n"                                                              \
	".hidden _.stapsdt.base\n"                                                            \
	"_.stapsdt.base: .space 1\n"                                                          \
	".size _.stapsdt.base, 1\n"                                                           \
	".popsection\n"                                                                       \
	".endif\n"                                                                            \
	".pushsection .note.stapsdt,\"?\",@note\n"                                           \
	".balign 4\n"                                                                         \
	".4byte 994f-993f, 996f-995f, 3\n"                                                    \
	"993: .asciz \"stapsdt\"\n"                                                           \
	"994: .balign 4\n"                                                                    \
	"995: .8byte 990b\n"                                                                  \
	".8byte _.stapsdt.base\n"                                                             \
	".8byte 0\n"                                                                          \
	".asciz \"" _DJP_STR(DJP_PROVIDER) "\"\n"                                             \
	".asciz \"" #name "\"\n"                                                              \
	".asciz \"" _DJP_TPL_##nargs "\"\n"                                                   \
	"996: .balign 4\n"                                                                    \
	".popsection\n"
#endif

/*
 * In a kernel module the record also gets a local symbol, __djp_marker_N
 * (N from %=, unique in the object): a .ko is relocatable, and the module
 * loader keeps no pointer to an arbitrary section, but with
 * CONFIG_KALLSYMS_ALL it keeps every symbol of an allocated section with its
 * final address, which is how djprobe.ko finds the records of a module as
 * it comes (kmod/kmarkers.c).  User-space output has no such symbol.
 */
#ifdef __KERNEL__
#define _DJP_RECORD_SYM "__djp_marker_%=:\n"
#else
#define _DJP_RECORD_SYM ""
#endif

/*
 * Record, version 1 (docs/ABI.md):
 *   u16 version, u16 size, u8 site_len, u8 nargs, u16 flags,
 *   s64 site - &this field, name\0, args\0, format\0, zero padding to 8.
 * The first asm writes everything up to the argument string; the second
 * writes the format, pads, and defines label 992 that the size refers to.
 */
#define _DJP_SITE(name, nargs, ops)                                                           \
	__asm__ __volatile__("990: %{disp8%} nopw 0x0(%%rax,%%rax,1)\n"                     \
			     ".pushsection .markers,\"aR?\",@progbits\n"                      \
			     ".balign 8\n"                                                    \
			     "991: " _DJP_RECORD_SYM                                          \
			     ".2byte " _DJP_STR(DJP_MARKER_ABI_VERSION) "\n"                 \
			     ".2byte 992f-991b\n"                                             \
			     ".byte " _DJP_STR(DJP_MARKER_SITE_LEN) ", " #nargs "\n"          \
			     ".2byte 0\n"                                                     \
			     ".8byte 990b-.\n"                                                \
			     ".asciz \"" #name "\"\n"                                         \
			     ".asciz \"" _DJP_TPL_##nargs "\"\n"                              \
			     ".popsection\n" _DJP_NOTE(name, nargs)::ops)

#define _DJP_CLOSE(fmt)                                                                       \
	__asm__ __volatile__(".pushsection .markers,\"aR?\",@progbits\n"                      \
			     ".asciz " _DJP_STR(fmt) "\n"                                     \
			     ".balign 8, 0\n"                                                 \
			     "992:\n"                                                         \
			     ".popsection\n")

/* The name must be an identifier: this enum does not compile otherwise. */
#define _DJP_NAME_CHECK(name) enum { _djp_marker_name_##name = 0 };

#define _DJP_MARK_0(name)                                                                     \
	do {                                                                                  \
		_DJP_NAME_CHECK(name)                                                         \
		_DJP_SITE(name, 0, );                                                         \
		_DJP_CLOSE("");                                                               \
	} while (0)
#define _DJP_MARK_F(name, fmt)                                                                \
	do {                                                                                  \
		_DJP_NAME_CHECK(name)                                                         \
		_DJP_FORMAT_CHECK(fmt)                                                        \
		_DJP_SITE(name, 0, );                                                         \
		_DJP_CLOSE(fmt);                                                              \
	} while (0)
#define _DJP_MARK_N_(n, name, fmt, ...)                                                       \
	do {                                                                                  \
		_DJP_NAME_CHECK(name)                                                         \
		_DJP_CHK_##n(__VA_ARGS__)                                                     \
		_DJP_FORMAT_CHECK(fmt, __VA_ARGS__)                                           \
		_DJP_SITE(name, n, _DJP_OPS_##n(__VA_ARGS__));                                \
		_DJP_CLOSE(fmt);                                                              \
	} while (0)
#define _DJP_MARK_N(n, ...) _DJP_MARK_N_(n, __VA_ARGS__)

#define _DJP_KIND_1 0
#define _DJP_KIND_2 F
#define _DJP_KIND_3 A
#define _DJP_KIND_4 A
#define _DJP_KIND_5 A
#define _DJP_KIND_6 A
#define _DJP_KIND_7 A
#define _DJP_KIND_8 A
#define _DJP_KIND_9 A
#define _DJP_KIND_10 A
#define _DJP_KIND_11 A
#define _DJP_KIND_12 A
#define _DJP_KIND_13 A
#define _DJP_KIND_14 A
#define _DJP_NVALS_3 1
#define _DJP_NVALS_4 2
#define _DJP_NVALS_5 3
#define _DJP_NVALS_6 4
#define _DJP_NVALS_7 5
#define _DJP_NVALS_8 6
#define _DJP_NVALS_9 7
#define _DJP_NVALS_10 8
#define _DJP_NVALS_11 9
#define _DJP_NVALS_12 10
#define _DJP_NVALS_13 11
#define _DJP_NVALS_14 12

#define _DJP_MARK_A(...) _DJP_MARK_N(_DJP_CAT(_DJP_NVALS_, _DJP_NARGS(__VA_ARGS__)), __VA_ARGS__)
#define _DJP_DISPATCH(kind) _DJP_CAT(_DJP_MARK_, kind)

/* DJP_MARK(name) or DJP_MARK(name, "format", args...) with up to 12 args. */
#define DJP_MARK(...) _DJP_DISPATCH(_DJP_CAT(_DJP_KIND_, _DJP_NARGS(__VA_ARGS__)))(__VA_ARGS__)

#ifndef DJPROBE_NO_SHORT_NAMES
#define MARK(...) DJP_MARK(__VA_ARGS__)
#endif

#endif /* DJPROBE_MARKER_H */
