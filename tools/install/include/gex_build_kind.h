/* gex_build_kind.h: the link-time check of the build kind (optimised or
 * debug) for clients of an installed gex tree.
 *
 * The installed fragments and pkg-config files force-include this header
 * (-include gex_build_kind.h). It references gex_install_i_build_DEBUG when
 * the client is compiled with the debug tree's flags (GEX_DEBUG=1) and
 * gex_install_i_build_OPT otherwise; each installed library defines only
 * the symbol of the kind it was built as (tools/install/build_kind.c). A
 * program compiled for one kind and linked with the other kind's library
 * therefore fails to link, naming the missing symbol, instead of running
 * with headers and library that disagree (GEX_DEBUG changes inline code in
 * the headers). */
#ifndef GEX_BUILD_KIND_H
#define GEX_BUILD_KIND_H

#if defined(GEX_DEBUG) && GEX_DEBUG
#define GEX_INSTALL_I_BUILD_SYMBOL gex_install_i_build_DEBUG
#else
#define GEX_INSTALL_I_BUILD_SYMBOL gex_install_i_build_OPT
#endif

#ifdef __cplusplus
extern "C" {
#endif
extern int GEX_INSTALL_I_BUILD_SYMBOL;
static int *gex_install_i_build_check(void) __attribute__((__used__));
static int *gex_install_i_build_check(void) {
  return &GEX_INSTALL_I_BUILD_SYMBOL;
}
#ifdef __cplusplus
}
#endif

#endif /* GEX_BUILD_KIND_H */
