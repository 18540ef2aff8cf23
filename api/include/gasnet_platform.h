/* gasnet_platform.h: the few platform and configuration macros that
 * gasnetex.h's clients test with #if (GASNet's gasnet_config.h and
 * portable_platform.h define them), defined to 0 or 1 so that such tests
 * are well-formed under -Wundef.
 *
 * gasnetex.h includes this header; gasnet_tools.h's own platform header
 * (gasnet_portable_platform.h) defines a larger set that includes these.
 * Whichever comes first wins: each macro here is defined only if it is not
 * already, with exactly the tokens the tools header uses, so including the
 * two in either order never defines a macro twice differently. */
#ifndef _GEX_GASNET_PLATFORM_H
#define _GEX_GASNET_PLATFORM_H 1

#ifndef HAVE_PTHREAD_H
#define HAVE_PTHREAD_H 1
#endif

/* Pointer width: exactly one of PLATFORM_ARCH_32 and PLATFORM_ARCH_64. */
#if !defined(PLATFORM_ARCH_64) && !defined(PLATFORM_ARCH_32)
#if __SIZEOF_POINTER__ == 8
#define PLATFORM_ARCH_64 1
#define PLATFORM_ARCH_32 0
#elif __SIZEOF_POINTER__ == 4
#define PLATFORM_ARCH_64 0
#define PLATFORM_ARCH_32 1
#else
#error "unsupported pointer size"
#endif
#endif

/* Byte order: exactly one of PLATFORM_ARCH_LITTLE_ENDIAN and _BIG_ENDIAN. */
#if !defined(PLATFORM_ARCH_LITTLE_ENDIAN) && !defined(PLATFORM_ARCH_BIG_ENDIAN)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PLATFORM_ARCH_LITTLE_ENDIAN 1
#define PLATFORM_ARCH_BIG_ENDIAN 0
#else
#define PLATFORM_ARCH_LITTLE_ENDIAN 0
#define PLATFORM_ARCH_BIG_ENDIAN 1
#endif
#endif

#endif /* _GEX_GASNET_PLATFORM_H */
