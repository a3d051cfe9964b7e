import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pythonTokens } from '../static/js/highlight.js';
import { lineRange } from '../static/js/editor.js';

const classes = (src) => pythonTokens(src).filter((t) => t.cls).map((t) => [t.cls, t.text]);

test('tokens cover the source exactly', () => {
  for (const src of ['', 'x', 'def f(a, b=1):\n    return a  # c\n', '"""open', "r'\\'", '\n\n  ']) {
    assert.equal(pythonTokens(src).map((t) => t.text).join(''), src);
  }
});

test('Python classes', () => {
  assert.deepEqual(classes('def foo(self):\n    return None  # done'), [
    ['tok-kw', 'def'],
    ['tok-def', 'foo'],
    ['tok-self', 'self'],
    ['tok-kw', 'return'],
    ['tok-const', 'None'],
    ['tok-com', '# done']
  ]);
  assert.deepEqual(classes('@dataclass\nclass A: x = len("s") + 0x1F + 1.5e3j'), [
    ['tok-deco', '@dataclass'],
    ['tok-kw', 'class'],
    ['tok-def', 'A'],
    ['tok-builtin', 'len'],
    ['tok-str', '"s"'],
    ['tok-num', '0x1F'],
    ['tok-num', '1.5e3j']
  ]);
  assert.deepEqual(classes("f'{x}' + b'''a\n#not'''"), [
    ['tok-str', "f'{x}'"],
    ['tok-str', "b'''a\n#not'''"]
  ]);
});

test('lineRange spans whole lines of a selection', () => {
  const v = 'ab\ncd\nef';
  assert.deepEqual(lineRange(v, 4, 4), [3, 5]);
  assert.deepEqual(lineRange(v, 1, 4), [0, 5]);
  assert.deepEqual(lineRange(v, 0, 6), [0, 5]); // a selection ending at a line start stops before it
  assert.deepEqual(lineRange(v, 7, 8), [6, 8]);
});
