#!/usr/bin/env python3
"""Counts the public GASNet-EX names conformance_check.inc checks.

Usage: python3 tests/conformance/count_names.py  (from the repository root)

A name is a distinct identifier of the API's namespaces (gex_, GEX_,
gasnet_, GASNET_, gasnett_, GASNETT_, PLATFORM_, SIZEOF_GEX_/GASNET_,
_STRINGIFY, if_pf/if_pt) outside comments, plus the numbered families the
file generates by token pasting (gex_AM_*0..16, the legacy gasnet_AM*0..16,
the _v2 Commit calls, gex_AD_OpNB[I]_<DT>). Prints the total, and how many
of them are in the CONF_WITHOUT_PENDING block (pending names).
"""
import re

PATH = "tests/conformance/conformance_check.inc"
NAME = re.compile(r"\b(gex_\w+|GEX_\w+|gasnet_\w+|GASNET_\w+|gasnett_\w+|"
                  r"GASNETT_\w+|PLATFORM_\w+|SIZEOF_GEX_\w+|SIZEOF_GASNET_\w+|"
                  r"_STRINGIFY|if_pf|if_pt)\b(?!\.h)")


def names_in(text):
    found = set(m.group(1) for m in NAME.finditer(text))
    return {n for n in found if "##" not in n and not n.endswith("_")}


def main():
    text = open(PATH).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    # The pending parts: each #if !defined(CONF_WITHOUT_PENDING) up to its
    # matching #else or #endif (nesting followed line by line).
    kept, pending_lines, depth = [], [], 0
    for line in text.splitlines():
        directive = line.strip()
        if depth == 0:
            if directive.startswith("#if !defined(CONF_WITHOUT_PENDING)"):
                depth = 1
            else:
                kept.append(line)
            continue
        if directive.startswith("#if"):
            depth += 1
        elif directive.startswith("#endif") or (depth == 1 and
                                                directive.startswith("#else")):
            depth -= 1
            if depth == 0:
                continue
        pending_lines.append(line)
    pending_text = "\n".join(pending_lines)
    generated, pending = set(), {"gasnet_fwd.h"}
    for m in range(17):
        for k in ("RequestShort", "RequestMedium", "RequestLong", "ReplyShort",
                  "ReplyMedium", "ReplyLong", "CommitRequestMedium",
                  "CommitReplyMedium", "CommitRequestLong", "CommitReplyLong"):
            generated.add("gex_AM_%s%d" % (k, m))
        for k in ("RequestShort", "RequestMedium", "RequestLong",
                  "RequestLongAsync", "ReplyShort", "ReplyMedium", "ReplyLong"):
            generated.add("gasnet_AM%s%d" % (k, m))
        for k in ("CommitRequestMedium", "CommitReplyMedium",
                  "CommitRequestLong", "CommitReplyLong"):
            pending.add("gex_AM_%s%d_v2" % (k, m))
    for dt in ("I32", "U32", "I64", "U64", "FLT", "DBL"):
        generated |= {"gex_AD_OpNB_" + dt, "gex_AD_OpNBI_" + dt}
    outside = names_in("\n".join(kept)) | generated
    pending |= names_in(pending_text) - outside
    print("%d names, %d of them pending" % (len(outside | pending),
                                            len(pending)))


if __name__ == "__main__":
    main()
