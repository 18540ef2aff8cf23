"""One conduit's graceful-exit job tests (issue 7), declared by one macro.

The client (exit_client.c) and the driver (exit_job_test.cc) are written
against the public headers and the launcher's command line only, so every
conduit runs the same suite: tests/exit/BUILD.bazel calls
`exit_job_tests(conduit, client_deps, par_client_deps, ...)` once per
conduit and environment (an "instance"), which declares

  exit_client_<conduit>    the client, linked with `client_deps` (the
                           conduit's SEQ library), once per conduit
  exit_client_par_<conduit>  the same client linked with `par_client_deps`
                           (the PAR library), for the threaded mode
  exit_job_test_<conduit><name_suffix>  the driver, run against `launcher`
                           (default //tools:gasnetrun_<conduit>) and
                           exit_client_<conduit>, with `env`

The driver learns its instance from its test environment (set here):
EXIT_TEST_CONDUIT (the clients' suffix), EXIT_TEST_LAUNCHER (the
launcher's runfiles path) and EXIT_TEST_ENV ("NAME=value" for every job,
one per line: values such as FI_PROVIDER=tcp;ofi_rxm hold ';'). A
GASNET_SUPERNODE_MAXSIZE there also tells the driver the job's layout: a
case whose counts only hold with the whole job in one supernode skips
(GTEST_SKIP, naming why) when a job spans several.

Example (a network conduit on two providers, the second a subset):

    exit_job_tests(
        conduit = "ofi",
        client_deps = ["//conduit/ofi:gasnet_ofi_seq"],
        par_client_deps = ["//conduit/ofi:gasnet_ofi_par"],
        name_suffix = "_tcp",
        env = {"FI_PROVIDER": "tcp;ofi_rxm", "FI_TCP_IFACE": "lo",
               "GASNET_SUPERNODE_MAXSIZE": "2"},
    )
    exit_job_tests(
        conduit = "ofi",
        client_deps = ["//conduit/ofi:gasnet_ofi_seq"],
        par_client_deps = ["//conduit/ofi:gasnet_ofi_par"],
        name_suffix = "_sockets",
        env = {"FI_PROVIDER": "sockets", "FI_SOCKETS_IFACE": "lo",
               "GASNET_SUPERNODE_MAXSIZE": "1"},
        cases = EXIT_QUICK_CASES,
        shard_count = 2,
    )
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

# A subset for instances that only need to show that a conduit (or a
# provider of it) ends jobs cleanly: every exit path at 4 ranks (a PSHM
# peer and a conduit peer each with GASNET_SUPERNODE_MAXSIZE=2), the PAR
# exit, and the traffic counts at 4 ranks. A GoogleTest filter (`cases`).
EXIT_QUICK_CASES = "*_4ranks:ParExitTest.*"

def exit_job_tests(
        conduit,
        client_deps,
        par_client_deps,
        launcher = None,
        env = {},
        name_suffix = "",
        cases = None,
        known_bugs = {},
        shard_count = 8,
        tags = []):
    """Declares exit_client_<conduit> and exit_job_test_<conduit><suffix>.

    Args:
      conduit: the conduit's name ("smp"): names the clients, the test and
        the default launcher.
      client_deps: what the client links against, e.g.
        ["//conduit/smp:gasnet_smp_seq"].
      par_client_deps: the same for the PAR client, e.g.
        ["//conduit/smp:gasnet_smp_par"].
      launcher: the label of the launcher, which must take
        `-n N -spawner=fork <program> args...`; default
        //tools:gasnetrun_<conduit>.
      env: {name: value} set in every job, after the driver unsets every
        inherited GASNET_* and GEX_* variable and before its own
        GASNET_TMPDIR, TMPDIR, GASNET_EXITTIMEOUT and each case's variables
        (which win).
      name_suffix: appended to the test's name; instances of one conduit
        with different env need different ones (they share the clients).
      cases: a GoogleTest filter to run a subset (passed as --gtest_filter;
        EXIT_QUICK_CASES is one); None runs every case.
      known_bugs: {glob over "Suite.Test" names: why} for cases this
        instance cannot pass because of a bug outside tests/ (name the file
        and the symptom): they report GTEST_SKIP() with the reason, so they
        show in every run as skipped, not passed. Remove an entry with its
        fix.
      shard_count: shards of the test; each runs about 100/shard_count jobs,
        each bounded by its exit timeout plus 60 s.
      tags: of the test.
    """
    if launcher == None:
        launcher = "//tools:gasnetrun_" + conduit

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

    # The clients are built once per conduit, however many instances.
    if not native.existing_rule("exit_client_" + conduit):
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
        name = "exit_job_test_" + conduit + name_suffix,
        size = "large",
        timeout = "long",
        args = ["--gtest_filter=" + cases] if cases else [],
        data = [
            ":exit_client_" + conduit,
            ":exit_client_par_" + conduit,
            "//tests/bootstrap:fake_ssh.sh",
            launcher,
        ],
        env = {
            "EXIT_TEST_CONDUIT": conduit,
            "EXIT_TEST_ENV": "\n".join(["%s=%s" % (k, env[k]) for k in sorted(env.keys())]),
            "EXIT_TEST_KNOWN_BUGS": "\n".join(["%s=%s" % (k, known_bugs[k]) for k in sorted(known_bugs.keys())]),
            "EXIT_TEST_LAUNCHER": "$(rootpath %s)" % launcher,
        },
        shard_count = shard_count,
        tags = tags,
        deps = [
            ":" + _DRIVER,
            "@com_google_googletest//:gtest_main",
        ],
    )
