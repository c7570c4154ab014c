#!/usr/bin/env python3
"""Lists public async fns (outside trait impls, tests and examples) whose doc comment lacks a
'# Errors' section (when they return a Result) or a '# Cancel safety' section, and exits 1 if
there is one. A fn that a `macro_rules!` writes with docs its caller passes in (`$(#[$doc:meta])*`
above it) and without both sections of its own is checked at each call of the macro instead: the
call must hold each section once per such fn."""
import os, re, sys
missing = 0
by_macro = {}  # macro name -> [(fn name, returns a Result)]
sources = {}
for root in sys.argv[1:]:
    for dp, _, fs in os.walk(root):
        if '/tests' in dp or '/benches' in dp or '/examples' in dp: continue
        for f in fs:
            if not f.endswith('.rs'): continue
            p = os.path.join(dp, f)
            text = open(p).read()
            sources[p] = text
            lines = text.split('\n')
            for i, l in enumerate(lines):
                m = re.match(r'\s*pub async fn (\w+)', l)
                if not m: continue
                # signature until '{'
                sig = ' '.join(lines[i:i+12]); sig = sig[:sig.find('{')] if '{' in sig else sig
                # Doc lines above it; a repetition of docs the macro's caller passes in
                # (`$(#[$doc])*`, or `$($(#[$doc])*)?` for an optional part) may stand among them.
                j = i - 1; doc = []; passed = False
                while j >= 0:
                    s = lines[j].strip()
                    if s.startswith('///') or s.startswith('#['):
                        doc.append(lines[j])
                    elif re.match(r'\$\(.*#\[\$\w+\]', s):
                        passed = True
                    else:
                        break
                    j -= 1
                d = '\n'.join(doc)
                own = ('# Errors' in d or 'Result' not in sig) and '# Cancel safety' in d
                if passed and not own:
                    k = i
                    while k >= 0 and not re.match(r'\s*macro_rules!\s*(\w+)', lines[k]): k -= 1
                    if k >= 0:
                        name = re.match(r'\s*macro_rules!\s*(\w+)', lines[k]).group(1)
                        by_macro.setdefault(name, []).append((m.group(1), 'Result' in sig))
                        continue
                # skip trait impls (docs on the trait)
                k = i
                while k >= 0 and not re.match(r'^(impl|pub trait|trait|#\[async_trait\])', lines[k]): k -= 1
                if k >= 0 and re.match(r'^impl .* for ', lines[k]): continue
                miss = []
                ret = sig.split(')', 1)[-1].split(' where ')[0] if ')' in sig else ''
                if 'Result' in ret:
                    if '# Errors' not in d: miss.append('Errors')
                if '# Cancel safety' not in d: miss.append('Cancel safety')
                if miss:
                    missing += 1
                    print(f'{p}:{i+1}: {m.group(1)} lacks {", ".join(miss)}')
for name, fns in by_macro.items():
    results = sum(1 for _, r in fns if r)
    for p, text in sources.items():
        for call in re.finditer(r'\b' + name + r'!\s*\{', text):
            body = text[call.end():text.find('\n    }', call.end())]
            line = text.count('\n', 0, call.start()) + 1
            start = text.rfind('\n', 0, call.start()) + 1
            if text[start:call.start()].lstrip().startswith(('//', 'macro_rules')): continue
            miss = []
            if body.count('# Errors') < results: miss.append('Errors')
            if body.count('# Cancel safety') < len(fns): miss.append('Cancel safety')
            if miss:
                missing += 1
                print(f'{p}:{line}: a call of {name}! lacks {", ".join(miss)} for {", ".join(f for f, _ in fns)}')
sys.exit(1 if missing else 0)
