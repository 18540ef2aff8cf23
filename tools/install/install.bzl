"""gex_install_library: one conduit/mode's pieces for an install tree.

    gex_install_library(
        name = "smp_seq",
        deps = ["//conduit/smp:gasnet_smp_seq", ":build_kind"],
        header_deps = ["//api/cpp:gex_cpp"],
    )

writes, from what Bazel itself knows about the targets (nothing kept by
hand):
  <name>.a        every object of every static library in the deps'
                  transitive link closure, merged into one archive
                  (`ar -M`, which keeps members with the same basename);
  <name>.link     the link options the deps carry (system libraries, -L,
                  -Wl,-rpath, -pthread ...), one per line, first use kept,
                  in Bazel's link order;
  <name>.defines  the preprocessor defines the deps give their clients
                  (GASNET_SEQ=1, GASNET_CONDUIT_SMP=1, ...), one per line;
  <name>.headers  the public headers, as "<include path> <runfiles path>"
                  lines: every header of the closure that Bazel exposes
                  through an include-prefix directory (strip_include_prefix),
                  so a header added to such a target is installed with no
                  change here. The header files themselves are in the
                  rule's runfiles.
  <name>.cc       the C compiler of Bazel's C++ toolchain (one line).
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

_VIRTUAL = "/_virtual_includes/"

def _impl(ctx):
    archives = []
    seen_archives = {}
    flags = []
    seen_flags = {}
    for dep in ctx.attr.deps:
        for linker_input in dep[CcInfo].linking_context.linker_inputs.to_list():
            for flag in linker_input.user_link_flags:
                if flag not in seen_flags:
                    seen_flags[flag] = True
                    flags.append(flag)
            for lib in linker_input.libraries:
                archive = lib.pic_static_library or lib.static_library
                if archive == None:
                    if lib.dynamic_library != None:
                        fail(("%s: %s has only a shared library; the " +
                              "merged archive needs static ones") %
                             (ctx.label, lib.dynamic_library.path))
                    continue
                if archive.path not in seen_archives:
                    seen_archives[archive.path] = True
                    archives.append(archive)

    defines = []
    headers = {}
    header_files = []
    for dep in ctx.attr.deps + ctx.attr.header_deps:
        context = dep[CcInfo].compilation_context
        for define in context.defines.to_list():
            if define not in defines:
                defines.append(define)
        for header in context.headers.to_list():
            if _VIRTUAL not in header.short_path:
                continue

            # <pkg>/_virtual_includes/<target>/<include path>
            include_path = header.short_path.split(_VIRTUAL, 1)[1].split("/", 1)[1]
            if include_path in headers:
                continue
            headers[include_path] = header.short_path
            header_files.append(header)

    out_archive = ctx.actions.declare_file(ctx.label.name + ".a")
    script = ctx.actions.declare_file(ctx.label.name + ".mri")
    mri = ["CREATE " + out_archive.path]
    mri += ["ADDLIB " + archive.path for archive in archives]
    mri += ["SAVE", "END", ""]
    ctx.actions.write(script, "\n".join(mri))
    ctx.actions.run_shell(
        inputs = archives + [script],
        outputs = [out_archive],
        command = "ar -M < '%s' && ranlib '%s'" % (script.path, out_archive.path),
        mnemonic = "GexMergeArchives",
        progress_message = "Merging %d archives into %s" %
                           (len(archives), out_archive.short_path),
        use_default_shell_env = True,
    )

    defs = ctx.actions.declare_file(ctx.label.name + ".defines")
    ctx.actions.write(defs, "".join([d + "\n" for d in defines]))
    hdrs = ctx.actions.declare_file(ctx.label.name + ".headers")
    ctx.actions.write(hdrs, "".join([
        "%s %s\n" % (path, headers[path])
        for path in sorted(headers.keys())
    ]))
    cc_toolchain = find_cpp_toolchain(ctx)
    cc = ctx.actions.declare_file(ctx.label.name + ".cc")
    ctx.actions.write(cc, cc_toolchain.compiler_executable + "\n")

    # The libraries Bazel's toolchain adds to every C++ link (-lstdc++ -lm
    # with the default Linux toolchain): a client linking with cc needs
    # them too.
    features = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    link_line = cc_common.get_memory_inefficient_command_line(
        feature_configuration = features,
        action_name = "c++-link-executable",
        variables = cc_common.create_link_variables(
            feature_configuration = features,
            cc_toolchain = cc_toolchain,
            is_using_linker = True,
        ),
    )
    for flag in link_line:
        if flag.startswith("-l") and flag not in seen_flags:
            seen_flags[flag] = True
            flags.append(flag)

    link = ctx.actions.declare_file(ctx.label.name + ".link")
    ctx.actions.write(link, "".join([f + "\n" for f in flags]))

    outputs = [out_archive, link, defs, hdrs, cc]
    return [DefaultInfo(
        files = depset(outputs),
        runfiles = ctx.runfiles(files = outputs + header_files),
    )]

gex_install_library = rule(
    implementation = _impl,
    attrs = {
        "deps": attr.label_list(
            providers = [CcInfo],
            doc = "Targets whose whole link closure goes into the archive.",
        ),
        "header_deps": attr.label_list(
            providers = [CcInfo],
            doc = "Header-only targets whose public headers are installed too.",
        ),
        "_cc_toolchain": attr.label(
            default = "@bazel_tools//tools/cpp:current_cc_toolchain",
        ),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
