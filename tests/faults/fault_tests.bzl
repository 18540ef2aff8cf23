"""One conduit's fault-injection suite (issue 38, item 3), declared by a macro.

fault_client.c and fault_injection_test.cc are written against the public
headers and the launcher's command line only, so every conduit runs the
same driver: tests/faults/BUILD.bazel calls `fault_tests(...)` once per
conduit and environment, which declares

  fault_client_<conduit>                  the client (SEQ), once per conduit
  fault_injection_test_<conduit><suffix>  the driver against `launcher`
                                          (default //tools:gasnetrun_<conduit>)

The driver reads its instance from FAULTS_* variables set here (see the
driver's file comment).
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")
load("//:copts.bzl", "GEX_CXX_COPTS")

# As tests/exit: client code with no warning at all.
STRICT_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wunused-parameter",
    "-Wpedantic",
    "-Werror",
]

_DRIVER = "fault_injection_driver"

def fault_tests(
        conduit,
        client_deps,
        launcher = None,
        env = {},
        name_suffix = "",
        kinds = [],
        known_bugs = {},
        seed = 1,
        trials = 4,
        ranks = 2,
        msgs = 200,
        spawner = "fork",
        size = "medium",
        timeout = "moderate",
        tags = []):
    """Declares fault_client_<conduit> and fault_injection_test_<conduit><suffix>.

    Args:
      conduit: the conduit's name: names the client, the test and the
        default launcher.
      client_deps: what the client links against (the SEQ library).
      launcher: the launcher's label (takes `-n N -spawner=fork`).
      env: {name: value} set in every job.
      name_suffix: appended to the test's name.
      kinds: fault kinds drawn from (the driver's names); [] draws all.
      known_bugs: {glob over "kind@phase": why}: such draws are redrawn
        (counted as "avoided" in the table). Name the bug; remove the entry
        with its fix.
      seed: of the draws; trials: how many; ranks: per job; msgs: the
        client's sequenced Requests per peer.
      spawner: "fork", or "ssh" (tests/bootstrap/fake_ssh.sh, two host
        labels on this machine).
      size, timeout, tags: of the test.
    """
    if launcher == None:
        launcher = "//tools:gasnetrun_" + conduit

    # The driver is compiled once, however many instances.
    if not native.existing_rule(_DRIVER):
        cc_library(
            name = _DRIVER,
            testonly = True,
            srcs = ["fault_injection_test.cc"],
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
    if not native.existing_rule("fault_client_" + conduit):
        cc_binary(
            name = "fault_client_" + conduit,
            testonly = True,
            srcs = ["fault_client.c"],
            copts = STRICT_COPTS,
            deps = client_deps,
        )
    cc_test(
        name = "fault_injection_test_" + conduit + name_suffix,
        size = size,
        timeout = timeout,
        data = [
            ":fault_client_" + conduit,
            "//tests/bootstrap:fake_ssh.sh",
            launcher,
        ],
        env = {
            "FAULTS_CONDUIT": conduit,
            "FAULTS_ENV": "\n".join(["%s=%s" % (k, env[k]) for k in sorted(env.keys())]),
            "FAULTS_KINDS": ",".join(kinds),
            "FAULTS_KNOWN_BUGS": "\n".join(["%s=%s" % (k, known_bugs[k]) for k in sorted(known_bugs.keys())]),
            "FAULTS_LAUNCHER": "$(rootpath %s)" % launcher,
            "FAULTS_MSGS": str(msgs),
            "FAULTS_RANKS": str(ranks),
            "FAULTS_SEED": str(seed),
            "FAULTS_SPAWNER": spawner,
            "FAULTS_TRIALS": str(trials),
        },
        tags = tags,
        deps = [
            ":" + _DRIVER,
            "@com_google_googletest//:gtest_main",
        ],
    )

def netns_fault_tests(
        conduit,
        env = {},
        kinds = [],
        seed = 1,
        trials = 4,
        ranks = 3,
        msgs = 200,
        tags = []):
    """Declares netns_fault_test_<conduit>: the driver over namespace hosts.

    The driver (fault_injection_driver, with gtest_main) runs under
    netns_faults_test.sh, which makes three namespace hosts
    (tests/multihost/netns_hosts.sh) and runs the launcher in host 0 with
    the ssh spawner over netns_ssh.sh to hosts 1 and 2. Needs root (prints
    SKIPPED otherwise); outside the sandbox and alone, as
    tests/multihost. Call after fault_tests(conduit, ...), whose client it
    uses. Args as fault_tests'.
    """
    if not native.existing_rule(_DRIVER + "_bin"):
        cc_binary(
            name = _DRIVER + "_bin",
            testonly = True,
            deps = [
                ":" + _DRIVER,
                "@com_google_googletest//:gtest_main",
            ],
        )
    launcher = "//tools:gasnetrun_" + conduit
    native.sh_test(
        name = "netns_fault_test_" + conduit,
        size = "enormous",
        timeout = "eternal",
        srcs = ["netns_faults_test.sh"],
        args = [
            "$(location :%s_bin)" % _DRIVER,
            "$(location %s)" % launcher,
            "$(location :fault_client_%s)" % conduit,
            "$(location //tests/multihost:netns_ssh.sh)",
        ],
        data = [
            ":" + _DRIVER + "_bin",
            ":fault_client_" + conduit,
            "//tests/multihost:netns_hosts.sh",
            "//tests/multihost:netns_ssh.sh",
            launcher,
        ],
        env = {
            "FAULTS_CONDUIT": conduit,
            "FAULTS_ENV": "\n".join(["%s=%s" % (k, env[k]) for k in sorted(env.keys())]),
            "FAULTS_KINDS": ",".join(kinds),
            "FAULTS_LAUNCHER": "$(rootpath %s)" % launcher,
            "FAULTS_MSGS": str(msgs),
            "FAULTS_RANKS": str(ranks),
            "FAULTS_SEED": str(seed),
            "FAULTS_TRIALS": str(trials),
        },
        tags = ["exclusive", "no-sandbox"] + tags,
    )
