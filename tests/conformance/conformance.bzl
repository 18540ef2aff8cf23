"""gex_conformance_tests: the header conformance check, per conduit x mode x
language (tests/conformance/README.md)."""

load("@rules_cc//cc:defs.bzl", "cc_test")

CONDUITS = ["smp", "ofi", "ucx", "ibv"]
MODES = ["seq", "par"]

# language: (source suffix, standard, language-specific strictness)
LANGUAGES = {
    "c": ("c", "-std=c11", ["-Werror=incompatible-pointer-types"]),
    "cxx": ("cc", "-std=c++20", []),
}

COMMON_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wundef",
    "-Werror",
    "-Wno-unused-function",
    "-Wno-unused-variable",
    "-Wno-unused-but-set-variable",
    "-Wno-unused-parameter",
    "-Wno-unused-value",
    "-Wno-unused-label",
]

def gex_conformance_tests(name, conduits = CONDUITS, extra_copts = [], prefix = "conformance"):
    """One cc_test per conduit, mode and language, and a test_suite `name`.

    Args:
      name: the test_suite holding them all.
      conduits: which conduits (all four by default).
      extra_copts: added to every test (e.g. -DCONF_WITHOUT_PENDING).
      prefix: of the test names, <prefix>_<conduit>_<mode>_<lang>_test.
    """
    tests = []
    for conduit in conduits:
        for mode in MODES:
            for lang in LANGUAGES:
                suffix, std, strict = LANGUAGES[lang]
                test = "%s_%s_%s_%s_test" % (prefix, conduit, mode, lang)
                cc_test(
                    name = test,
                    size = "small",
                    srcs = ["conformance_check." + suffix],
                    copts = [std] + COMMON_COPTS + strict + extra_copts,
                    deps = [
                        ":conformance_check_inc",
                        "//conduit/%s:gasnet_%s_%s" % (conduit, conduit, mode),
                    ],
                )
                tests.append(":" + test)
    native.test_suite(name = name, tests = tests)
