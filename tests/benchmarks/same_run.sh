# shellcheck shell=bash
# The helpers the same-run benchmark scripts (ofi_vs_raw.sh,
# ucx_vs_perftest.sh) share: running one measurement under a time limit,
# checking a figure came out, and the ratios, medians and ranges of the
# rounds. Sourced; the script sets `me` (its name, for messages), `work`
# (the directory outputs go to) and `limit` (seconds a run may take).
# shellcheck disable=SC2154

die() {
  echo "$me: $*" >&2
  exit 1
}

# run NAME CMD...: runs one program under the time limit; on failure shows
# its output and stops.
run() {
  local name="$1" rc=0
  shift
  timeout -k 10 "$limit" "$@" >"$work/$name.out" 2>&1 || rc=$?
  if ((rc != 0)); then
    cat "$work/$name.out" >&2
    if ((rc == 124 || rc == 137)); then
      die "$name: no result within $limit s (-t): $*"
    fi
    die "$name exited $rc: $*"
  fi
}

# need NAME VALUE WHAT: VALUE must be a positive number.
need() {
  if [[ -z "$2" ]] || ! awk -v v="$2" 'BEGIN { exit !(v + 0 > 0) }'; then
    cat "$work/$1.out" >&2
    die "$1: no $3 in its output (above)"
  fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# median VALUES...
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
          else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s .. %s", lo, hi }'; }
