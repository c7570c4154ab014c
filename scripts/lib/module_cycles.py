#!/usr/bin/env python3
"""Prints the module import graph's cycles of a crate's src directory (default
crates/leasehold/src) and exits 1 if there is one: every module of the core must sit in a layer
that does not import back (store <- hold <- elect <- schedule). `-v` prints the whole graph."""
import os, re, sys, itertools
args = [a for a in sys.argv[1:] if a != '-v']
root = args[0] if args else 'crates/leasehold/src'
mods = {}
for dp, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(dp, f)
            rel = os.path.relpath(p, root)[:-3]
            if rel.endswith('/mod'): rel = rel[:-4]
            mods[rel.replace('/', '::')] = p
# root re-exports: name -> module path
lib = open(os.path.join(root, 'lib.rs')).read()
reexp = {}
for m in re.finditer(r'pub use ([a-z_:]+)::\{([^}]*)\};|pub use ([a-z_:]+)::([A-Za-z_0-9]+);', lib, re.S):
    if m.group(1):
        for name in re.split(r'[,\s]+', m.group(2)):
            if name: reexp[name] = m.group(1)
    else:
        reexp[m.group(4)] = m.group(3)
def resolve(path, here):
    # path like a::b::C ; return the longest module prefix
    parts = path.split('::')
    for i in range(len(parts), 0, -1):
        cand = '::'.join(parts[:i])
        if cand in mods: return cand
    if parts[0] in reexp: return resolve(reexp[parts[0]] + '::' + parts[0], here)
    return None
edges = {m: set() for m in mods}
for m, p in mods.items():
    src = open(p).read()
    src = re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*', '', src, flags=re.S)
    src = '\n'.join(l for l in src.split('\n') if not l.strip().startswith('//'))
    here = m
    for mm in re.finditer(r'crate::([A-Za-z_][A-Za-z_0-9:]*)', src):
        t = resolve(mm.group(1), here)
        if t and t != m: edges[m].add(t)
    for mm in re.finditer(r'use crate::\{([^;]*)\};', src, re.S):
        for item in re.findall(r'[A-Za-z_][A-Za-z_0-9:]*', mm.group(1)):
            t = resolve(item, here)
            if t and t != m: edges[m].add(t)
    # super:: paths
    parent = '::'.join(m.split('::')[:-1])
    for mm in re.finditer(r'super::([A-Za-z_][A-Za-z_0-9:]*)', src):
        t = resolve((parent + '::' if parent else '') + mm.group(1), here)
        if t and t != m: edges[m].add(t)
# children using parent (mod.rs) are fine only if parent doesn't use... we report all cycles
def sccs(g):
    index = {}; low = {}; st = []; on = set(); res = []; c = [0]
    def visit(v):
        index[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in g[v]:
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: res.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in g:
        if v not in index: visit(v)
    return res
cyc = sccs(edges)
for c in cyc:
    print('cycle:', ' '.join(c))
    for a in c:
        print('   ', a, '->', ' '.join(sorted(x for x in edges[a] if x in c)))
if '-v' in sys.argv:
    for m in sorted(edges): print(m, '->', ' '.join(sorted(edges[m])))
print(len(cyc), 'import cycles in', root)
sys.exit(1 if cyc else 0)
