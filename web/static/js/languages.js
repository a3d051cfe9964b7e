// @ts-check
// The notebook's languages: the kernels the gateway runs (GET /v1/kernels),
// what a notebook file says about its language (metadata.kernelspec and
// metadata.language_info) and the prompt's label. Pure: nothing here
// touches the DOM or the network.
//
// A notebook runs in one language at a time, named by the gateway's kernel
// name (python3, r, javascript, typescript, bash). Saved notebooks carry
// that name in metadata.kernelspec.name; opening one accepts the gateway's
// names and aliases (ir, deno, ...) and the language (R, typescript, ...).

/** @import { JsonObject } from './nbformat.js' */

/**
 * A kernel the gateway runs, as GET /v1/kernels lists it.
 * @typedef {object} Kernel
 * @property {string} name the kernel's canonical name: what requests name
 * @property {string} language
 * @property {string} display_name
 * @property {string[]} aliases other names requests may use
 * @property {string} [label] the prompt's label (the gateway's kernel registry)
 * @property {string} [mode] the editor's syntax mode, '' for none
 * @property {LanguageInfo} [info] its language_info, without the version
 */

/**
 * nbformat's metadata.language_info (the fields a kernel's
 * kernel_info_reply has; version only when known).
 * @typedef {object} LanguageInfo
 * @property {string} name
 * @property {string} [version]
 * @property {string} file_extension
 * @property {string} mimetype
 * @property {string | {name: string, version: number}} [codemirror_mode]
 * @property {string} [pygments_lexer]
 * @property {string} [nbconvert_exporter]
 */

/**
 * nbformat's metadata.kernelspec.
 * @typedef {{name: string, display_name: string, language: string}} Kernelspec
 */

/**
 * What the page knows of a language beyond what the gateway lists: the
 * prompt's label, the editor's syntax mode and the language_info a saved
 * notebook gets (as the language's usual Jupyter kernel reports it).
 * @typedef {object} Known
 * @property {Kernel} kernel the gateway's description (used before GET /v1/kernels answered)
 * @property {string} label the prompt's label
 * @property {string} mode the editor's syntax mode (editor.js), '' for none
 * @property {LanguageInfo} info
 */

export const DEFAULT_KERNEL = 'python3';

/** @type {{[name: string]: Known}} */
const KNOWN = {
  python3: {
    kernel: { name: 'python3', language: 'python', display_name: 'Python 3', aliases: ['python', 'py', 'python3'] },
    label: 'Python',
    mode: 'python',
    info: {
      name: 'python',
      file_extension: '.py',
      mimetype: 'text/x-python',
      codemirror_mode: { name: 'ipython', version: 3 },
      pygments_lexer: 'ipython3',
      nbconvert_exporter: 'python'
    }
  },
  r: {
    kernel: { name: 'r', language: 'R', display_name: 'R', aliases: ['r', 'ir'] },
    label: 'R',
    mode: 'r',
    info: { name: 'R', file_extension: '.r', mimetype: 'text/x-r-source', codemirror_mode: 'r', pygments_lexer: 'r' }
  },
  javascript: {
    kernel: { name: 'javascript', language: 'javascript', display_name: 'JavaScript (Deno)', aliases: ['js', 'javascript', 'deno', 'node'] },
    label: 'JS',
    mode: 'javascript',
    info: { name: 'javascript', file_extension: '.js', mimetype: 'text/javascript', codemirror_mode: 'javascript', pygments_lexer: 'javascript' }
  },
  typescript: {
    kernel: { name: 'typescript', language: 'typescript', display_name: 'TypeScript (Deno)', aliases: ['ts', 'typescript'] },
    label: 'TS',
    mode: 'typescript',
    info: {
      name: 'typescript',
      file_extension: '.ts',
      mimetype: 'text/x.typescript',
      codemirror_mode: 'typescript',
      pygments_lexer: 'typescript',
      nbconvert_exporter: 'script'
    }
  },
  bash: {
    kernel: { name: 'bash', language: 'bash', display_name: 'Bash', aliases: ['bash', 'sh', 'shell'] },
    label: 'Bash',
    mode: 'shell',
    info: { name: 'bash', file_extension: '.sh', mimetype: 'text/x-sh', codemirror_mode: 'shell', pygments_lexer: 'bash' }
  },
  java: {
    kernel: { name: 'java', language: 'java', display_name: 'Java', aliases: ['java', 'jshell'] },
    label: 'Java',
    mode: '',
    info: { name: 'java', file_extension: '.java', mimetype: 'text/x-java', codemirror_mode: 'text/x-java', pygments_lexer: 'java' }
  }
};

// knownTable is KNOWN as data, for the test that checks it against the
// gateway's kernel registry (kernel/kernels).
/** @returns {{[name: string]: Known}} */
export function knownTable() {
  return JSON.parse(JSON.stringify(KNOWN));
}

/**
 * isObject reports whether v is a non-null object that is not an array.
 * @param {unknown} v
 * @returns {v is JsonObject}
 */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** @param {unknown} v */
const str = (v) => (typeof v === 'string' ? v : '');

// knownKernels is what the page assumes the gateway runs before it has
// said: Python only.
/** @returns {Kernel[]} */
export function knownKernels() {
  return [Object.assign({}, KNOWN[DEFAULT_KERNEL].kernel)];
}

// parseKernels reads the answer of GET /v1/kernels ({kernels: [...]},
// hostile input): the kernels with a name, in the server's order. An
// answer with none gives null.
/**
 * @param {unknown} reply
 * @returns {Kernel[] | null}
 */
export function parseKernels(reply) {
  if (!isObject(reply) || !Array.isArray(reply.kernels)) return null;
  /** @type {Kernel[]} */
  const out = [];
  const seen = new Set();
  for (const k of reply.kernels) {
    if (!isObject(k) || !str(k.name) || seen.has(k.name)) continue;
    seen.add(k.name);
    /** @type {Kernel} */
    const kernel = {
      name: k.name,
      language: str(k.language) || k.name,
      display_name: str(k.display_name) || k.name,
      aliases: Array.isArray(k.aliases) ? k.aliases.filter((a) => typeof a === 'string') : []
    };
    if (str(k.label)) kernel.label = str(k.label);
    if (typeof k.mode === 'string') kernel.mode = k.mode;
    const li = k.language_info;
    if (isObject(li) && str(li.name) && str(li.file_extension) && str(li.mimetype)) {
      /** @type {LanguageInfo} */
      const info = { name: str(li.name), file_extension: str(li.file_extension), mimetype: str(li.mimetype) };
      if (str(li.pygments_lexer)) info.pygments_lexer = str(li.pygments_lexer);
      if (str(li.nbconvert_exporter)) info.nbconvert_exporter = str(li.nbconvert_exporter);
      const cm = li.codemirror_mode;
      if (typeof cm === 'string' && cm) info.codemirror_mode = cm;
      else if (isObject(cm) && str(cm.name) && typeof cm.version === 'number') info.codemirror_mode = { name: cm.name, version: cm.version };
      kernel.info = info;
    }
    out.push(kernel);
  }
  return out.length ? out : null;
}

// kernelOf returns the description of kernel name: the gateway's when it
// lists it, else what the page knows, else a bare one.
/**
 * @param {string} name
 * @param {Kernel[] | null} installed
 * @returns {Kernel}
 */
export function kernelOf(name, installed) {
  const k = (installed || []).find((x) => x.name === name);
  if (k) return k;
  const known = Object.prototype.hasOwnProperty.call(KNOWN, name) ? KNOWN[name] : null;
  return known ? known.kernel : { name, language: name, display_name: name, aliases: [] };
}

// label is the prompt's label of kernel name ("R", "Python", "TS").
/**
 * @param {string} name
 * @param {Kernel[] | null} installed
 * @returns {string}
 */
export function label(name, installed) {
  const listed = (installed || []).find((x) => x.name === name);
  if (listed && listed.label) return listed.label;
  if (Object.prototype.hasOwnProperty.call(KNOWN, name)) return KNOWN[name].label;
  return kernelOf(name, installed).display_name;
}

// editorMode is the syntax mode of kernel name's editor (editor.js), ''
// for plain text.
/**
 * @param {string} name
 * @param {Kernel[] | null} [installed]
 * @returns {string}
 */
export function editorMode(name, installed) {
  const listed = (installed || []).find((x) => x.name === name);
  if (listed && typeof listed.mode === 'string') return listed.mode;
  return Object.prototype.hasOwnProperty.call(KNOWN, name) ? KNOWN[name].mode : '';
}

// resolve returns the canonical name of a kernel a request or file names
// (its name or an alias, any case) among kernels, or null.
/**
 * @param {unknown} name
 * @param {Kernel[]} kernels
 * @returns {string | null}
 */
export function resolve(name, kernels) {
  const n = str(name).trim().toLowerCase();
  if (!n) return null;
  for (const k of kernels) if (k.name.toLowerCase() === n) return k.name;
  for (const k of kernels) if (k.aliases.some((a) => a.toLowerCase() === n)) return k.name;
  return null;
}

// kernelOfNotebook returns the kernel a notebook file (its parsed JSON)
// asks for among kernels (the gateway's list; what the page knows while it
// is unknown), or null when it names none of them. It tries
// metadata.kernelspec.name as a kernel's name, then the language
// (kernelspec.language, then language_info.name), then the name as an
// alias: Deno's kernelspec, {name: "deno", language: "typescript"}, is a
// TypeScript notebook although "deno" is also a JavaScript alias.
/**
 * @param {unknown} nb
 * @param {Kernel[] | null} installed
 * @returns {{kernel: string | null, asked: string}} asked: what the file names ('' for nothing)
 */
export function kernelOfNotebook(nb, installed) {
  const kernels = installed || Object.keys(KNOWN).map((n) => KNOWN[n].kernel);
  const meta = isObject(nb) && isObject(nb.metadata) ? nb.metadata : {};
  const spec = isObject(meta.kernelspec) ? meta.kernelspec : {};
  const info = isObject(meta.language_info) ? meta.language_info : {};
  const name = str(spec.name).trim().toLowerCase();
  const asked = str(spec.display_name) || str(spec.name) || str(spec.language) || str(info.name);
  const byName = kernels.find((k) => k.name.toLowerCase() === name);
  if (byName) return { kernel: byName.name, asked };
  for (const lang of [str(spec.language), str(info.name)]) {
    const l = lang.trim().toLowerCase();
    if (!l) continue;
    const k = kernels.find((x) => x.language.toLowerCase() === l) || kernels.find((x) => x.name.toLowerCase() === l);
    if (k) return { kernel: k.name, asked };
  }
  return { kernel: resolve(name, kernels), asked };
}

// kernelspec is metadata.kernelspec of a notebook in kernel name.
/**
 * @param {string} name
 * @param {Kernel[] | null} installed
 * @returns {Kernelspec}
 */
export function kernelspec(name, installed) {
  const k = kernelOf(name, installed);
  return { name: k.name, display_name: k.display_name, language: k.language };
}

// languageInfo is metadata.language_info of a notebook in kernel name:
// fromKernel (the language_info of the kernel's kernel_info_reply, when
// the page has it: hostile input) over what the page knows. The kernel's
// fields count only when it names the same language (Deno reports
// TypeScript for JavaScript too).
/**
 * @param {string} name
 * @param {Kernel[] | null} installed
 * @param {unknown} [fromKernel]
 * @returns {LanguageInfo}
 */
export function languageInfo(name, installed, fromKernel) {
  const listed = (installed || []).find((x) => x.name === name);
  const known = Object.prototype.hasOwnProperty.call(KNOWN, name) ? KNOWN[name] : null;
  /** @type {LanguageInfo} */
  const info = listed && listed.info
    ? Object.assign({}, listed.info)
    : known
      ? Object.assign({}, known.info)
      : { name: kernelOf(name, installed).language, file_extension: '.txt', mimetype: 'text/plain' };
  if (isObject(fromKernel) && str(fromKernel.name).toLowerCase() === info.name.toLowerCase()) {
    if (str(fromKernel.version)) info.version = fromKernel.version;
    for (const f of /** @type {const} */ (['file_extension', 'mimetype', 'pygments_lexer', 'nbconvert_exporter'])) {
      if (str(fromKernel[f])) info[f] = fromKernel[f];
    }
    const cm = fromKernel.codemirror_mode;
    if (typeof cm === 'string' && cm) info.codemirror_mode = cm;
    else if (isObject(cm) && str(cm.name) && typeof cm.version === 'number') info.codemirror_mode = { name: cm.name, version: cm.version };
  }
  return info;
}

// notebookMetadata is the metadata of a notebook in kernel name.
/**
 * @param {string} name
 * @param {Kernel[] | null} installed
 * @param {unknown} [fromKernel] as in languageInfo
 * @returns {{kernelspec: Kernelspec, language_info: LanguageInfo}}
 */
export function notebookMetadata(name, installed, fromKernel) {
  return { kernelspec: kernelspec(name, installed), language_info: languageInfo(name, installed, fromKernel) };
}
