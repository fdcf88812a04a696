#!/usr/bin/env python3
"""Find import cycles between the source files of each crate (crates/*/src).

Run from the repository root: python3 scripts/check-file-cycles.py [--edges FILE]
Exit 1 when a forbidden cycle exists, else print a one-line summary and exit 0.

Rule
- A node is a source file reached from a crate root (src/lib.rs, src/main.rs,
  src/bin/*.rs) through `mod x;` declarations. Comments, string and char
  literals and items gated by a test-only `#[cfg(test)]` / `#[cfg(all(test, ..))]`
  are blanked first, so test-only modules (e.g. `#[cfg(test)] mod tests;`) and
  their imports are not seen. Code behind `#[cfg(feature = ..)]` counts.
  Inline `mod x { .. }` blocks are part of their file.
- Edge A -> B when A names, through `use` (grouped, aliased, glob) or an inline
  path (`crate::a::X`, `super::X`, `self::X`, `child::X`, `imported_mod::X`),
  an item DEFINED in B (struct/enum/trait/type/fn/const/static/union/
  macro_rules/mod). Re-exports (`pub use`, or any import the path goes through)
  are followed to the defining file; the re-exporting file's own `use` makes
  its own edge. A path naming a module gives an edge to that module's file.
  A name not found in a module of this crate (e.g. made by a macro) counts
  as defined in that module's file; names from other crates give no edge.
  `mod child;` itself is not an edge.
- Cycles: strongly connected components of size > 1 after removing every
  edge between a file and the file that declares it (`mod child;`): each is
  a failure. Cycles that exist only through such parent/child edges are
  printed as "parent/child (allowed)".
- Not seen (accepted): items reached only through `Self`, method calls, trait
  resolution or macro expansion. Names imported by a function-local `use`
  are treated as module-level imports.
--edges FILE prints FILE's outgoing edges with the paths (file:line) behind each.
"""
import bisect, os, re, sys
from collections import defaultdict

LIT = re.compile(r'''//[^\n]* | /\* | (?<!\w)b?r(?P<hashes>\#*)" | (?<!\w)b?"(?:\\.|[^"\\])*"
  | '(?:\\.[^'\n]{0,10}?|[^\\'\n])' ''', re.X | re.S)

def blank(s):
    return re.sub(r'[^\n]', ' ', s)

def strip(text):
    """Blank comments, string and char literals, keeping newlines (line numbers)."""
    out, i = [], 0
    while (m := LIT.search(text, i)):
        k = m.end()
        if m.group(0) == '/*':  # block comments nest
            depth = 1
            while depth and k < len(text):
                step = text[k:k + 2]
                depth += (step == '/*') - (step == '*/'); k += 2 if step in ('/*', '*/') else 1
        elif m.group('hashes') is not None:  # raw string
            end = text.find('"' + m.group('hashes'), k)
            k = len(text) if end < 0 else end + 1 + len(m.group('hashes'))
        out += [text[i:m.start()], blank(text[m.start():k])]; i = k
    return ''.join(out) + text[i:]

CFG = re.compile(r'#\s*(!?)\s*\[\s*cfg\s*\(')

def test_only(pred):
    pred = pred.strip()
    return pred == 'test' or (pred.startswith('all(') and re.search(r'(?<!not\()\btest\b', pred) is not None)

def close(text, i):
    """Index just past the bracket matching text[i] (an opening bracket)."""
    depth = 0
    for k in range(i, len(text)):
        if text[k] in '([{': depth += 1
        elif text[k] in ')]}':
            depth -= 1
            if depth == 0: return k + 1
    return len(text)

def strip_cfg_test(text):
    """Blank items gated by a test-only cfg; None when the whole file is."""
    pos = 0
    while True:
        m = CFG.search(text, pos)
        if not m: return text
        paren = m.end() - 1; end_attr = close(text, text.index('[', m.start()))
        if not test_only(text[paren + 1:close(text, paren) - 1]):
            pos = end_attr; continue
        if m.group(1): return None  # #![cfg(test)]: the whole file
        k = end_attr
        while True:  # further attributes
            a = re.compile(r'\s*#\s*\[').match(text, k)
            if not a: break
            k = close(text, a.end() - 1)
        depth = 0
        while k < len(text):
            c = text[k]; k += 1
            if c in '([{': depth += 1
            elif c in ')]}':
                depth -= 1
                if depth == 0 and c == '}': break
            elif c == ';' and depth == 0: break
        text = text[:m.start()] + blank(text[m.start():k]) + text[k:]
        pos = k

def use_leaves(body):
    """`a::{b, c::{self, D as E}, f::*}` -> [(segments, bound name or '*')]."""
    toks, out = re.findall(r'\$?\w+|::|[{},*]', body), []
    def tree(i, prefix):
        segs, alias = list(prefix), None
        while i < len(toks) and toks[i] not in (',', '}'):
            t = toks[i]; i += 1
            if t == '{':
                while i < len(toks) and toks[i] != '}':
                    i = tree(i, segs)
                    if i < len(toks) and toks[i] == ',': i += 1
                return i + 1
            if t == '*': out.append((segs, '*')); return i
            if t == 'as': alias = toks[i] if i < len(toks) else '_'; i += 1
            elif t != '::': segs = segs + [t]
        if segs and segs[-1] == 'self': segs = segs[:-1]
        if segs: out.append((segs, alias or segs[-1]))
        return i
    tree(0, [])
    return out

TOKEN = re.compile(r'''(?P<use>\buse\s+(?P<ubody>[^;]*);)
  | \bmod\s+(?P<mod>\w+)\s*(?P<mend>[;{])
  | \b(?:struct|enum|trait|type|fn|const|static|union)\s+(?!(?:fn|unsafe|async|extern|mut)\b)(?P<def>\w+)
  | \bmacro_rules!\s*(?P<macro>\w+)
  | (?<![\w:.$])(?P<path>(?:\$crate|[A-Za-z_]\w*)(?:\s*::\s*[A-Za-z_]\w*)+)
  | (?P<open>\{) | (?P<close>\})''', re.X)

class Module:
    def __init__(self, file):
        self.file, self.children, self.defs, self.uses, self.globs = file, {}, {}, {}, []

def scan(text):
    """Yield (kind, scope, value, pos); scope = inline-mod names, None off module level."""
    stack = []
    for m in TOKEN.finditer(text):
        inner = tuple(s for s in stack if s not in ('ext', None))  # enclosing inline mods
        scope = inner if None not in stack else None  # None: inside a fn/impl/... body
        if m.group('open'):
            stack.append('ext' if re.search(r'\bextern\s*$', text[:m.start()][-40:]) else None)
        elif m.group('close'):
            if stack: stack.pop()
        elif m.group('mod'):
            if scope is not None: yield 'mod', scope, m.group('mod'), m.start(), m.group('mend') == '{'
            if m.group('mend') == '{': stack.append(m.group('mod'))
        elif m.group('use'): yield 'use', inner, m.group('ubody'), m.start(), scope is not None
        elif m.group('def') and scope is not None: yield 'def', scope, m.group('def'), m.start(), False
        elif m.group('macro'):
            exported = 'macro_export' in text[max(0, m.start() - 80):m.start()]
            yield 'def', inner, m.group('macro'), m.start(), exported
        elif m.group('path'): yield 'path', inner, m.group('path'), m.start(), False

def main():
    explain = os.path.normpath(sys.argv[sys.argv.index('--edges') + 1]) if '--edges' in sys.argv else None
    if not os.path.isdir('crates'):  # run from elsewhere: scripts/ sits in the repository root
        os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    sys.setrecursionlimit(10000)
    mods, parent_file, texts, crates = {}, {}, {}, set()
    refs = []  # (file, modkey, segments, text, pos)

    def load(root, path, file, declared_by):
        text = strip_cfg_test(strip(open(file, encoding='utf-8').read()))
        if text is None: return
        texts[file] = text; parent_file[file] = declared_by
        base = os.path.dirname(file) if os.path.basename(file) in ('mod.rs', 'lib.rs', 'main.rs') \
            or file == root else file[:-3]
        mods[(root, path)] = Module(file)
        for kind, scope, val, pos, flag in scan(text):
            key = (root, path + scope)
            mod = mods.setdefault(key, Module(file))
            if kind == 'mod':
                mod.children[val] = (root, path + scope + (val,))
                if flag: mods.setdefault(mod.children[val], Module(file))
                else:
                    d = os.path.join(base, *scope)
                    for cand in (os.path.join(d, val + '.rs'), os.path.join(d, val, 'mod.rs')):
                        if os.path.isfile(cand): load(root, path + scope + (val,), cand, file); break
            elif kind == 'def':
                mod.defs[val] = file
                if flag: mods[(root, ())].defs.setdefault(val, file)
            elif kind == 'use':
                for segs, name in use_leaves(val):
                    if name == '*': mod.globs.append((key, segs))
                    elif name != '_': mod.uses.setdefault(name, (key, segs))
                    refs.append((file, key, segs, 'use ' + '::'.join(segs) + ('::*' if name == '*' else ''), pos))
            elif kind == 'path':
                refs.append((file, key, re.split(r'\s*::\s*', val), re.sub(r'\s+', '', val), pos))

    for crate in sorted(os.listdir('crates')):
        src = os.path.join('crates', crate, 'src')
        roots = [os.path.join(src, f) for f in ('lib.rs', 'main.rs')]
        if os.path.isdir(os.path.join(src, 'bin')):
            roots += sorted(os.path.join(src, 'bin', f) for f in os.listdir(os.path.join(src, 'bin')) if f.endswith('.rs'))
        for root in roots:
            if os.path.isfile(root): crates.add(crate); load(root, (), root, None)

    def lookup(key, name, seen):
        """('mod', key) | ('item', file) | ('ext',) | None (not found)."""
        if (key, name) in seen: return ('ext',)
        seen.add((key, name)); m = mods.get(key)
        if m is None: return None
        if name in m.children: return ('mod', m.children[name])
        if name in m.defs: return ('item', m.defs[name])
        if name in m.uses: return resolve(*m.uses[name], seen) or ('ext',)
        for gkey, gsegs in m.globs:
            base = resolve(gkey, gsegs, seen)
            if base and base[0] == 'mod':
                r = lookup(base[1], name, seen)
                if r: return r
        return None

    def resolve(key, segs, seen):
        root, path = key
        relative = segs[0] not in ('crate', '$crate', 'self', 'super')
        if segs[0] in ('crate', '$crate'): cur, rest = (root, ()), segs[1:]
        elif segs[0] == 'self': cur, rest = key, segs[1:]
        elif segs[0] == 'super':
            i = 0
            while i < len(segs) and segs[i] == 'super': i += 1
            cur, rest = (root, path[:max(0, len(path) - i)]), segs[i:]
        else: cur, rest = key, segs
        for k, name in enumerate(rest):
            r = lookup(cur, name, seen)
            if r is None:  # not found: counts as defined in cur's file, unless a relative first segment
                return ('item', mods[cur].file) if (k or not relative) and cur in mods else None
            if r[0] != 'mod': return None if r[0] == 'ext' else r
            cur = r[1]
        return ('mod', cur)

    edges = defaultdict(list)  # (a, b) -> [(line, text)]
    line_starts = {f: [0] + [m.end() for m in re.finditer('\n', t)] for f, t in texts.items()}
    for file, key, segs, text, pos in refs:
        r = resolve(key, segs, set())
        if r is None: continue
        target = mods[r[1]].file if r[0] == 'mod' else r[1]
        if target != file:
            edges[(file, target)].append((bisect.bisect_right(line_starts[file], pos), text))

    def show(a, b, items, note):
        print(f'  {a} -> {b}{note}')
        by_text = defaultdict(set)
        for line, text in items: by_text[text].add(line)
        for text, lines in sorted(by_text.items(), key=lambda t: min(t[1])):
            print(f'      {a}:{",".join(map(str, sorted(lines)))}  {text}')

    if explain:
        for (a, b), items in sorted(edges.items()):
            if a == explain: show(a, b, items, '')
        return 0

    def sccs(nodes, es):
        """Strongly connected components of size > 1 (small graphs: by reachability)."""
        graph, reach = defaultdict(set), {}
        for x, y in es: graph[x].add(y)
        for v in nodes:
            seen, todo = set(), [v]
            while todo:
                for w in graph[todo.pop()] - seen: seen.add(w); todo.append(w)
            reach[v] = seen
        comps = {frozenset(w for w in reach[v] if v in reach[w]) | {v} for v in nodes}
        return sorted((set(c) for c in comps if len(c) > 1), key=sorted)

    is_pc = lambda a, b: parent_file.get(a) == b or parent_file.get(b) == a
    strict = [e for e in edges if not is_pc(*e)]
    failing, allowed = sccs(texts, strict), sccs(texts, list(edges))
    allowed = [c for c in allowed if not any(c & f for f in failing)]
    for comp in allowed:
        print('parent/child (allowed): ' + ' <-> '.join(sorted(comp)))
    for comp in failing:
        print(f'\nFAIL: import cycle among {len(comp)} files:')
        for (a, b), items in sorted(edges.items()):
            if a in comp and b in comp:
                note = '  (parent/child edge, not counted)' if is_pc(a, b) else ''
                show(a, b, items, note)
    print(f'{"FAILED" if failing else "ok"}: {len(crates)} crates, {len(texts)} files, '
          f'{len(edges)} edges; {len(failing)} forbidden cycle(s), {len(allowed)} parent/child cycle(s) allowed')
    return 1 if failing else 0

if __name__ == '__main__':
    sys.exit(main())
