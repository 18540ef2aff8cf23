// The link-time check of the threading model: every file that includes
// gasnet_tools.h references gex_tools_i_linkcheck_<MODEL> (SEQ, PAR or
// LITE), and each tools library defines the models it serves. A
// GASNETT_THREAD_SAFE client linked with :gasnet_tools_seq therefore fails to
// link, naming the model, instead of running with the wrong library (as
// GASNet's libgasnet_tools-seq/-par do). Compiled once per library target
// with GEX_TOOLS_LINK_SEQ and/or GEX_TOOLS_LINK_PAR.
extern "C" {

#if defined(GEX_TOOLS_LINK_SEQ)
int gex_tools_i_linkcheck_SEQ = 1;
#endif
#if defined(GEX_TOOLS_LINK_PAR)
int gex_tools_i_linkcheck_PAR = 1;
#endif
// A GASNETT_LITE_MODE client uses only timers and fences: any library.
int gex_tools_i_linkcheck_LITE = 1;

}  // extern "C"
