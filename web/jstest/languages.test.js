import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_KERNEL,
  editorMode,
  kernelOf,
  kernelOfNotebook,
  kernelspec,
  label,
  languageInfo,
  notebookMetadata,
  parseKernels,
  resolve
} from '../static/js/languages.js';
import { toNotebook } from '../static/js/nbformat.js';

// What GET /v1/kernels answers on a gateway with every language.
const all = parseKernels({
  kernels: [
    { name: 'python3', language: 'python', display_name: 'Python 3', aliases: ['python', 'py', 'python3'] },
    { name: 'r', language: 'R', display_name: 'R', aliases: ['r', 'ir'] },
    { name: 'javascript', language: 'javascript', display_name: 'JavaScript (Deno)', aliases: ['js', 'javascript', 'deno', 'node'] },
    { name: 'typescript', language: 'typescript', display_name: 'TypeScript (Deno)', aliases: ['ts', 'typescript'] },
    { name: 'bash', language: 'bash', display_name: 'Bash', aliases: ['bash', 'sh', 'shell'] }
  ]
});
const pythonOnly = parseKernels({ kernels: [{ name: 'python3', language: 'python', display_name: 'Python 3' }] });

test('parseKernels reads the gateway answer and survives hostile ones', () => {
  assert.equal(all.length, 5);
  assert.deepEqual(pythonOnly, [{ name: 'python3', language: 'python', display_name: 'Python 3', aliases: [] }]);
  assert.equal(parseKernels(null), null);
  assert.equal(parseKernels({ kernels: 'x' }), null);
  assert.equal(parseKernels({ kernels: [] }), null);
  assert.deepEqual(
    parseKernels({ kernels: [null, 3, { name: 7 }, { name: 'r', aliases: ['ir', 5] }, { name: 'r', display_name: 'again' }] }),
    [{ name: 'r', language: 'r', display_name: 'r', aliases: ['ir'] }]
  );
});

test('resolve takes names and aliases in any case', () => {
  assert.equal(resolve('R', all), 'r');
  assert.equal(resolve('ir', all), 'r');
  assert.equal(resolve(' TS ', all), 'typescript');
  assert.equal(resolve('deno', all), 'javascript');
  assert.equal(resolve('cobol', all), null);
  assert.equal(resolve('', all), null);
  assert.equal(resolve(undefined, all), null);
});

test('labels, kernels and editor modes', () => {
  assert.equal(DEFAULT_KERNEL, 'python3');
  assert.equal(label('r', all), 'R');
  assert.equal(label('python3', null), 'Python');
  assert.equal(label('typescript', all), 'TS');
  assert.equal(label('java', [{ name: 'java', language: 'java', display_name: 'Java', aliases: [] }]), 'Java');
  assert.equal(kernelOf('bash', null).display_name, 'Bash');
  assert.equal(kernelOf('nope', null).display_name, 'nope');
  assert.equal(kernelOf('__proto__', null).name, '__proto__');
  assert.equal(editorMode('python3'), 'python');
  assert.equal(editorMode('__proto__'), '');
});

test('kernelspec and language_info of each language', () => {
  assert.deepEqual(kernelspec('r', all), { name: 'r', display_name: 'R', language: 'R' });
  assert.deepEqual(kernelspec('typescript', all), { name: 'typescript', display_name: 'TypeScript (Deno)', language: 'typescript' });
  const want = {
    python3: ['python', '.py', 'text/x-python'],
    r: ['R', '.r', 'text/x-r-source'],
    javascript: ['javascript', '.js', 'text/javascript'],
    typescript: ['typescript', '.ts', 'text/x.typescript'],
    bash: ['bash', '.sh', 'text/x-sh']
  };
  for (const [k, [name, ext, mime]] of Object.entries(want)) {
    const li = languageInfo(k, all);
    assert.deepEqual([li.name, li.file_extension, li.mimetype], [name, ext, mime], k);
    assert.equal(li.version, undefined, k + ': no version unless the kernel said');
  }
  // The kernel's own language_info adds its version (and wins on the
  // fields it has), only for the same language.
  const r = languageInfo('r', all, { name: 'R', version: '4.2.2', mimetype: 'text/x-r-source', codemirror_mode: 'r', junk: 1 });
  assert.equal(r.version, '4.2.2');
  assert.equal(r.junk, undefined);
  assert.equal(languageInfo('javascript', all, { name: 'typescript', version: '5.0' }).version, undefined);
  assert.deepEqual(languageInfo('python3', all, { name: 'python', version: '3.11.2', codemirror_mode: { name: 'ipython', version: 3 } }).codemirror_mode, {
    name: 'ipython',
    version: 3
  });
  assert.equal(languageInfo('python3', all, { name: 'python', version: 7, codemirror_mode: [1] }).version, undefined);
  assert.equal(languageInfo('java', [{ name: 'java', language: 'java', display_name: 'Java', aliases: [] }]).name, 'java');
});

test('the gateway\'s label, editor mode and language_info win over the page\'s table', () => {
  const served = parseKernels({
    kernels: [
      {
        name: 'java', language: 'java', display_name: 'Java', aliases: ['java'], label: 'Java', mode: '',
        language_info: { name: 'java', file_extension: '.java', mimetype: 'text/x-java', codemirror_mode: 'text/x-java', junk: 1 }
      },
      { name: 'python3', language: 'python', display_name: 'Python 3', label: 'Py', mode: 'python', language_info: { name: 'python', file_extension: '.py', mimetype: 'text/x-python', codemirror_mode: { name: 'ipython', version: 3 } } },
      { name: 'cobol', language: 'cobol', display_name: 'COBOL', label: 7, mode: 'cobol', language_info: { name: 'cobol', mimetype: 'text/x-cobol' } }
    ]
  });
  assert.equal(label('python3', served), 'Py');
  assert.equal(label('java', served), 'Java');
  assert.equal(label('cobol', served), 'COBOL', 'a label that is not a string is ignored');
  assert.equal(editorMode('java', served), '');
  assert.equal(editorMode('python3', served), 'python');
  assert.equal(editorMode('python3'), 'python', 'the page\'s table before the gateway said');
  assert.deepEqual(languageInfo('java', served), { name: 'java', file_extension: '.java', mimetype: 'text/x-java', codemirror_mode: 'text/x-java' });
  assert.equal(languageInfo('cobol', served).file_extension, '.txt', 'a language_info without file_extension is ignored');
  assert.equal(languageInfo('java', null).mimetype, 'text/x-java', 'the page knows java before the gateway said');
});

test('a saved notebook carries its language, and opening it picks that language', () => {
  for (const k of ['python3', 'r', 'javascript', 'typescript', 'bash']) {
    const nb = JSON.parse(JSON.stringify(toNotebook([], false, notebookMetadata(k, all))));
    assert.equal(nb.metadata.kernelspec.name, k);
    assert.deepEqual(kernelOfNotebook(nb, all).kernel, k);
    assert.deepEqual(kernelOfNotebook(nb, null).kernel, k, k + ' before the gateway said');
  }
  // The default notebook is Python's.
  assert.equal(toNotebook([], false).metadata.kernelspec.name, 'python3');
  assert.equal(toNotebook([], false).metadata.language_info.file_extension, '.py');
});

test('kernelOfNotebook reads other tools\u2019 kernelspecs', () => {
  const nb = (kernelspec, language_info) => ({ metadata: { kernelspec, language_info }, cells: [] });
  // IRkernel
  assert.equal(kernelOfNotebook(nb({ name: 'ir', display_name: 'R', language: 'R' }, { name: 'R' }), all).kernel, 'r');
  // Deno: "deno" is a JavaScript alias, but its notebooks are TypeScript.
  assert.equal(kernelOfNotebook(nb({ name: 'deno', display_name: 'Deno', language: 'typescript' }, { name: 'typescript' }), all).kernel, 'typescript');
  // bash_kernel, IJavascript, ipykernel with another name
  assert.equal(kernelOfNotebook(nb({ name: 'bash', display_name: 'Bash', language: 'bash' }), all).kernel, 'bash');
  assert.equal(kernelOfNotebook(nb({ name: 'javascript', display_name: 'JavaScript (Node.js)', language: 'javascript' }), all).kernel, 'javascript');
  assert.equal(kernelOfNotebook(nb({ name: 'conda-env-py', display_name: 'Python [conda]', language: 'python' }), all).kernel, 'python3');
  // Only language_info
  assert.equal(kernelOfNotebook(nb(undefined, { name: 'R' }), all).kernel, 'r');
  // Not installed: nothing, and what the file asked for.
  assert.deepEqual(kernelOfNotebook(nb({ name: 'ir', display_name: 'R', language: 'R' }), pythonOnly), { kernel: null, asked: 'R' });
  assert.deepEqual(kernelOfNotebook(nb({ name: 'julia-1.9', display_name: 'Julia 1.9', language: 'julia' }), all), { kernel: null, asked: 'Julia 1.9' });
  // No metadata, hostile metadata.
  assert.deepEqual(kernelOfNotebook({ cells: [] }, all), { kernel: null, asked: '' });
  assert.deepEqual(kernelOfNotebook(null, all), { kernel: null, asked: '' });
  assert.deepEqual(kernelOfNotebook({ metadata: { kernelspec: { name: 5, language: ['R'] }, language_info: 'x' } }, all), { kernel: null, asked: '' });
});
