"""Compile flags every gex target carries for its own sources.

Each cc_library, cc_binary and cc_test in gex that compiles C++ sources
merges GEX_CXX_COPTS into its copts, so a consumer workspace (the README's
three WORKSPACE lines, no .bazelrc) builds gex with the flags gex needs,
whatever its own defaults. Targets with only C sources or only headers do
not take them (gcc warns about -std=c++20 on a C file).
"""

# gex is C++20 (std::string_view, std::span, concepts, ...); Bazel 4's
# default toolchain compiles C++ as C++0x.
GEX_CXX_COPTS = ["-std=c++20"]
