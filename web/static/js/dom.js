// DOM helpers. Nothing here runs at import time, so the pure modules that
// import this one load in Node for their unit tests.
//
// Safety rule for the whole UI: anything that comes from the kernel or the
// network reaches the page through createElement and textContent (or
// attributes on elements made here), never as markup.

export function $(id) {
  return document.getElementById(id);
}

// el makes an element with an optional class and text content.
export function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

// toolButton makes a small labelled button.
export function toolButton(cls, label, title) {
  const b = el('button', cls, label);
  b.type = 'button';
  b.title = title;
  b.setAttribute('aria-label', title);
  return b;
}

// saveBlob hands blob to the browser as a download named name.
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.className = 'visually-hidden';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// createMessages shows short status messages in node; each replaces the last
// and hides itself after a while (errors stay longer).
export function createMessages(node) {
  let timer = 0;
  return function show(text, kind) {
    node.textContent = text;
    node.className = 'message ' + (kind || 'info');
    node.hidden = false;
    clearTimeout(timer);
    timer = setTimeout(() => {
      node.hidden = true;
    }, kind === 'error' ? 9000 : 4000);
  };
}
