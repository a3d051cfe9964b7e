// The widgets' HTML sanitiser (DOMPurify): kernel markup that a widget
// shows (the HTML and HTMLMath widgets' values, HTML descriptions) goes
// through it before it reaches the page. build.mjs makes it the module of
// `import sanitize from 'sanitize-html'` too (base-manager's sanitiser of
// descriptions, not bundled), and puts sanitizedFragment in place of the
// controls' innerHTML assignments of values.

import DOMPurify from 'dompurify';

const purify = DOMPurify(window);
purify.addHook('afterSanitizeAttributes', (node) => {
  // Links open in a new tab (never in place of the notebook), without a referrer.
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
  // The CSP lets images come from data: and blob: URLs only: others would
  // only be reported.
  if (node.tagName === 'IMG' && node.hasAttribute('src') && !/^(data|blob):/i.test(node.getAttribute('src'))) {
    node.removeAttribute('src');
  }
});

// Style attributes and elements are blocked by the page's CSP anyway; forms,
// their controls and frames have no business in a widget's text.
const BASE = {
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option', 'iframe', 'frame', 'frameset', 'object', 'embed', 'link', 'meta', 'base'],
  FORBID_ATTR: ['style', 'srcset', 'action', 'formaction', 'background', 'poster', 'ping', 'usemap'],
  ALLOW_DATA_ATTR: false
};

// defuse renames event handler and style attributes in the start tags of
// html before it is parsed (as js/markdown.js does): the sanitiser removes
// them anyway, and parsing runs them nowhere, but Chromium checks such
// attributes against the CSP as its parser meets them and reports every
// one as a violation.
const START_TAG = /<[a-zA-Z][^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*>/g;
const ATTRIBUTE = /(\s)([^\s"'>\/=]+)(\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?/g;
function defuse(html) {
  return html.replace(START_TAG, (tag) => tag.replace(ATTRIBUTE, (m, space, name, value) => (/^(on|style$)/i.test(name) ? space + 'data-dropped' + (value || '') : m)));
}

/** @param {unknown} html */
function text(html) {
  return defuse(String(html == null ? '' : html));
}

// sanitizedFragment returns kernel HTML as a sanitised DocumentFragment.
export function sanitizedFragment(html) {
  return purify.sanitize(text(html), { ...BASE, RETURN_DOM_FRAGMENT: true });
}

// sanitizeInline sanitises an HTML description (description_allow_html),
// to the tags and attributes opts names when it names them (sanitize-html's
// allowedTags and allowedAttributes, as base-manager passes them).
export function sanitizeInline(html, opts) {
  const cfg = { ...BASE };
  if (opts && Array.isArray(opts.allowedTags)) cfg.ALLOWED_TAGS = opts.allowedTags.filter((t) => !BASE.FORBID_TAGS.includes(t));
  if (opts && opts.allowedAttributes && typeof opts.allowedAttributes === 'object') {
    const attrs = new Set(['target', 'rel']);
    for (const list of Object.values(opts.allowedAttributes)) {
      for (const a of Array.isArray(list) ? list : []) if (typeof a === 'string' && !a.includes('*') && a !== 'style') attrs.add(a);
    }
    cfg.ALLOWED_ATTR = [...attrs];
  }
  return purify.sanitize(text(html), cfg);
}

export default sanitizeInline;
