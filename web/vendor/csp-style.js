// cspStyle stands in for document.createElement('style') in xterm.js
// (build.mjs swaps the calls at bundle time). The page's CSP (style-src
// 'self', no 'unsafe-inline') blocks <style> elements, and xterm.js's DOM
// renderer puts its theme and cell sizes into such elements. This returns
// a hidden, inert element instead; whatever text xterm.js sets on it goes
// into one constructed stylesheet adopted by the document (not an inline
// style, so the CSP allows it), rebuilt whenever such a text changes.

const sheets = new WeakMap(); // document -> {sheet, els}

function sync(set) {
  for (const el of set.els) if (!el.isConnected && el.dataset.seen) set.els.delete(el);
  for (const el of set.els) if (el.isConnected) el.dataset.seen = '1';
  set.sheet.replaceSync([...set.els].filter((el) => el.isConnected).map((el) => el.textContent).join('\n'));
}

export function cspStyle(doc) {
  let set = sheets.get(doc);
  if (!set) {
    const win = doc.defaultView;
    set = { sheet: new win.CSSStyleSheet(), els: new Set() };
    sheets.set(doc, set);
    doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, set.sheet];
  }
  const el = doc.createElement('xterm-style');
  el.hidden = true;
  set.els.add(el);
  const s = set;
  new doc.defaultView.MutationObserver(() => sync(s)).observe(el, { childList: true, characterData: true, subtree: true });
  return el;
}
