"""The C API job tests over one conduit, declared by one macro.

The clients (*_client.c, *_client.cc) are written against the public
headers only and the drivers (*_job_test.cc) against a launcher's command
line (`<launcher> -n N <client> args...`) only, so every conduit runs the
same suites. tests/api/BUILD.bazel calls `api_job_tests` once per conduit
and environment (an "instance"), which declares

  <client><client_suffix>     each client, linked with `seq_lib` or
                              `par_lib` (once per client_suffix, however
                              many instances share it)
  <suite>_job_test<name_suffix>  each suite's driver, run against
                              `launcher` and those clients, with `env`

for the suites am, barrier, bad_input, legacy, par, rma, ratomic, vis,
coll, segment, spec and cpp. The
drivers are compiled once (as <suite>_job_test_driver), whatever the number
of instances.

The driver learns its instance from its test environment (set here):

  API_TEST_CONDUIT        the conduit's name, for messages
  API_TEST_LAUNCHER       the launcher's runfiles path
  API_TEST_CLIENT_SUFFIX  appended to "tests/api/<client>"
  API_TEST_ENV            "NAME=value" entries for every job, one per line
                          (newline-separated: values such as
                          FI_PROVIDER=tcp;ofi_rxm hold ';' and ',').
                          GASNET_SUPERNODE_MAXSIZE here also tells the
                          drivers the job's layout: a case that needs
                          every rank in one supernode (PSHM-specific
                          counts, a client that needs every segment
                          cross-mapped) reports GTEST_SKIP() with the
                          reason when a job of it spans several.

Example (a network conduit, the full suites on one provider, a subset on
another):

    load(":api_tests.bzl", "API_QUICK_CASES", "api_job_tests")

    api_job_tests(
        conduit = "ofi",
        seq_lib = "//conduit/ofi:gasnet_ofi_seq",
        par_lib = "//conduit/ofi:gasnet_ofi_par",
        launcher = "//tools:gasnetrun_ofi",
        name_suffix = "_ofi_tcp",
        env = {
            "FI_PROVIDER": "tcp;ofi_rxm",
            "FI_TCP_IFACE": "lo",
            "GASNET_SUPERNODE_MAXSIZE": "2",
        },
    )

    api_job_tests(
        conduit = "ofi",
        seq_lib = "//conduit/ofi:gasnet_ofi_seq",
        par_lib = "//conduit/ofi:gasnet_ofi_par",
        launcher = "//tools:gasnetrun_ofi",
        name_suffix = "_ofi_sockets",
        env = {
            "FI_PROVIDER": "sockets",
            "FI_SOCKETS_IFACE": "lo",
            "GASNET_SUPERNODE_MAXSIZE": "1",
        },
        cases = API_QUICK_CASES,
    )
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")
load("//:copts.bzl", "GEX_CXX_COPTS")

# Client code is held to -Wall -Wextra -Wpedantic (unused parameters
# included) with no warning at all, headers and all.
STRICT_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wunused-parameter",
    "-Wpedantic",
    "-Werror",
]

# The clients: source, mode (which library), extra deps.
_CLIENTS = {
    # Active Messages (C11, SEQ): modes args, sizes, npam*, immediate (see
    # its header comment).
    "am_client": struct(src = "am_client.c", par = False, deps = []),
    # Barriers (C11, SEQ): modes legacy, mismatch, nb, nb-overlap.
    "barrier_client": struct(src = "barrier_client.c", par = False, deps = []),
    # One deliberate misuse of the AM API per mode (C11, SEQ).
    "bad_input_client": struct(
        src = "bad_input_client.c",
        par = False,
        deps = [],
    ),
    # gasnet.h (GASNet-1) (C11, SEQ); also the C compile check of all three
    # public headers.
    "legacy_client": struct(src = "legacy_client.c", par = False, deps = []),
    # The GASNet-1 and spec-0.19 names of gasnetex.h, from a client that
    # includes nothing else (C11, SEQ): modes names, unnamed, early-long.
    "legacy_gex_client": struct(
        src = "legacy_gex_client.c",
        par = False,
        deps = [],
    ),
    # Multi-threaded AMs (C++, PAR); also the C++ compile check of all three
    # public headers.
    "par_client": struct(src = "par_client.cc", par = True, deps = []),
    # RMA (C11, SEQ): modes forms, events, nbi, values and one misuse per
    # bad-input mode (see its header comment).
    "rma_client": struct(src = "rma_client.c", par = False, deps = []),
    # Multi-threaded RMA (C++, PAR).
    "rma_par_client": struct(src = "rma_par_client.cc", par = True, deps = []),
    # Remote atomics (C11, SEQ): modes ops, sum, cas and one misuse per
    # bad-input mode (see its header comment).
    "ratomic_client": struct(src = "ratomic_client.c", par = False, deps = []),
    # Multi-threaded remote atomics (C++, PAR).
    "ratomic_par_client": struct(
        src = "ratomic_par_client.cc",
        par = True,
        deps = [],
    ),
    # VIS (C11, SEQ): modes shapes, peer and one misuse per bad-input mode
    # (see its header comment).
    "vis_client": struct(src = "vis_client.c", par = False, deps = []),
    # Multi-threaded VIS (C++, PAR).
    "vis_par_client": struct(src = "vis_par_client.cc", par = True, deps = []),
    # Segments and endpoints beyond gex_Segment_Attach (C11, SEQ): modes
    # primordial, endpoints and one misuse per bad-input mode (see its
    # header comment).
    "segment_client": struct(src = "segment_client.c", par = False, deps = []),
    # Collectives (C11, SEQ): modes bcast, reduce, user, nc, inplace,
    # overlap, early, zero, and one misuse per mode (see its header).
    "coll_client": struct(src = "coll_client.c", par = False, deps = []),
    # Teams (C11, SEQ): modes split, coll, am, pair, create, legacy
    # (gasnet_coll.h) and one misuse per bad-input mode (see its header).
    "team_client": struct(src = "team_client.c", par = False, deps = []),
    # Clauses of the specification the other suites do not reach (C11,
    # <gasnet.h> only), SEQ and PAR builds of one source (see its header).
    "spec_client": struct(src = "spec_client.c", par = False, deps = []),
    "spec_par_client": struct(src = "spec_client.c", par = True, deps = []),
    # The C++ API (<gex/gex.hpp>, SEQ): modes forms, events, nbi, values and
    # am (see its header comment).
    "cpp_client": struct(
        src = "cpp_client.cc",
        par = False,
        deps = ["//api/cpp:gex_cpp"],
    ),
    # The multi-threaded C++ API client (PAR).
    "cpp_par_client": struct(
        src = "cpp_par_client.cc",
        par = True,
        deps = ["//api/cpp:gex_cpp"],
    ),
}

_GTEST = "@com_google_googletest//:gtest"
_GMOCK = "@com_google_googletest//:gmock"
_STR_FORMAT = "@com_google_absl//:str_format"
_STRINGS = "@com_google_absl//:strings"
_JOB_RUNNER = "//tests/testing:job_runner"

# The suites: the clients each runs, its driver's deps, and its test's
# size, timeout and shards (each suite runs real jobs of up to 8 ranks on a
# 2-core machine).
_SUITES = {
    "am": struct(
        clients = ["am_client"],
        deps = [_STR_FORMAT],
        timeout = "short",
        shard_count = 0,
    ),
    # Two shards: the wait-flags mode's 20 jobs took the single shard past
    # the short timeout on a loaded machine.
    "barrier": struct(
        clients = ["barrier_client"],
        deps = [_STR_FORMAT],
        timeout = "short",
        shard_count = 2,
    ),
    "bad_input": struct(
        clients = ["bad_input_client"],
        deps = [],
        timeout = "short",
        shard_count = 0,
    ),
    "legacy": struct(
        clients = ["legacy_client", "legacy_gex_client"],
        deps = [_STR_FORMAT, _GMOCK],
        timeout = "short",
        shard_count = 0,
    ),
    # Also clean under `bazel test --config=tsan //tests/api:par_job_test`.
    "par": struct(
        clients = ["par_client"],
        deps = [":tsan_reports", _JOB_RUNNER, _STR_FORMAT, _STRINGS, _GMOCK],
        timeout = "short",
        shard_count = 0,
    ),
    # RMA jobs at 1-8 ranks, direct and GEX_RMA_FORCE_AM=1; PAR jobs (also
    # clean under `bazel test --config=tsan //tests/api:rma_job_test`);
    # misuse. Five shards: with the leaf-array mode a shard of four came
    # within a second of the short timeout on a loaded machine.
    "rma": struct(
        clients = ["rma_client", "rma_par_client"],
        deps = [":tsan_reports", _JOB_RUNNER, _STR_FORMAT, _STRINGS, _GMOCK],
        timeout = "short",
        shard_count = 5,
    ),
    # Remote atomics at 1, 2, 3, 4 and 8 ranks, direct and
    # GEX_RMA_FORCE_AM=1: every opcode x type x form, exact concurrent sums
    # (ranks, and threads in PAR), CAS contention; misuse naming the call.
    "ratomic": struct(
        clients = ["ratomic_client", "ratomic_par_client"],
        deps = [":tsan_reports", _JOB_RUNNER, _STR_FORMAT],
        timeout = "short",
        shard_count = 4,
    ),
    # VIS jobs at 1, 2, 3, 4 and 8 ranks, direct and GEX_RMA_FORCE_AM=1:
    # every shape, Put and Get, every form against a reference; peer
    # completion; GEX_FLAG_IMMEDIATE; PAR jobs (threads with their own NBI
    # counters and peer completion); misuse naming the call.
    "vis": struct(
        clients = ["vis_client", "vis_par_client"],
        deps = [":tsan_reports", _JOB_RUNNER, _STR_FORMAT],
        timeout = "short",
        shard_count = 4,
    ),
    # gex_Segment_Create/Bind/Publish/QueryBound/Destroy, gex_EP_Create,
    # gex_TM_TranslateRankToEP, gex_System_QueryProgressThreads at 1, 2, 3,
    # 4 and 8 ranks, direct and GEX_RMA_FORCE_AM=1; misuse naming the call.
    "segment": struct(
        clients = ["segment_client"],
        deps = [_STR_FORMAT],
        timeout = "short",
        shard_count = 2,
    ),
    # Collectives jobs at 1, 2, 3, 4 and 8 ranks; misuse naming the call.
    "coll": struct(
        clients = ["coll_client"],
        deps = [":tsan_reports", _STR_FORMAT],
        timeout = "short",
        shard_count = 4,
    ),
    # Teams jobs at 1, 2, 3, 4 and 8 ranks (sub-teams, pairs,
    # gasnet_coll.h); misuse naming the call. Five shards since the
    # split-null and legacy-sizes/-allsync modes.
    "team": struct(
        clients = ["team_client"],
        deps = [_STR_FORMAT],
        timeout = "short",
        shard_count = 5,
    ),
    # The specification's clauses (spec_client.c) at 1, 2, 3 and 4 ranks,
    # SEQ and PAR.
    "spec": struct(
        clients = ["spec_client", "spec_par_client"],
        deps = [_STR_FORMAT],
        timeout = "short",
        shard_count = 0,
    ),
    # C++ API jobs at 1-8 ranks, direct and GEX_RMA_FORCE_AM=1, and PAR jobs
    # (also clean under `bazel test --config=tsan //tests/api:cpp_job_test`).
    "cpp": struct(
        clients = ["cpp_client", "cpp_par_client"],
        deps = [":tsan_reports", _JOB_RUNNER, _STR_FORMAT, _STRINGS, _GMOCK],
        timeout = "moderate",
        shard_count = 4,
    ),
}

SUITES = sorted(_SUITES.keys())

# A subset of every suite for instances that only need to show that a
# conduit (or a provider of it) carries each kind of traffic: every mode at
# 2 and 4 ranks (a PSHM peer and a conduit peer each with
# GASNET_SUPERNODE_MAXSIZE=2), the misuse checks once, no 1- or 8-rank
# jobs. Values are GoogleTest filters (`cases`).
API_QUICK_CASES = {
    "am": "*n2:*n4:*_n2:*_n4",
    "barrier": "*_n2_supernode:*_n4_supernode:*_n4_groups_of_1",
    "bad_input": "*",
    "legacy": "*n2:*n4:LegacyExitTest.*",
    "par": "*n2:*n4",
    "rma": "*_n2_*:*_n4_*:*n2_*:*n4_*:RmaBadInputJobTest.*",
    "coll": "*_n2:*_n4:*CollBadInputJobTest.*bad_bcast_root",
    "cpp": "*_n2_*:*_n4_*:*n2_*:*n4_*",
    "team": "*_n2:*_n4:*TeamBadInputJobTest.*destroyed_team",
    "ratomic": "*_n2_*:*_n4_*:*n2_*:*n4_*:*not_in_mask_direct:*Offload*",
    "vis": "*n2_*:*n4_*:*null_list_direct",
    "segment": "*_n2_*:*_n4_*:*bind_twice:*long_unregistered",
    "spec": "*n2*:*n4*",
}

def _driver(suite):
    return "%s_job_test_driver" % suite

def api_job_tests(
        conduit,
        seq_lib,
        par_lib,
        launcher,
        env = {},
        name_suffix = None,
        client_suffix = None,
        suites = SUITES,
        cases = {},
        shard_count = {},
        timeout = None,
        tags = [],
        ci_suites = None):
    """Declares the clients and the job tests of one conduit instance.

    Args:
      conduit: the conduit's name ("smp", "socket", "ofi"), for messages and
        the default suffixes.
      seq_lib: the conduit's SEQ library, e.g. "//conduit/smp:gasnet_smp_seq".
      par_lib: its PAR library, e.g. "//conduit/smp:gasnet_smp_par".
      launcher: the label of its launcher, which must take
        `-n N <program> args...`, e.g. "//tools:gasnetrun_smp".
      env: {name: value} set in every job of this instance, after the
        drivers clear GASNET_SUPERNODE_MAXSIZE, GASNET_PSHMNET_* and the
        other layout variables of the test's own environment, and before
        each case's own (a case's value wins). GASNET_SUPERNODE_MAXSIZE
        here is also how the drivers know the layout (see above).
      name_suffix: appended to each test's name ("<suite>_job_test");
        default "_" + conduit. Instances of one conduit with different env
        need different suffixes.
      client_suffix: appended to each client's name; default "_" + conduit.
        Instances of one conduit share their clients.
      suites: which suites to declare (default all of SUITES).
      cases: {suite: GoogleTest filter} to run a subset of a suite (passed
        as --gtest_filter; API_QUICK_CASES is one such subset). A suite
        missing here runs in full. (`bazel test --test_filter=...` narrows
        further by hand.)
      shard_count: {suite: shards}, overriding the suite's default.
      timeout: every test's timeout, overriding the suites' defaults
        ("short" for most, "moderate" for cpp).
      tags: of every test (e.g. ["manual"] for an instance CI runs apart).
      ci_suites: the suites CI runs; the others' tests are also tagged
        "extended" (scripts/test.sh leaves them out; `bazel test
        --test_tag_filters=extended` runs them). Default: all.
    """
    if name_suffix == None:
        name_suffix = "_" + conduit
    if client_suffix == None:
        client_suffix = "_" + conduit

    # Clients, once per client_suffix.
    for client in sorted(_CLIENTS.keys()):
        c = _CLIENTS[client]
        name = client + client_suffix
        if native.existing_rule(name):
            continue
        cpp = c.src.endswith(".cc")
        cc_binary(
            name = name,
            testonly = True,
            srcs = [c.src],
            copts = (GEX_CXX_COPTS if cpp else []) + STRICT_COPTS,
            deps = [":client_support", par_lib if c.par else seq_lib] + c.deps,
        )

    # Drivers, once.
    for suite in suites:
        s = _SUITES[suite]
        if native.existing_rule(_driver(suite)):
            continue
        cc_library(
            name = _driver(suite),
            testonly = True,
            srcs = ["%s_job_test.cc" % suite],
            copts = GEX_CXX_COPTS,
            deps = [":api_job", _GTEST] + s.deps,
            alwayslink = True,
        )

    test_env = {
        "API_TEST_CONDUIT": conduit,
        "API_TEST_LAUNCHER": "$(rootpath %s)" % launcher,
        "API_TEST_CLIENT_SUFFIX": client_suffix,
        "API_TEST_ENV": "\n".join(["%s=%s" % (k, env[k]) for k in sorted(env.keys())]),
    }
    for suite in suites:
        s = _SUITES[suite]
        shards = shard_count.get(suite, s.shard_count)
        cc_test(
            name = "%s_job_test%s" % (suite, name_suffix),
            size = "medium",
            timeout = timeout if timeout else s.timeout,
            args = ["--gtest_filter=" + cases[suite]] if suite in cases else [],
            data = [":" + c + client_suffix for c in s.clients] + [launcher],
            env = test_env,
            shard_count = shards if shards > 0 else None,
            tags = tags + (
                ["extended"] if ci_suites != None and suite not in ci_suites else []
            ),
            deps = [
                ":" + _driver(suite),
                "@com_google_googletest//:gtest_main",
            ],
        )
