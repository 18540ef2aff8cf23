"""gex_conduit: a conduit's final libraries from one BUILD stanza.

    load("//conduit:conduit.bzl", "gex_conduit")
    gex_conduit(name = "smp", conduit = ":smp_conduit")

makes :gasnet_smp_seq and :gasnet_smp_par, what clients depend on: the
API (//api), the tools header, the conduit's library (which defines
core::CreateConduit()), and the mode's entry points (api/mode_entry.cc
compiled with GASNET_SEQ or GASNET_PAR). Clients of a target see
GASNET_<MODE>, GASNET_CONDUIT_<NAME>, GASNET_CONDUIT_NAME and the
conduit's name strings (gasnetex.h makes them from these defines).
"""

load("@rules_cc//cc:defs.bzl", "cc_library")
load("//:copts.bzl", "GEX_CXX_COPTS")

MODES = ["seq", "par"]

def gex_conduit(name, conduit, visibility = ["//visibility:public"], **kwargs):
    """The final libraries gasnet_<name>_seq and gasnet_<name>_par.

    Args:
      name: the conduit's name, lower case ("smp").
      conduit: the label of the library that defines core::CreateConduit().
      visibility: of the final libraries (public by default).
      **kwargs: passed to both cc_library rules (tags, testonly, ...).
    """
    upper = name.upper()
    for mode in MODES:
        cc_library(
            name = "gasnet_%s_%s" % (name, mode),
            srcs = ["//api:mode_entry.cc"],
            copts = GEX_CXX_COPTS,
            defines = [
                "GASNET_%s=1" % mode.upper(),
                "GASNET_CONDUIT_%s=1" % upper,
                "GASNET_CONDUIT_NAME=%s" % upper,
                "_GEX_CONDUIT_NAME_LC=%s" % name,
            ],
            deps = [
                conduit,
                "//api",
                "//api:headers",
                "//api/tools:gasnet_tools",
                "//core:conduit",
            ],
            # The mode's entry points must be linked even though no object
            # of the client names this library's other symbols first.
            alwayslink = True,
            visibility = visibility,
            **kwargs
        )
