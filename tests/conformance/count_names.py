#!/usr/bin/env python3
"""Counts the public GASNet-EX names conformance_check.inc checks.

Usage: python3 tests/conformance/count_names.py  (from the repository root)

A name is a distinct identifier of the API's namespaces (gex_, GEX_,
gasnet_, GASNET_, gasnett_, GASNETT_, PLATFORM_, SIZEOF_GEX_/GASNET_,
_STRINGIFY, if_pf/if_pt) outside comments, plus the numbered families the
file generates by token pasting (gex_AM_*0..16, the legacy gasnet_AM*0..16,
the _v2 Commit calls, gex_AD_OpNB[I]_<DT>) and the header gasnet_fwd.h.
Prints the total.
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
    generated = {"gasnet_fwd.h"}
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
            generated.add("gex_AM_%s%d_v2" % (k, m))
    for dt in ("I32", "U32", "I64", "U64", "FLT", "DBL"):
        generated |= {"gex_AD_OpNB_" + dt, "gex_AD_OpNBI_" + dt}
    print("%d names" % len(names_in(text) | generated))


if __name__ == "__main__":
    main()
