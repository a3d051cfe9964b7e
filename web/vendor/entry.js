// The third-party code the notebook UI uses, re-exported from one module.
// `make web-vendor` bundles this file with esbuild into
// web/static/vendor/vendor.js, which the app imports; nothing here is
// loaded from a CDN.

import { StyleModule } from 'style-mod';

// CodeMirror injects its styles through style-mod, which puts them in a
// <style> element when the editor lives in a document (it only uses a
// constructed stylesheet inside shadow roots). The page's CSP (style-src
// 'self', no 'unsafe-inline') blocks such elements. Constructed
// stylesheets adopted by the document are not inline styles, so mount
// every style module into one of those instead, keeping the order
// CodeMirror asks for.
const adopted = new WeakMap(); // root -> {sheet, modules}
StyleModule.mount = function mount(root, modules) {
  let set = adopted.get(root);
  if (!set) {
    const win = (root.ownerDocument || root).defaultView;
    set = { sheet: new win.CSSStyleSheet(), modules: [] };
    adopted.set(root, set);
  }
  let j = 0;
  let changed = false;
  for (const mod of Array.isArray(modules) ? modules : [modules]) {
    let i = set.modules.indexOf(mod);
    if (i > -1 && i < j) {
      // Asked for in another order than before: move it.
      set.modules.splice(i, 1);
      j--;
      i = -1;
    }
    if (i === -1) {
      set.modules.splice(j++, 0, mod);
      changed = true;
    } else {
      j = i + 1;
    }
  }
  if (changed) set.sheet.replaceSync(set.modules.map((m) => m.getRules()).join('\n'));
  if (!root.adoptedStyleSheets.includes(set.sheet)) root.adoptedStyleSheets = [set.sheet, ...root.adoptedStyleSheets];
};

export { EditorState, Compartment, Prec, StateField, StateEffect } from '@codemirror/state';
export {
  EditorView,
  keymap,
  drawSelection,
  dropCursor,
  rectangularSelection,
  crosshairCursor,
  highlightSpecialChars,
  showTooltip
} from '@codemirror/view';
export { defaultKeymap, history, historyKeymap, indentMore, indentLess } from '@codemirror/commands';
export { indentOnInput, bracketMatching, syntaxHighlighting, indentUnit, StreamLanguage } from '@codemirror/language';
export { python } from '@codemirror/lang-python';
export { javascript } from '@codemirror/lang-javascript';
export { r } from '@codemirror/legacy-modes/mode/r';
export { shell } from '@codemirror/legacy-modes/mode/shell';
export { search, searchKeymap, highlightSelectionMatches } from '@codemirror/search';
export {
  autocompletion,
  startCompletion,
  acceptCompletion,
  closeCompletion,
  completionStatus
} from '@codemirror/autocomplete';
export { classHighlighter } from '@lezer/highlight';
export { default as MarkdownIt } from 'markdown-it';
export { default as DOMPurify } from 'dompurify';
export { Terminal } from '@xterm/xterm';
export { FitAddon } from '@xterm/addon-fit';
