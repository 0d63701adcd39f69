#!/usr/bin/env python3
"""bench/callgrind_callers.py - who calls what in a callgrind dump, per call (issue 23).

  python3 bench/callgrind_callers.py DUMP N --incl [K [REGEX]]     top K functions by inclusive Ir
  python3 bench/callgrind_callers.py DUMP N --callers REGEX [K]    callers of REGEX, by the
                                                                   inclusive Ir of their calls to it
  python3 bench/callgrind_callers.py DUMP N --count REGEX [K]      callers of REGEX, by calls made
  python3 bench/callgrind_callers.py DUMP N --callees REGEX [K]    what REGEX calls, by inclusive Ir

DUMP is a dump `bench/gateway_cpu.py --keep` left (uncompressed names), N the calls it counted
(figures are per call). callgrind_annotate 3.19 charges everything to `clone` on these dumps;
this reads the call graph's edges itself: a cost line after `calls=` is that call's inclusive
cost. It is how `memcpy`'s and `malloc`'s callers were found (docs/PERFORMANCE.md).
"""
import re, sys, collections
dump, n = sys.argv[1], int(sys.argv[2])
args = sys.argv[3:]
def short(name):
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    name = re.sub(r"<[^<>]{60,}>", "<…>", name)
    return name[:160]
edges = collections.Counter()  # (caller, callee) -> inclusive
own = collections.Counter()
counts = collections.Counter()
fn = None; cfn = None; after = False
for line in open(dump):
    if line.startswith("fn="):
        fn = line[3:].strip(); cfn = None
    elif line.startswith("cfn="):
        cfn = line[4:].strip()
    elif line.startswith("calls="):
        after = True
        counts[(fn, cfn)] += int(line[6:].split()[0])
    elif line[:1].isdigit() or line[:1] in "+-*":
        parts = line.split()
        ir = int(parts[1]) if len(parts) > 1 else 0
        if after:
            edges[(fn, cfn)] += ir
        else:
            own[fn] += ir
        after = False
incl = collections.Counter(own)
for (a, b), ir in edges.items():
    if a != b:
        incl[a] += ir
mode = args[0] if args else "--incl"
if mode == "--callers":
    pat = re.compile(args[1])
    agg = collections.Counter()
    for (a, b), ir in edges.items():
        if pat.search(b) and a != b:
            agg[a] += ir
    for name, ir in agg.most_common(int(args[2]) if len(args) > 2 else 30):
        print(f"{ir/n:>10,.0f}  {short(name)}")
elif mode == "--count":
    pat = re.compile(args[1])
    agg = collections.Counter()
    for (a, b), c in counts.items():
        if pat.search(b) and a != b:
            agg[a] += c
    for name, c in agg.most_common(int(args[2]) if len(args) > 2 else 30):
        print(f"{c/n:>8.1f}  {short(name)}")
elif mode == "--callees":
    pat = re.compile(args[1])
    agg = collections.Counter()
    for (a, b), ir in edges.items():
        if pat.search(a) and a != b:
            agg[b] += ir
    for name, ir in agg.most_common(int(args[2]) if len(args) > 2 else 30):
        print(f"{ir/n:>10,.0f}  {short(name)}")
else:
    k = int(args[1]) if len(args) > 1 else 60
    pat = re.compile(args[2]) if len(args) > 2 else None
    for name, ir in incl.most_common():
        if pat and not pat.search(name):
            continue
        print(f"{ir/n:>10,.0f} {own[name]/n:>9,.0f}  {short(name)}")
        k -= 1
        if k == 0: break
print("total own/call", sum(own.values())//n)
