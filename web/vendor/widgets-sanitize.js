// The widgets' HTML sanitiser (DOMPurify): kernel markup that a widget
// shows (the HTML and HTMLMath widgets' values, HTML descriptions) goes
// through it before it reaches the page. build.mjs makes it the module of
// `import sanitize from 'sanitize-html'` too (base-manager's sanitiser of
// descriptions, not bundled), and puts sanitizedFragment in place of the
// controls' innerHTML assignments of values.

import DOMPurify from 'dompurify';

const purify = DOMPurify(window);
// Links open in a new tab (never in place of the notebook), without a referrer.
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

// Style attributes and elements are blocked by the page's CSP anyway; forms,
// their controls and frames have no business in a widget's text.
const BASE = {
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option', 'iframe', 'frame', 'object', 'embed', 'link', 'meta', 'base'],
  FORBID_ATTR: ['style'],
  ALLOW_DATA_ATTR: false
};

// sanitizedFragment returns kernel HTML as a sanitised DocumentFragment.
export function sanitizedFragment(html) {
  return purify.sanitize(String(html == null ? '' : html), { ...BASE, RETURN_DOM_FRAGMENT: true });
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
  return purify.sanitize(String(html == null ? '' : html), cfg);
}

export default sanitizeInline;
