// @ts-check
// Markdown for Markdown cells and text/markdown outputs: markdown-it turns
// it into HTML (raw HTML allowed, as in Jupyter), DOMPurify sanitises that
// into a DOM fragment, and only then does it reach the page.
//
// What survives: HTML formatting only (no script, style, iframe, form,
// SVG or MathML, no event handlers or style attributes). Images load only
// from data:image URLs or from the session's workspace (a relative path,
// rewritten to the files API); links open in a new tab with
// rel="noopener noreferrer", relative ones to the workspace file. Math
// ($…$, $$…$$) is kept as text: no renderer is bundled.

import { DOMPurify, MarkdownIt } from '../vendor/vendor.js';

/** @import { PurifyConfig, StateInline } from '../vendor/vendor.js' */

/**
 * The URL of a workspace file, or null without a session.
 * @typedef {(path: string) => string | null} FileUrl
 */

const md = new MarkdownIt({ html: true, linkify: false, typographer: false });
md.inline.ruler.before('escape', 'math_text', mathText);
md.renderer.rules.math_text = (tokens, idx) => '<span class="math">' + md.utils.escapeHtml(tokens[idx].content) + '</span>';

// mathText keeps $…$ and $$…$$ as one text token, so that markdown does not
// read _ and * inside them as emphasis. Inline $…$ follows pandoc: no
// space after the opening or before the closing $, no digit after it.
/**
 * @param {StateInline} state
 * @param {boolean} silent
 * @returns {boolean}
 */
function mathText(state, silent) {
  const src = state.src;
  const start = state.pos;
  if (src.charCodeAt(start) !== 0x24) return false;
  const delim = src.charCodeAt(start + 1) === 0x24 ? '$$' : '$';
  const from = start + delim.length;
  let end = src.indexOf(delim, from);
  while (end > 0 && src.charCodeAt(end - 1) === 0x5c) end = src.indexOf(delim, end + 1);
  if (end <= from) return false;
  if (delim === '$' && (/\s/.test(src[from]) || /\s/.test(src[end - 1]) || /\d/.test(src[end + 1] || ''))) return false;
  if (!silent) {
    const t = state.push('math_text', 'span', 0);
    t.content = src.slice(start, end + delim.length);
  }
  state.pos = end + delim.length;
  return true;
}

// markdownToHtml renders markdown to HTML that is NOT safe yet: it must go
// through renderMarkdown's sanitiser before it reaches a page.
/**
 * @param {unknown} src
 * @returns {string}
 */
export function markdownToHtml(src) {
  return md.render(String(src));
}

const DATA_IMAGE = /^data:image\/(png|jpeg|gif|webp|bmp|svg\+xml);base64,[a-z0-9+/=\s]*$/i;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

// workspacePath returns the workspace file a relative URL names, or null
// when it is not one (absolute, with a scheme, escaping with .., control
// characters...). The server checks again.
/**
 * @param {unknown} url
 * @returns {string | null}
 */
export function workspacePath(url) {
  let p = String(url || '').trim().replace(/[?#].*$/, '');
  if (!p || SCHEME.test(p) || p.startsWith('/') || p.startsWith('\\')) return null;
  try {
    p = decodeURIComponent(p);
  } catch (_) {
    return null;
  }
  if (/[\x00-\x1f\x7f\\]/.test(p) || p.length > 1024) return null;
  const segs = p.split('/').filter((s) => s !== '.');
  if (!segs.length || segs.some((s) => s === '' || s === '..')) return null;
  return segs.join('/');
}

// resolveUrl decides what an img src (kind 'img') or link href (kind 'a')
// becomes: the URL to use, or null to drop it. fileUrl(path) is the
// download URL of a workspace file, or null without a session.
/**
 * @param {unknown} url
 * @param {'img' | 'a'} kind
 * @param {FileUrl} fileUrl
 * @returns {string | null}
 */
export function resolveUrl(url, kind, fileUrl) {
  const u = String(url || '').trim();
  if (kind === 'img') {
    if (DATA_IMAGE.test(u)) return u;
    const p = workspacePath(u);
    return p ? fileUrl(p) : null;
  }
  if (u.startsWith('#')) return u;
  if (/^(https?|mailto):/i.test(u)) return u;
  if (u.startsWith('//')) return null;
  const p = workspacePath(u);
  return p ? fileUrl(p) : null;
}

// A start tag (attribute values may hold '>' inside quotes).
const START_TAG = /<[a-zA-Z][^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*>/g;
const ATTRIBUTE = /(\s)([^\s"'>\/=]+)(\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?/g;

// defuse renames event handler and style attributes in the start tags of
// html before it is parsed. The sanitiser removes them anyway, and parsing
// runs them nowhere, but Chromium checks such attributes against the CSP
// as the parser meets them and reports every one as a violation. Text is
// untouched: markdown-it escapes every '<' that does not start a tag.
/**
 * @param {string} html
 * @returns {string}
 */
export function defuse(html) {
  return html.replace(START_TAG, (tag) =>
    tag.replace(ATTRIBUTE, (/** @type {string} */ m, /** @type {string} */ space, /** @type {string} */ name, /** @type {string | undefined} */ value) => (/^(on|style$)/i.test(name) ? space + 'data-dropped' + (value || '') : m))
  );
}

/** @type {PurifyConfig & {RETURN_DOM_FRAGMENT: true}} */
const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'script', 'iframe', 'frame', 'frameset', 'object', 'embed', 'form', 'input', 'button', 'textarea', 'select', 'option', 'link', 'meta', 'base', 'video', 'audio', 'source', 'track', 'picture', 'template', 'dialog', 'map', 'area'],
  FORBID_ATTR: ['style', 'srcset', 'action', 'formaction', 'background', 'poster', 'ping', 'usemap', 'target'],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true
};

let hooked = false;
/** @type {{fileUrl: FileUrl} | null} the sanitize call running (it is synchronous) */
let context = null;

function addHooks() {
  DOMPurify.addHook('afterSanitizeAttributes', (n) => {
    if (n.nodeType !== 1) return;
    const node = /** @type {Element} */ (n);
    const tag = node.tagName;
    // Outside renderMarkdown no URL resolves to a workspace file.
    const fileUrl = context ? context.fileUrl : () => null;
    if (tag === 'IMG') {
      const src = resolveUrl(node.getAttribute('src'), 'img', fileUrl);
      if (src) node.setAttribute('src', src);
      else {
        node.removeAttribute('src');
        node.classList.add('md-blocked');
      }
      node.setAttribute('referrerpolicy', 'no-referrer');
    } else if (tag === 'A') {
      const href = node.hasAttribute('href') ? resolveUrl(node.getAttribute('href'), 'a', fileUrl) : null;
      if (!href) node.removeAttribute('href');
      else {
        node.setAttribute('href', href);
        if (!href.startsWith('#')) {
          node.setAttribute('target', '_blank');
          node.setAttribute('rel', 'noopener noreferrer');
        }
      }
    } else {
      // Nothing else may make the page fetch anything.
      for (const a of ['src', 'href', 'cite', 'longdesc', 'data', 'xlink:href']) node.removeAttribute(a);
    }
  });
}

// renderMarkdown returns src rendered and sanitised, as a DocumentFragment.
// fileUrl(path) gives the URL of a workspace file (null without a session).
/**
 * @param {unknown} src
 * @param {FileUrl} fileUrl
 * @returns {DocumentFragment}
 */
export function renderMarkdown(src, fileUrl) {
  if (!hooked) {
    addHooks();
    hooked = true;
  }
  context = { fileUrl };
  try {
    return DOMPurify.sanitize(defuse(markdownToHtml(src)), PURIFY);
  } finally {
    context = null;
  }
}
