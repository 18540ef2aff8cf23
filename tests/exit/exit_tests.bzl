"""One conduit's graceful-exit job tests (issue 7), declared by one macro.

The client (exit_client.c) and the driver (exit_job_test.cc) are written
against the public headers and the launcher's command line only, so every
conduit runs the same suite: tests/exit/BUILD.bazel calls
`exit_job_tests(conduit, client_deps)` once per conduit, which declares

  exit_client_<conduit>    the client, linked with `client_deps` (the
                           conduit's SEQ library)
  exit_client_par_<conduit>  the same client linked with `par_client_deps`
                           (the PAR library), for the threaded mode
  exit_job_test_<conduit>  the driver, run against tools/gasnetrun_<conduit>
                           and exit_client_<conduit> (EXIT_TEST_CONDUIT)
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")
load("//:copts.bzl", "GEX_CXX_COPTS")

# Client code is held to -Wall -Wextra -Wpedantic (unused parameters
# included) with no warning at all, headers and all (as tests/api's).
STRICT_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wunused-parameter",
    "-Wpedantic",
    "-Werror",
]

_DRIVER = "exit_job_test_driver"

def exit_job_tests(conduit, client_deps, par_client_deps, shard_count = 8):
    """Declares exit_client_<conduit> and exit_job_test_<conduit>.

    Args:
      conduit: the conduit's name ("smp"): names the launcher
        //tools:gasnetrun_<conduit> and the targets.
      client_deps: what the client links against, e.g.
        ["//conduit/smp:gasnet_smp_seq"].
      par_client_deps: the same for the PAR client, e.g.
        ["//conduit/smp:gasnet_smp_par"].
      shard_count: shards of the test; each runs about 100/shard_count jobs,
        each bounded by its exit timeout plus 60 s.
    """

    # The driver is compiled once, whatever the number of conduits.
    if not native.existing_rule(_DRIVER):
        cc_library(
            name = _DRIVER,
            testonly = True,
            srcs = ["exit_job_test.cc"],
            copts = GEX_CXX_COPTS,
            deps = [
                "//tests/testing:job_runner",
                "@com_google_absl//:str_format",
                "@com_google_absl//:strings",
                "@com_google_absl//:time",
                "@com_google_googletest//:gtest",
            ],
            alwayslink = True,
        )

    cc_binary(
        name = "exit_client_" + conduit,
        testonly = True,
        srcs = ["exit_client.c"],
        copts = STRICT_COPTS,
        deps = client_deps,
    )

    cc_binary(
        name = "exit_client_par_" + conduit,
        testonly = True,
        srcs = ["exit_client.c"],
        copts = STRICT_COPTS,
        linkopts = ["-pthread"],
        deps = par_client_deps,
    )

    # Real jobs of up to 8 ranks on a 2-core machine; a job that hangs is
    # killed after its exit timeout + 60 s, so a shard of hung jobs still
    # ends within the "long" timeout.
    cc_test(
        name = "exit_job_test_" + conduit,
        size = "large",
        timeout = "long",
        data = [
            ":exit_client_" + conduit,
            ":exit_client_par_" + conduit,
            "//tools:gasnetrun_" + conduit,
        ],
        env = {"EXIT_TEST_CONDUIT": conduit},
        shard_count = shard_count,
        deps = [
            ":" + _DRIVER,
            "@com_google_googletest//:gtest_main",
        ],
    )
