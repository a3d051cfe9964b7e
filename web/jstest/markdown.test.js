import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defuse, markdownToHtml, resolveUrl, workspacePath } from '../static/js/markdown.js';

test('markdown renders headings, lists, code and tables', () => {
  const html = markdownToHtml('# Title\n\n- one\n- two\n\n`code` and **bold**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n');
  assert.match(html, /<h1>Title<\/h1>/);
  assert.match(html, /<ul>\s*<li>one<\/li>\s*<li>two<\/li>\s*<\/ul>/);
  assert.match(html, /<code>code<\/code> and <strong>bold<\/strong>/);
  assert.match(html, /<table>/);
});

test('math stays text: no emphasis inside it, escaped', () => {
  assert.match(markdownToHtml('Euler: $e^{i\\pi} + 1 = 0$ and $a_1 * b_2 * c$'), /<span class="math">\$a_1 \* b_2 \* c\$<\/span>/);
  assert.match(markdownToHtml('$$\n\\sum_{i=1}^n x_i < y\n$$'), /<span class="math">\$\$\n\\sum_\{i=1\}\^n x_i &lt; y\n\$\$<\/span>/);
  // Money is not math.
  assert.doesNotMatch(markdownToHtml('costs $5 and $6'), /math/);
  assert.doesNotMatch(markdownToHtml('`$x$`'), /math/);
  assert.doesNotMatch(markdownToHtml('a $ b $ c'), /math/);
});

test('raw HTML passes markdown-it: the sanitiser must run after it', () => {
  // markdownToHtml alone is NOT safe; renderMarkdown sanitises (browser test).
  assert.match(markdownToHtml('<img src=x onerror=alert(1)>'), /onerror/);
});

test('workspace paths', () => {
  const ok = { 'plot.png': 'plot.png', './a/b.png': 'a/b.png', 'my%20file.png': 'my file.png', 'a.png?x=1#f': 'a.png' };
  for (const [u, want] of Object.entries(ok)) assert.equal(workspacePath(u), want, u);
  for (const u of ['', '/etc/passwd', '../x', 'a/../../x', 'a//b', 'http://h/x.png', 'javascript:alert(1)', 'data:x', '\\\\host\\x', '%2e%2e/x', 'a%00b', '%zz', 'C:/x', '//host/x.png', 'a\\b']) {
    assert.equal(workspacePath(u), null, u);
  }
});

test('resolveUrl: images only from data: or the workspace, links safe', () => {
  const fileUrl = (p) => '/v1/sessions/s/files/' + p + '?token=k';
  const noSession = () => null;
  assert.equal(resolveUrl('plot.png', 'img', fileUrl), '/v1/sessions/s/files/plot.png?token=k');
  assert.equal(resolveUrl('plot.png', 'img', noSession), null);
  assert.equal(resolveUrl('data:image/png;base64,iVBORw0KGgo=', 'img', fileUrl), 'data:image/png;base64,iVBORw0KGgo=');
  for (const u of ['https://example.com/x.png', '//example.com/x.png', 'data:text/html;base64,PHNjcmlwdD4=', 'javascript:alert(1)', 'blob:x', '/v1/sessions/other/files/x']) {
    assert.equal(resolveUrl(u, 'img', fileUrl), null, u);
  }
  assert.equal(resolveUrl('https://example.com/', 'a', fileUrl), 'https://example.com/');
  assert.equal(resolveUrl('mailto:a@b.c', 'a', fileUrl), 'mailto:a@b.c');
  assert.equal(resolveUrl('#section', 'a', fileUrl), '#section');
  assert.equal(resolveUrl('data.csv', 'a', fileUrl), '/v1/sessions/s/files/data.csv?token=k');
  for (const u of ['javascript:alert(1)', 'JaVaScRiPt:x', 'data:text/html,x', 'vbscript:x', '//evil.example/', '/v1/sessions/x']) {
    assert.equal(resolveUrl(u, 'a', fileUrl), null, u);
  }
});

test('defuse renames handlers and styles in tags, and only there', () => {
  assert.equal(defuse('<img src=x onerror=alert(1)>'), '<img src=x data-dropped=alert(1)>');
  assert.equal(defuse('<p STYLE="color: red" OnClick=\'x()\' title="a > onload=b">t onload=1</p>'), '<p data-dropped="color: red" data-dropped=\'x()\' title="a > onload=b">t onload=1</p>');
  assert.equal(defuse('<svg/onload=alert(1)>'), '<svg/onload=alert(1)>', 'the sanitiser drops what this misses');
  assert.equal(defuse('<a href="x" onmouseover>'), '<a href="x" data-dropped>');
  assert.equal(defuse('&lt;img onerror=x&gt; <code>a onload=b</code>'), '&lt;img onerror=x&gt; <code>a onload=b</code>');
  const md = markdownToHtml('x <img src=y onerror=alert(1)> and `<b onclick=1>`');
  assert.doesNotMatch(defuse(md), /<[^>]*\son\w+=/);
  assert.match(defuse(md), /<code>&lt;b onclick=1&gt;<\/code>/);
});
