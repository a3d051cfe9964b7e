// Python syntax highlighting for the plain editor: a tokenizer (pure) and a
// renderer that builds text nodes and spans.

import { el } from './dom.js';

const PY_KEYWORDS = new Set(
  ('and as assert async await break class continue def del elif else except finally for from global if import in is ' +
    'lambda nonlocal not or pass raise return try while with yield match case').split(' ')
);
const PY_CONSTANTS = new Set(['True', 'False', 'None', 'Ellipsis', 'NotImplemented', '__name__', '__file__']);
const PY_BUILTINS = new Set(
  ('abs all any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile complex delattr dict dir ' +
    'divmod enumerate eval exec filter float format frozenset getattr globals hasattr hash help hex id input int ' +
    'isinstance issubclass iter len list locals map max memoryview min next object oct open ord pow print property ' +
    'range repr reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip ' +
    'Exception BaseException ValueError TypeError KeyError IndexError AttributeError RuntimeError NameError ' +
    'ImportError ModuleNotFoundError StopIteration ZeroDivisionError KeyboardInterrupt OSError FileNotFoundError ' +
    'NotImplementedError AssertionError').split(' ')
);
const PY_TOKEN = new RegExp(
  [
    '(#[^\\n]*)', // 1 comment
    '((?:[rRbBuUfF]{1,2})?(?:\'\'\'[\\s\\S]*?(?:\'\'\'|$(?![\\s\\S]))|"""[\\s\\S]*?(?:"""|$(?![\\s\\S]))))', // 2 triple-quoted string
    '((?:[rRbBuUfF]{1,2})?(?:\'(?:[^\'\\\\\\n]|\\\\[\\s\\S])*(?:\'|$)|"(?:[^"\\\\\\n]|\\\\[\\s\\S])*(?:"|$)))', // 3 string
    '((?:\\b|(?=\\.\\d))(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\\d[\\d_]*\\.?[\\d_]*|\\.\\d[\\d_]*)(?:[eE][+-]?\\d[\\d_]*)?[jJ]?))', // 4 number
    '(@[A-Za-z_][\\w.]*)', // 5 decorator
    '([A-Za-z_][A-Za-z0-9_]*)' // 6 identifier
  ].join('|'),
  'gm'
);

// pythonTokens splits src into [{text, cls}] covering all of it; cls is a
// tok-* class or null for plain text. Pure: no DOM.
export function pythonTokens(src) {
  const out = [];
  const re = new RegExp(PY_TOKEN.source, PY_TOKEN.flags);
  let last = 0;
  let afterDef = false;
  let m;
  while ((m = re.exec(src)) !== null) {
    if (m[0] === '') {
      re.lastIndex++;
      continue;
    }
    if (m.index > last) out.push({ text: src.slice(last, m.index), cls: null });
    let cls = null;
    if (m[1] !== undefined) cls = 'tok-com';
    else if (m[2] !== undefined || m[3] !== undefined) cls = 'tok-str';
    else if (m[4] !== undefined) cls = 'tok-num';
    else if (m[5] !== undefined) cls = 'tok-deco';
    else if (m[6] !== undefined) {
      const w = m[6];
      if (afterDef) cls = 'tok-def';
      else if (PY_KEYWORDS.has(w)) cls = 'tok-kw';
      else if (PY_CONSTANTS.has(w)) cls = 'tok-const';
      else if (PY_BUILTINS.has(w)) cls = 'tok-builtin';
      else if (w === 'self' || w === 'cls') cls = 'tok-self';
      afterDef = w === 'def' || w === 'class';
    }
    if (m[6] === undefined) afterDef = false;
    out.push({ text: m[0], cls });
    last = m.index + m[0].length;
  }
  if (last < src.length) out.push({ text: src.slice(last), cls: null });
  return out;
}

// highlightPython builds highlighted DOM for Python source.
export function highlightPython(src) {
  const frag = document.createDocumentFragment();
  for (const t of pythonTokens(src)) {
    frag.appendChild(t.cls ? el('span', t.cls, t.text) : document.createTextNode(t.text));
  }
  return frag;
}
