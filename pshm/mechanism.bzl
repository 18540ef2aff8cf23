"""The PSHM mechanism as a build setting, and tests that run under each one.

`--//pshm:mechanism=posix|sysv|file` picks how shared memory objects are
made (POSIX shm_open, SysV shmget, or mmapped files in $TMPDIR); the default
is posix. One build holds one mechanism, as in GASNet's configure.

`pshm_mechanism_test` builds a test binary once per mechanism (through a
configuration transition), so `bazel test //...` runs every mechanism's tests
in one invocation without a second build flag.
"""

MECHANISMS = ["posix", "sysv", "file"]

MechanismInfo = provider(
    doc = "The PSHM mechanism chosen for this build.",
    fields = {"name": "posix, sysv or file"},
)

def _mechanism_flag_impl(ctx):
    value = ctx.build_setting_value
    if value not in MECHANISMS:
        fail("--//pshm:mechanism=%s: expected one of %s" %
             (value, ", ".join(MECHANISMS)))
    return MechanismInfo(name = value)

mechanism_flag = rule(
    implementation = _mechanism_flag_impl,
    build_setting = config.string(flag = True),
)

def _to_mechanism_impl(settings, attr):
    return {"//pshm:mechanism": attr.mechanism}

_to_mechanism = transition(
    implementation = _to_mechanism_impl,
    inputs = [],
    outputs = ["//pshm:mechanism"],
)

def _mechanism_test_impl(ctx):
    binary = ctx.attr.binary
    if type(binary) == "list":
        binary = binary[0]
    executable = binary[DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(
        output = out,
        target_file = executable,
        is_executable = True,
    )
    runfiles = ctx.runfiles(files = [out, executable])
    runfiles = runfiles.merge(binary[DefaultInfo].default_runfiles)
    return [DefaultInfo(executable = out, runfiles = runfiles)]

_mechanism_test = rule(
    implementation = _mechanism_test_impl,
    test = True,
    attrs = {
        "binary": attr.label(
            cfg = _to_mechanism,
            executable = True,
            mandatory = True,
        ),
        "mechanism": attr.string(values = MECHANISMS, mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
)

def pshm_mechanism_test(name, binary, mechanisms = MECHANISMS, **kwargs):
    """One test per mechanism, `<name>_<mechanism>`, running `binary` built
    with --//pshm:mechanism set to that mechanism.

    `binary` is a cc_binary (testonly) holding the test; kwargs (size, tags,
    env, ...) go to each test.
    """
    for mechanism in mechanisms:
        _mechanism_test(
            name = "%s_%s" % (name, mechanism),
            binary = binary,
            mechanism = mechanism,
            **kwargs
        )
