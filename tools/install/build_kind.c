/* The build kind's link-check symbol (see include/gex_build_kind.h): an
 * installed library defines the one of the kind it was compiled as; the
 * debug build (--config=dbg) defines GEX_DEBUG=1 for every file. */
#if defined(GEX_DEBUG) && GEX_DEBUG
int gex_install_i_build_DEBUG = 1;
#else
int gex_install_i_build_OPT = 1;
#endif
