"""Declares every external repository the gex workspace needs.

A consumer's WORKSPACE needs only:

    local_repository(name = "gex", path = "/path/to/gex")
    load("@gex//:repositories.bzl", "gex_dependencies")
    gex_dependencies()

Everything is local: the system libraries come from Debian packages through
`new_local_repository` wrappers (BUILD files in //third_party), and the three
repositories Bazel 4 would otherwise download (`rules_cc`, `rules_java`,
`remote_coverage_tools`) are written as small stubs by `_offline_stub_repo`.
"""

# Where Debian installs the PMIx 4 development files (the headers are not on
# the default include path).
_PMIX_PREFIX = "/usr/lib/x86_64-linux-gnu/pmix2"

# Stub file contents, keyed by repository name then relative path. They only
# forward to the native rules, which is all Bazel 4.2 needs from them offline.
_STUBS = {
    "rules_cc": {
        "BUILD.bazel": "",
        "cc/BUILD.bazel": "",
        "cc/defs.bzl": "\n".join([
            '"""Offline stand-in for @rules_cc: forwards to the native rules."""',
            "",
            "def cc_binary(**kwargs):",
            "    native.cc_binary(**kwargs)",
            "",
            "def cc_library(**kwargs):",
            "    native.cc_library(**kwargs)",
            "",
            "def cc_test(**kwargs):",
            "    native.cc_test(**kwargs)",
            "",
            "def cc_import(**kwargs):",
            "    native.cc_import(**kwargs)",
            "",
            "def cc_proto_library(**kwargs):",
            "    native.cc_proto_library(**kwargs)",
            "",
            "def fdo_prefetch_hints(**kwargs):",
            "    native.fdo_prefetch_hints(**kwargs)",
            "",
            "def fdo_profile(**kwargs):",
            "    native.fdo_profile(**kwargs)",
            "",
            "def objc_library(**kwargs):",
            "    native.objc_library(**kwargs)",
            "",
            "def objc_import(**kwargs):",
            "    native.objc_import(**kwargs)",
            "",
            "def cc_toolchain(**kwargs):",
            "    native.cc_toolchain(**kwargs)",
            "",
            "def cc_toolchain_suite(**kwargs):",
            "    native.cc_toolchain_suite(**kwargs)",
            "",
        ]),
    },
    "rules_java": {
        "BUILD.bazel": "",
        "java/BUILD.bazel": "",
        "java/defs.bzl": "\n".join([
            '"""Offline stand-in for @rules_java: forwards to the native rules."""',
            "",
            "def java_binary(**kwargs):",
            "    native.java_binary(**kwargs)",
            "",
            "def java_library(**kwargs):",
            "    native.java_library(**kwargs)",
            "",
            "def java_import(**kwargs):",
            "    native.java_import(**kwargs)",
            "",
            "def java_test(**kwargs):",
            "    native.java_test(**kwargs)",
            "",
            "def java_plugin(**kwargs):",
            "    native.java_plugin(**kwargs)",
            "",
            "def java_runtime(**kwargs):",
            "    native.java_runtime(**kwargs)",
            "",
            "def java_toolchain(**kwargs):",
            "    native.java_toolchain(**kwargs)",
            "",
            "def java_package_configuration(**kwargs):",
            "    native.java_package_configuration(**kwargs)",
            "",
        ]),
    },
    "remote_coverage_tools": {
        "BUILD.bazel": "\n".join([
            "# Offline stand-in: coverage is not collected in this workspace.",
            'package(default_visibility = ["//visibility:public"])',
            "",
            'filegroup(name = "coverage_report_generator", srcs = [])',
            "",
            'filegroup(name = "lcov_merger", srcs = [])',
            "",
        ]),
    },
}

def _offline_stub_repo_impl(ctx):
    for path, content in _STUBS[ctx.attr.stub].items():
        ctx.file(path, content, executable = False)
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)

_offline_stub_repo = repository_rule(
    implementation = _offline_stub_repo_impl,
    attrs = {"stub": attr.string(mandatory = True)},
    doc = "Writes one of the offline stub repositories in _STUBS.",
)

def _system_library(name, path, build_file):
    # str(Label(...)) resolves against this file's repository, so the wrapper
    # is found both here (//third_party) and from a consumer (@gex//...).
    if not native.existing_rule(name):
        native.new_local_repository(
            name = name,
            path = path,
            build_file = str(Label("//third_party:" + build_file)),
        )

def gex_dependencies():
    """Declares every external repository gex needs, stubs included."""
    for stub in ("rules_cc", "rules_java", "remote_coverage_tools"):
        if not native.existing_rule(stub):
            _offline_stub_repo(name = stub, stub = stub)

    _system_library("com_google_absl", "/usr", "abseil.BUILD")
    _system_library("com_google_googletest", "/usr", "googletest.BUILD")
    _system_library("com_google_benchmark", "/usr", "benchmark.BUILD")
    _system_library("libfabric", "/usr", "libfabric.BUILD")
    _system_library("ucx", "/usr", "ucx.BUILD")
    _system_library("libibverbs", "/usr", "libibverbs.BUILD")
    _system_library("pmix", _PMIX_PREFIX, "pmix.BUILD")
