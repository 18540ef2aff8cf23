// The mode-specific entry points of a conduit's final library: the symbols
// gasnetex.h and gasnet.h name for the client's threading mode
// (_gex_Client_Init_SEQ, _gasnet_init_PAR, ...), so a client built for
// another mode does not link. //conduit:conduit.bzl compiles this file
// once per conduit and mode, with GASNET_SEQ or GASNET_PAR defined; the
// conduit comes from core::CreateConduit(), which the conduit's own
// library defines.
#include <utility>

#include "api/client_init.h"
#include "core/conduit.h"
#include "gasnet.h"

#if defined(GASNET_DEBUG)
#define GEX_I_DEBUG 1
#else
#define GEX_I_DEBUG 0
#endif

// The identification strings GASNet-EX embeds in every executable it links
// ("$GASNetConduitName: SMP $", ...): `ident` prints them, and launchers of
// client libraries read them to tell which conduit and configuration an
// executable was built for. This file is linked into every client (it
// defines gex_Client_Init), once per conduit and mode.
#define GEX_I_IDENT(name, text) GASNETT_IDENT(gex_i_ident_##name, text)
GEX_I_IDENT(ConduitName, "$GASNetConduitName: " GASNET_CONDUIT_NAME_STR " $");
GEX_I_IDENT(Config, "$GASNetConfig: (libgasnet.a) " GASNET_CONFIG_STRING " $");
GEX_I_IDENT(
    EXAPIVersion,
    "$GASNetEXAPIVersion: " _STRINGIFY(GEX_SPEC_VERSION_MAJOR) "." _STRINGIFY(
        GEX_SPEC_VERSION_MINOR) " $");
GEX_I_IDENT(APIVersion,
            "$GASNetAPIVersion: " _STRINGIFY(GASNET_SPEC_VERSION_MAJOR) " $");
GEX_I_IDENT(ReleaseVersion,
            "$GASNetReleaseVersion: " _STRINGIFY(GASNETI_RELEASE_VERSION) " $");
GEX_I_IDENT(ThreadModel,
            "$GASNetThreadModel: GASNET_" GASNETI_THREAD_MODE_STR " $");
GEX_I_IDENT(Segment, "$GASNetSegment: GASNET_SEGMENT_FAST $");
GEX_I_IDENT(CoreLibraryName,
            "$GASNetCoreLibraryName: " GASNET_CORE_NAME_STR " $");
GEX_I_IDENT(CoreLibraryVersion,
            "$GASNetCoreLibraryVersion: " GASNET_CORE_VERSION_STR " $");
GEX_I_IDENT(ExtendedLibraryName,
            "$GASNetExtendedLibraryName: " GASNET_EXTENDED_NAME_STR " $");
GEX_I_IDENT(ExtendedLibraryVersion,
            "$GASNetExtendedLibraryVersion: " GASNET_EXTENDED_VERSION_STR " $");
GEX_I_IDENT(CompilerID, "$GASNetCompilerID: " PLATFORM_COMPILER_IDSTR " $");
GEX_I_IDENT(SystemTuple, "$GASNetSystemTuple: " GASNETT_SYSTEM_TUPLE " $");
GEX_I_IDENT(PSHM, "$GASNetPSHM: 1 $");
GEX_I_IDENT(HiddenAMConcurrencyLevel,
            "$GASNetHiddenAMConcurrencyLevel: " _STRINGIFY(
                GASNET_HIDDEN_AM_CONCURRENCY_LEVEL) " $");
GEX_I_IDENT(DebugConfig, "$GASNetDebug: " _STRINGIFY(GEX_I_DEBUG) " $");
GEX_I_IDENT(Implementation, "$GASNetImplementation: gex $");
#if !defined(GASNET_CONDUIT_SMP)
// gasnetrun_<conduit> starts network conduits' jobs by ssh, by fork on one
// host, or through a PMIx launcher (-spawner=).
GEX_I_IDENT(SSHSpawner, "$GASNetSSHSpawner: 1 $");
GEX_I_IDENT(PMISpawner, "$GASNetPMISpawner: 1 $");
#endif
#if defined(GASNET_TRACE)
GEX_I_IDENT(Tracing, "$GASNetTracingEnabled: 1 $");
#endif
#if defined(GASNET_STATS)
GEX_I_IDENT(Statistics, "$GASNetStatisticsEnabled: 1 $");
#endif

namespace {

gexrt::api::InitOptions Options() {
  gexrt::api::InitOptions options;
  options.conduit = gexrt::core::CreateConduit();
#if defined(GASNET_PAR)
  options.thread_safe = true;
#else
  options.thread_safe = false;
#endif
  return options;
}

}  // namespace

// gex_Client_Init and gasnet_init are macros naming the mode's symbols.
extern "C" int gex_Client_Init(gex_Client_t* client_p, gex_EP_t* ep_p,
                               gex_TM_t* tm_p, const char* client_name,
                               int* argc, char*** argv, gex_Flags_t flags) {
  return gexrt::api::ClientInit(Options(), client_p, ep_p, tm_p, client_name,
                                argc, argv, flags);
}

extern "C" int gasnet_init(int* argc, char*** argv) {
  return gexrt::api::LegacyInit(Options(), argc, argv);
}
