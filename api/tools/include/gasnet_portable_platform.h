/*
 * gasnet_portable_platform.h: the platform and configuration macros GASNet
 * clients test with #if (compiler, OS, architecture, sizes, features).
 *
 * gasnet_tools.h includes it; gasnetex.h may include it too, so that both
 * headers agree on one definition of each macro. Every macro a client may
 * test is defined (to 0 or 1 where it is a yes/no), so client code compiles
 * cleanly under -Wundef. The values describe the compiler that reads this
 * header, not the one that built the library: gex needs GCC or Clang, and the
 * two agree on everything that matters to the library's interface.
 *
 * Names and meanings follow GASNet's portable_platform.h and gasnet_config.h;
 * the definitions are ours.
 */
#ifndef GEX_API_TOOLS_GASNET_PORTABLE_PLATFORM_H_
#define GEX_API_TOOLS_GASNET_PORTABLE_PLATFORM_H_

/* ------------------------------------------------------------------------
 * Preprocessor helpers. gasnetex.h may define the same two names
 * identically; the guards keep a second definition out either way.
 */
#ifndef _STRINGIFY_HELPER
#define _STRINGIFY_HELPER(x) #x
#endif
#ifndef _STRINGIFY
/* The macro-expanded argument as a string literal. */
#define _STRINGIFY(x) _STRINGIFY_HELPER(x)
#endif
#ifndef _CONCAT_HELPER
#define _CONCAT_HELPER(a, b) a##b
#endif
#ifndef _CONCAT
/* The macro-expanded arguments pasted into one token. */
#define _CONCAT(a, b) _CONCAT_HELPER(a, b)
#endif

/* ------------------------------------------------------------------------
 * Compiler. PLATFORM_COMPILER_FAMILYNAME is a bare identifier (GNU or
 * CLANG) for _STRINGIFY; PLATFORM_COMPILER_VERSION is a number that grows
 * with each release, PLATFORM_COMPILER_VERSION_STR its "x.y.z" string.
 */
#if defined(__clang__)
#define PLATFORM_COMPILER_CLANG 1
#define PLATFORM_COMPILER_GNU 0
#define PLATFORM_COMPILER_FAMILYNAME CLANG
#define PLATFORM_COMPILER_FAMILYID 17
#define PLATFORM_COMPILER_VERSION \
  (__clang_major__ * 65536 + __clang_minor__ * 256 + __clang_patchlevel__)
#define PLATFORM_COMPILER_VERSION_STR \
  _STRINGIFY(__clang_major__)         \
  "." _STRINGIFY(__clang_minor__) "." _STRINGIFY(__clang_patchlevel__)
#elif defined(__GNUC__)
#define PLATFORM_COMPILER_CLANG 0
#define PLATFORM_COMPILER_GNU 1
#define PLATFORM_COMPILER_FAMILYNAME GNU
#define PLATFORM_COMPILER_FAMILYID 1
#define PLATFORM_COMPILER_VERSION \
  (__GNUC__ * 65536 + __GNUC_MINOR__ * 256 + __GNUC_PATCHLEVEL__)
#define PLATFORM_COMPILER_VERSION_STR \
  _STRINGIFY(__GNUC__)                \
  "." _STRINGIFY(__GNUC_MINOR__) "." _STRINGIFY(__GNUC_PATCHLEVEL__)
#else
#error "gex's headers need a GCC-compatible compiler (GCC or Clang)"
#endif
/* Compares the compiler's version with major.minor.patch, in #if or as an
 * expression: #if PLATFORM_COMPILER_VERSION_GE(11, 1, 0). */
#define PLATFORM_COMPILER_VERSION_INT(maj, min, pat) \
  (((maj) << 16) | ((min) << 8) | (pat))
#define PLATFORM_COMPILER_VERSION_GT(maj, min, pat) \
  (PLATFORM_COMPILER_VERSION > PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_GE(maj, min, pat) \
  (PLATFORM_COMPILER_VERSION >= PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_EQ(maj, min, pat) \
  (PLATFORM_COMPILER_VERSION == PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_LE(maj, min, pat) \
  (PLATFORM_COMPILER_VERSION <= PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
#define PLATFORM_COMPILER_VERSION_LT(maj, min, pat) \
  (PLATFORM_COMPILER_VERSION < PLATFORM_COMPILER_VERSION_INT(maj, min, pat))
/* Compilers gex does not support, defined so that #if tests of them are
 * well-formed. */
#define PLATFORM_COMPILER_INTEL 0
#define PLATFORM_COMPILER_PGI 0
#define PLATFORM_COMPILER_NVHPC 0
#define PLATFORM_COMPILER_XLC 0
#define PLATFORM_COMPILER_CRAY 0
#define PLATFORM_COMPILER_SUN 0
#define PLATFORM_COMPILER_TINY 0
#define PLATFORM_COMPILER_OPEN64 0
#define PLATFORM_COMPILER_UNKNOWN 0
#define PLATFORM_COMPILER_NAME _STRINGIFY(PLATFORM_COMPILER_FAMILYNAME)
#define PLATFORM_COMPILER_ID PLATFORM_COMPILER_FAMILYID
/* "|COMPILER_FAMILY:<family>|COMPILER_VERSION:<x.y.z>|" */
#define PLATFORM_COMPILER_IDSTR \
  "|COMPILER_FAMILY:" _STRINGIFY(PLATFORM_COMPILER_FAMILYNAME)      \
      "|COMPILER_VERSION:" PLATFORM_COMPILER_VERSION_STR "|"
#if defined(__cplusplus)
#define PLATFORM_COMPILER_C_LANGLVL 0
#define PLATFORM_COMPILER_CXX_LANGLVL __cplusplus
#else
#define PLATFORM_COMPILER_C_LANGLVL __STDC_VERSION__
#define PLATFORM_COMPILER_CXX_LANGLVL 0
#endif

/* ------------------------------------------------------------------------
 * Operating system.
 */
#if defined(__linux__)
#define PLATFORM_OS_LINUX 1
#define PLATFORM_OS_FAMILYNAME LINUX
#else
#define PLATFORM_OS_LINUX 0
#define PLATFORM_OS_FAMILYNAME UNKNOWN
#endif
#if defined(__APPLE__)
#define PLATFORM_OS_DARWIN 1
#else
#define PLATFORM_OS_DARWIN 0
#endif
#define PLATFORM_OS_CYGWIN 0
#define PLATFORM_OS_SOLARIS 0
#define PLATFORM_OS_AIX 0
#define PLATFORM_OS_FREEBSD 0
#define PLATFORM_OS_NETBSD 0
#define PLATFORM_OS_OPENBSD 0
#define PLATFORM_OS_CNL 0
#define PLATFORM_OS_UNKNOWN (!PLATFORM_OS_LINUX && !PLATFORM_OS_DARWIN)

/* ------------------------------------------------------------------------
 * Architecture: exactly one of PLATFORM_ARCH_32 and PLATFORM_ARCH_64 is 1,
 * and exactly one of PLATFORM_ARCH_LITTLE_ENDIAN and _BIG_ENDIAN.
 */
#if defined(__x86_64__)
#define PLATFORM_ARCH_X86_64 1
#define PLATFORM_ARCH_FAMILYNAME X86_64
#else
#define PLATFORM_ARCH_X86_64 0
#endif
#if defined(__aarch64__)
#define PLATFORM_ARCH_AARCH64 1
#define PLATFORM_ARCH_FAMILYNAME AARCH64
#else
#define PLATFORM_ARCH_AARCH64 0
#endif
#if defined(__powerpc64__)
#define PLATFORM_ARCH_POWERPC 1
#define PLATFORM_ARCH_FAMILYNAME POWERPC
#else
#define PLATFORM_ARCH_POWERPC 0
#endif
#ifndef PLATFORM_ARCH_FAMILYNAME
#define PLATFORM_ARCH_FAMILYNAME UNKNOWN
#endif
#define PLATFORM_ARCH_X86 0
#define PLATFORM_ARCH_ARM 0
#define PLATFORM_ARCH_SPARC 0
#define PLATFORM_ARCH_MIPS 0
#define PLATFORM_ARCH_RISCV 0

#if __SIZEOF_POINTER__ == 8
#define PLATFORM_ARCH_64 1
#define PLATFORM_ARCH_32 0
#elif __SIZEOF_POINTER__ == 4
#define PLATFORM_ARCH_64 0
#define PLATFORM_ARCH_32 1
#else
#error "unsupported pointer size"
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PLATFORM_ARCH_LITTLE_ENDIAN 1
#define PLATFORM_ARCH_BIG_ENDIAN 0
#else
#define PLATFORM_ARCH_LITTLE_ENDIAN 0
#define PLATFORM_ARCH_BIG_ENDIAN 1
#endif

/* ------------------------------------------------------------------------
 * Configuration GASNet's configure would detect (gasnet_config.h): the
 * same on every system gex builds on (glibc, GCC or Clang).
 */
#ifndef HAVE_PTHREAD_H
#define HAVE_PTHREAD_H 1
#endif
#ifndef HAVE_PTHREAD_SETCONCURRENCY
#define HAVE_PTHREAD_SETCONCURRENCY 1
#endif
#ifndef HAVE_MMAP
#define HAVE_MMAP 1
#endif
#ifndef SIZEOF_CHAR
#define SIZEOF_CHAR 1
#endif
#ifndef SIZEOF_SHORT
#define SIZEOF_SHORT __SIZEOF_SHORT__
#endif
#ifndef SIZEOF_INT
#define SIZEOF_INT __SIZEOF_INT__
#endif
#ifndef SIZEOF_LONG
#define SIZEOF_LONG __SIZEOF_LONG__
#endif
#ifndef SIZEOF_LONG_LONG
#define SIZEOF_LONG_LONG __SIZEOF_LONG_LONG__
#endif
#ifndef SIZEOF_VOID_P
#define SIZEOF_VOID_P __SIZEOF_POINTER__
#endif
#ifndef SIZEOF_SIZE_T
#define SIZEOF_SIZE_T __SIZEOF_SIZE_T__
#endif
#ifndef SIZEOF_FLOAT
#define SIZEOF_FLOAT __SIZEOF_FLOAT__
#endif
#ifndef SIZEOF_DOUBLE
#define SIZEOF_DOUBLE __SIZEOF_DOUBLE__
#endif

/* printf conversions for size_t and ptrdiff_t: "%" PRIuSZ prints a size_t. */
#ifndef PRIuSZ
#define PRIuSZ "zu"
#endif
#ifndef PRIdSZ
#define PRIdSZ "zd"
#endif
#ifndef PRIxSZ
#define PRIxSZ "zx"
#endif
#ifndef PRIdPD
#define PRIdPD "td"
#endif

/* Shared-memory transport between processes of one host (gex always has
 * it: the PSHM layer). */
#ifndef GASNETI_PSHM_ENABLED
#define GASNETI_PSHM_ENABLED 1
#endif

#endif /* GEX_API_TOOLS_GASNET_PORTABLE_PLATFORM_H_ */
