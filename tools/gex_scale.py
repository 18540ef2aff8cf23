#!/usr/bin/env python3
"""gex_scale.py: runs gex_scale_<conduit> at a list of job sizes and reports
what one rank costs as the job grows (tests/benchmarks/README.md, "Scale").

  tools/gex_scale.py run --conduit ucx --sizes 2,4,8,16,32,64,128,256
  tools/gex_scale.py plot            # SVGs of every label in the CSV
  tools/gex_scale.py fit             # the model's constants per label

`run` starts bazel-bin/tools/gasnetrun_<conduit> -n N gex_scale_<conduit>
at each size with the conduit's loopback settings (below), every message
through the conduit (GASNET_SUPERNODE_MAXSIZE=1; not for smp, whose ranks
must share one supernode), GASNET_<CONDUIT>_STATS=1 and
GASNET_STARTUP_TIMES=1, and appends one row per size to the CSV (a row of
the same label and size is replaced). Before each size it projects the
job's memory from the sizes already run (peak RSS per rank, linear in the
job size) and stops when the projection passes --mem-cap-gib: the reason
is printed and kept in the CSV's `stopped` column of the last row.

Per size the row holds: the job's wall time; each start-up phase's maximum
over ranks (spawn: the driver's clock before the launcher to main();
bootstrap: the bootstrap and node-map exchange; pshm: the supernode's
shared memory; conduit: the conduit's Init; attach: gex_Segment_Attach);
first contact (a Medium to every rank), the Puts and the all-to-all
(maximum over ranks, microseconds); barrier, broadcast and reduce latency
(rank 0, microseconds per call); peak (VmHWM) and steady (VmRSS) RSS per
rank (median and maximum, KiB); and the conduit's own counts from its
stats line (median over ranks): peers, connected_peers, conduit_bytes and
the conduit's specific counts.
"""

import argparse
import csv
import os
import re
import shlex
import shutil
import statistics
import subprocess
import tempfile
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(ROOT, "tests", "benchmarks", "scale")

# Each conduit's loopback settings (what the repository's tests use).
CONDUIT_ENV = {
    "smp": {},
    "ucx": {"GASNET_UCX_TLS": "tcp", "GASNET_UCX_NET_DEVICES": "lo"},
    "ofi": {"FI_PROVIDER": "tcp;ofi_rxm", "FI_TCP_IFACE": "lo"},
    "ibv": {"GASNET_IBV_SOFTWARE_DEVICE": "yes"},
}

PHASES = ["spawn_us", "bootstrap_us", "pshm_us", "conduit_us", "attach_us"]
MAX_FIELDS = PHASES + ["init_us", "medium_us", "put_us", "alltoall_us"]
RANK0_FIELDS = ["barrier_us", "bcast_us", "reduce_us"]
MEM_FIELDS = ["hwm_kb", "rss_kb"]
# A rank's own CPU time (median and maximum over ranks): with more ranks
# than cores the wall times above grow with the whole job's work.
CPU_FIELDS = ["startup_cpu_us", "cpu_us"]
# The stats fields every conduit's line has; the others found are kept too.
COMMON_STATS = ["peers", "connected_peers", "conduit_bytes"]
COLUMNS = (["label", "conduit", "hosts", "size", "wall_s"] +
           [f + "_max" for f in MAX_FIELDS] + RANK0_FIELDS +
           [f + m for f in MEM_FIELDS + CPU_FIELDS
            for m in ("_med", "_max")] +
           ["stats_" + f for f in COMMON_STATS] + ["stats_other", "stopped"])

SCALE_RE = re.compile(r"^scale: rank (\d+) (.*)$")
RANK_LINE_RE = re.compile(r"^(\w+): rank (\d+): (.*)$")
PAIR_RE = re.compile(r"\b([a-z_]+) (-?\d+(?:\.\d+)?)\b")


def pairs(text):
    return {k: float(v) for k, v in PAIR_RE.findall(text)}


def parse_output(text, conduit):
    """Per-rank dicts of the scale line, the startup line and the stats."""
    ranks = {}
    stats = {}
    for line in text.splitlines():
        m = SCALE_RE.match(line)
        if m:
            ranks.setdefault(int(m.group(1)), {}).update(pairs(m.group(2)))
            continue
        m = RANK_LINE_RE.match(line)
        if not m:
            continue
        kind, rank, rest = m.group(1), int(m.group(2)), m.group(3)
        if kind == "startup":
            ranks.setdefault(rank, {}).update(pairs(rest))
        elif kind == conduit:
            stats[rank] = pairs(rest)
    return ranks, stats


def summarise(label, conduit, hosts, size, wall_s, ranks, stats):
    row = {"label": label, "conduit": conduit, "hosts": hosts, "size": size,
           "wall_s": "%.2f" % wall_s, "stopped": ""}
    all_ranks = [ranks[r] for r in sorted(ranks)]
    for f in MAX_FIELDS:
        vals = [r[f] for r in all_ranks if f in r]
        row[f + "_max"] = "%d" % max(vals) if vals else ""
    r0 = ranks.get(0, {})
    for f in RANK0_FIELDS:
        row[f] = "%.1f" % r0[f] if f in r0 else ""
    for f in MEM_FIELDS + CPU_FIELDS:
        vals = [r[f] for r in all_ranks if f in r]
        row[f + "_med"] = "%d" % statistics.median(vals) if vals else ""
        row[f + "_max"] = "%d" % max(vals) if vals else ""
    keys = sorted({k for s in stats.values() for k in s})
    med = {k: statistics.median([s[k] for s in stats.values() if k in s])
           for k in keys}
    for f in COMMON_STATS:
        row["stats_" + f] = number(med[f]) if f in med else ""
    row["stats_other"] = " ".join(
        "%s=%s" % (k, number(med[k])) for k in keys if k not in COMMON_STATS)
    return row


def number(v):
    return "%d" % v if float(v).is_integer() else "%.1f" % v


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_csv(path, rows):
    rows.sort(key=lambda r: (r["label"], int(r["size"])))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in COLUMNS})


def projected_job_gib(done, size):
    """Peak RSS of the whole job at `size`, from the sizes run so far
    (per-rank maximum, linear in the size through the last two)."""
    pts = sorted((int(r["size"]), float(r["hwm_kb_max"])) for r in done
                 if r.get("hwm_kb_max"))
    if not pts:
        return 0.0
    if len(pts) == 1:
        per_rank = pts[-1][1]
    else:
        (n0, m0), (n1, m1) = pts[-2], pts[-1]
        per_rank = m1 + max(0.0, (m1 - m0) / (n1 - n0)) * (size - n1)
    return per_rank * size / (1 << 20)


def cmd_run(a):
    conduit = a.conduit
    label = a.label or "%s-%dhost" % (conduit, a.hosts)
    bindir = a.bin_dir
    launcher = os.path.join(bindir, "gasnetrun_" + conduit)
    client = os.path.join(bindir, "gex_scale_" + conduit)
    for p in ([client] if a.launcher else [launcher, client]):
        if not os.access(p, os.X_OK):
            sys.exit("gex_scale.py: %s is not built (bazel build "
                     "//tools:gasnetrun_%s //tools:gex_scale_%s)" %
                     (p, conduit, conduit))
    env = dict(os.environ)
    env.update(CONDUIT_ENV[conduit])
    if conduit != "smp":
        env["GASNET_SUPERNODE_MAXSIZE"] = "1"
    env["GASNET_%s_STATS" % conduit.upper()] = "1"
    env["GASNET_STARTUP_TIMES"] = "1"
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    csv_path = os.path.join(a.out, "scale.csv")
    rows = [r for r in read_csv(csv_path) if r["label"] != label or
            int(r["size"]) not in a.sizes]
    done = []
    for size in a.sizes:
        projected = projected_job_gib(done, size)
        if projected > a.mem_cap_gib:
            reason = ("stopped before %d ranks: the job would take about "
                      "%.1f GiB (cap %.1f GiB)" %
                      (size, projected, a.mem_cap_gib))
            print("%s: %s" % (label, reason), flush=True)
            if done:
                done[-1]["stopped"] = reason
            break
        if a.launcher:
            argv = shlex.split(a.prefix) + shlex.split(
                a.launcher.format(n=size, hosts=a.hosts))
        else:
            argv = shlex.split(a.prefix) + [launcher, "-n", str(size)]
            if a.hosts > 1:
                # The ssh spawner forwards GASNET_* only: name the rest
                # (FI_PROVIDER, FI_TCP_IFACE, ...), or remote ranks run
                # without the transport settings the row claims.
                fwd = ["GEX_SCALE_T0"] + sorted(
                    k for k in set(CONDUIT_ENV[conduit]) |
                    {kv.partition("=")[0] for kv in a.env}
                    if not k.startswith("GASNET_"))
                argv += ["-N", str(a.hosts), "-E", ",".join(fwd)]
        argv += [client, "-i", str(a.iterations)] + shlex.split(
            a.client_args)
        env["GEX_SCALE_T0"] = str(time.clock_gettime_ns(time.CLOCK_REALTIME))
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True,
                               timeout=a.timeout)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out = "timeout", e.stdout or ""
            err = (e.stderr or "") if isinstance(e.stderr, str) else ""
            if isinstance(out, bytes):
                out = out.decode(errors="replace")
        wall = time.monotonic() - t0
        ranks, stats = parse_output(out, conduit)
        if rc != 0 or len(ranks) != size:
            reason = ("stopped at %d ranks: exit %s, %d of %d ranks "
                      "reported; stderr: %s" %
                      (size, rc, len(ranks), size,
                       " | ".join(err.strip().splitlines()[-3:])[:400]))
            print("%s: %s" % (label, reason), flush=True)
            # The whole of it, for whoever looks into the failure.
            keep = os.path.join(tempfile.gettempdir(),
                                "gex_scale.%s.%d.log" % (label, size))
            with open(keep, "w") as f:
                f.write(out + "\n--- stderr ---\n" + err)
            print("%s: the job's output is in %s" % (label, keep), flush=True)
            if done:
                done[-1]["stopped"] = reason
            break
        row = summarise(label, conduit, a.hosts, size, wall, ranks, stats)
        done.append(row)
        print("%s n=%d wall %.1fs hwm %s KiB/rank (max %s) conduit_bytes %s "
              "init %s us" % (label, size, wall, row["hwm_kb_med"],
                              row["hwm_kb_max"], row["stats_conduit_bytes"],
                              row["init_us_max"]), flush=True)
        write_csv(csv_path, rows + done)
    write_csv(csv_path, rows + done)
    print_table(done)
    return 0


def print_table(rows):
    cols = ["size", "wall_s", "spawn_us_max", "bootstrap_us_max",
            "conduit_us_max", "attach_us_max", "medium_us_max",
            "barrier_us", "reduce_us", "hwm_kb_med", "rss_kb_med",
            "stats_connected_peers", "stats_conduit_bytes"]
    print(" ".join("%14s" % c.replace("stats_", "")[:14] for c in cols))
    for r in rows:
        print(" ".join("%14s" % r.get(c, "") for c in cols))


def cmd_table(a):
    """Markdown tables of the CSV, one per label (for the README)."""
    rows = read_csv(os.path.join(a.out, "scale.csv"))
    cols = [("ranks", "size", None), ("wall s", "wall_s", None),
            ("spawn ms", "spawn_us_max", 1e-3),
            ("bootstrap ms", "bootstrap_us_max", 1e-3),
            ("pshm ms", "pshm_us_max", 1e-3),
            ("conduit init ms", "conduit_us_max", 1e-3),
            ("attach ms", "attach_us_max", 1e-3),
            ("start-up CPU ms/rank", "startup_cpu_us_med", 1e-3),
            ("first contact ms", "medium_us_max", 1e-3),
            ("barrier us", "barrier_us", 1), ("reduce us", "reduce_us", 1),
            ("all-to-all ms", "alltoall_us_max", 1e-3),
            ("VmHWM MiB/rank", "hwm_kb_med", 1 / 1024),
            ("conduit KiB/rank", "stats_conduit_bytes", 1 / 1024),
            ("connected", "stats_connected_peers", None)]
    for lab in sorted({r["label"] for r in rows}):
        print("\n`%s`:\n" % lab)
        print("| " + " | ".join(c[0] for c in cols) + " |")
        print("|" + "---|" * len(cols))
        for r in sorted((r for r in rows if r["label"] == lab),
                        key=lambda r: int(r["size"])):
            cells = []
            for _, col, scale in cols:
                v = r.get(col, "")
                if v in ("", "-1"):
                    cells.append("")
                elif scale is None:
                    cells.append(v)
                else:
                    x = float(v) * scale
                    cells.append("%.3g" % x if x < 100 else "%.0f" % x)
            print("| " + " | ".join(cells) + " |")
        stopped = [r["stopped"] for r in rows
                   if r["label"] == lab and r.get("stopped")]
        if stopped:
            print("\n%s" % stopped[-1][:240])
    return 0


# ---- plots ------------------------------------------------------------------

PLOTS = [
    ("hwm", "peak RSS per rank (VmHWM, median), MiB", "hwm_kb_med", 1 / 1024),
    ("rss", "steady RSS per rank (VmRSS, median), MiB", "rss_kb_med",
     1 / 1024),
    ("conduit_bytes", "conduit_bytes per rank (the conduit's stats), KiB",
     "stats_conduit_bytes", 1 / 1024),
    ("spawn", "spawn (driver to main), slowest rank, ms", "spawn_us_max",
     1e-3),
    ("bootstrap", "bootstrap exchange, slowest rank, ms", "bootstrap_us_max",
     1e-3),
    ("conduit_init", "conduit init, slowest rank, ms", "conduit_us_max", 1e-3),
    ("attach", "segment attach, slowest rank, ms", "attach_us_max", 1e-3),
    ("startup_cpu", "CPU time of a rank to the end of attach (median), ms",
     "startup_cpu_us_med", 1e-3),
    ("barrier", "barrier latency (rank 0), us", "barrier_us", 1),
    ("bcast", "broadcast 8 B latency (rank 0), us", "bcast_us", 1),
    ("reduce", "reduce-to-all 8 B latency (rank 0), us", "reduce_us", 1),
    ("alltoall", "all-to-all of Shorts, slowest rank, ms", "alltoall_us_max",
     1e-3),
]


def cmd_plot(a):
    rows = read_csv(os.path.join(a.out, "scale.csv"))
    if not rows:
        sys.exit("gex_scale.py: no rows in %s" % a.out)
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        sys.exit("gex_scale.py: plots need gnuplot (Debian: apt-get install "
                 "gnuplot-nox)")
    labels = sorted({r["label"] for r in rows})
    data_dir = os.path.join(a.out, "data")
    os.makedirs(data_dir, exist_ok=True)
    for name, title, col, scale in PLOTS:
        series = []
        for lab in labels:
            pts = [(int(r["size"]), float(r[col]) * scale) for r in rows
                   if r["label"] == lab and r.get(col, "") not in ("", "-1")]
            if not pts:
                continue
            path = os.path.join(data_dir, "%s.%s.dat" % (name, lab))
            with open(path, "w") as f:
                for n, v in sorted(pts):
                    f.write("%d %g\n" % (n, v))
            series.append((lab, path))
        if not series:
            continue
        svg = os.path.join(a.out, name + "." + a.format)
        terminal = ("svg size 900,480 dynamic font 'sans,11'"
                    if a.format == "svg" else "pngcairo size 900,480")
        script = [
            "set terminal " + terminal,
            "set output '%s'" % svg,
            "set title \"%s\"" % title,
            "set xlabel 'ranks in the job'",
            "set logscale x 2",
            "set key outside right top",
            "set grid",
            "plot " + ", ".join("'%s' using 1:2 with linespoints title \"%s\"" %
                                (p, lab) for lab, p in series),
        ]
        subprocess.run([gnuplot], input="\n".join(script) + "\n", text=True,
                       check=True)
        print("wrote", svg)
    shutil.rmtree(data_dir)
    return 0


# ---- the model ----------------------------------------------------------------

def linear_fit(xs, ys):
    """Least squares y = a + b x; (a, b, largest relative residual)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0
    a0 = my - b * mx
    errors = [abs(a0 + b * x - y) / y for x, y in zip(xs, ys) if y]
    return a0, b, max(errors) if errors else 0.0


def cmd_fit(a):
    rows = read_csv(os.path.join(a.out, "scale.csv"))
    labels = sorted({r["label"] for r in rows})
    # Start-up is fitted on a rank's own CPU time to the end of attach: on
    # a host with more ranks than cores the wall times grow with the whole
    # job's work (N ranks x O(N) each), which a job with a core per rank
    # does not pay. The CPU time still holds the yields of a rank waiting
    # for descheduled peers, so it is an upper bound.
    fits = [("peak RSS/rank (VmHWM)", "hwm_kb_med", 1024, "B"),
            ("steady RSS/rank (VmRSS)", "rss_kb_med", 1024, "B"),
            ("conduit_bytes/rank", "stats_conduit_bytes", 1, "B"),
            ("start-up CPU/rank", "startup_cpu_us_med", 1e-6, "s")]
    for lab in labels:
        mine = sorted((r for r in rows if r["label"] == lab
                       and int(r["size"]) >= a.min_size),
                      key=lambda r: int(r["size"]))
        if len(mine) < 2:
            continue
        conn = [r["stats_connected_peers"] or "n/a" for r in mine]
        print("== %s (sizes %s; connected peers %s)" %
              (lab, ",".join(r["size"] for r in mine), ",".join(conn)))
        for name, col, unit, uname in fits:
            xs, ys = [], []
            for r in mine:
                if r.get(col, "") in ("", None):
                    continue
                xs.append(int(r["size"]) - 1)
                ys.append(float(r[col]) * unit)
            if len(xs) < 2 or not any(ys):
                continue
            fixed, per_peer, worst = linear_fit(xs, ys)
            proj = ["%dK: %s" % (k, human(fixed + per_peer * (k * 1024 - 1),
                                           uname)) for k in (1, 16, 64)]
            print("  %-42s fixed %s + %s x (N-1)   worst fit error %.0f%%   "
                  "projected %s" % (name, human(fixed, uname),
                                    human(per_peer, uname), worst * 100,
                                    ", ".join(proj)))
    return 0


def human(v, unit):
    if unit == "s":
        return "%.3g s" % v
    for u, d in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= d:
            return "%.3g %s" % (v / d, u)
    return "%.0f B" % v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run at a list of job sizes")
    r.add_argument("--conduit", required=True, choices=sorted(CONDUIT_ENV))
    r.add_argument("--sizes", default="2,4,8,16,32,64,128,256",
                   type=lambda s: [int(x) for x in s.split(",")])
    r.add_argument("--label", help="the CSV's label (default CONDUIT-1host)")
    r.add_argument("--hosts", type=int, default=1,
                   help="hosts to spread the ranks over (launcher -N); the "
                   "host list comes from the environment "
                   "(GASNET_SSH_SERVERS)")
    r.add_argument("--iterations", type=int, default=20)
    r.add_argument("--mem-cap-gib", type=float, default=8.0)
    r.add_argument("--timeout", type=float, default=600)
    r.add_argument("--bin-dir", default=os.path.join(ROOT, "bazel-bin",
                                                     "tools"))
    r.add_argument("--env", action="append", default=[],
                   help="VAR=VALUE for the job (repeatable)")
    r.add_argument("--client-args", default="",
                   help="more arguments for gex_scale (one string), e.g. "
                   "'-p 2': contact the next 2 ranks only")
    r.add_argument("--launcher", default="",
                   help="the launcher command instead of gasnetrun_CONDUIT "
                   "-n N, one string with {n} (and {hosts}) for the job "
                   "size, e.g. 'srun --mpi=pmix -O -n {n}'")
    r.add_argument("--prefix", default="",
                   help="words before the launcher, one string (e.g. "
                   "'nsenter --net=... --')")
    p = sub.add_parser("plot", help="SVG plots of every label in the CSV")
    p.add_argument("--format", choices=["svg", "png"], default="svg")
    t = sub.add_parser("table", help="Markdown tables of the CSV")
    f = sub.add_parser("fit", help="the model's constants per label")
    f.add_argument("--min-size", type=int, default=8,
                   help="fit sizes from this one up (default 8: the "
                   "smaller jobs show the fixed cost only)")
    for s in (r, p, t, f):
        s.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args()
    return {"run": cmd_run, "plot": cmd_plot, "table": cmd_table,
            "fit": cmd_fit}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
