// @ts-check
// Command mode, as in Jupyter: with a cell selected (the cell has the
// focus, not its editor; Esc gets there from the editor, a click on the
// cell too), single keys act on cells:
//   Enter            edit the cell
//   Shift+Enter      run it and select the next one; Ctrl+Enter run it
//   j / k, ↓ / ↑     select the next / previous cell
//   a / b            insert a cell above / below
//   d d              delete the cell
//   y / m / r        make it a code / Markdown / raw cell

const DOUBLE_KEY_MS = 800;

/**
 * @import { Cells } from './cells.js'
 * @import { Store } from './store.js'
 */

// bindCommandMode listens for those keys on the cells' container. deps:
// store, cells (cells.js).
/**
 * @param {HTMLElement} container
 * @param {{store: Store, cells: Cells}} deps
 */
export function bindCommandMode(container, { store, cells }) {
  let lastD = 0;
  container.addEventListener('keydown', (e) => {
    const cell = cells.selected();
    if (!cell || e.target !== cell.el.root || e.isComposing || e.altKey || e.metaKey) return;
    const i = cells.indexOf(cell);
    const key = e.key;
    if (key !== 'd') lastD = 0;
    if (e.ctrlKey) {
      if (key === 'Enter') {
        e.preventDefault();
        cells.run(cell);
      }
      return;
    }
    let handled = true;
    switch (key) {
      case 'Enter':
        if (e.shiftKey) cells.runAndAdvance(cell, true);
        else cells.edit(cell);
        break;
      case 'j':
      case 'ArrowDown':
        if (store.cells[i + 1]) cells.select(store.cells[i + 1]);
        break;
      case 'k':
      case 'ArrowUp':
        if (i > 0) cells.select(store.cells[i - 1]);
        break;
      case 'a':
        cells.select(cells.insert(i));
        break;
      case 'b':
        cells.select(cells.insert(i + 1));
        break;
      case 'd':
        if (e.timeStamp - lastD < DOUBLE_KEY_MS) {
          lastD = 0;
          cells.remove(cell);
        } else {
          lastD = e.timeStamp;
        }
        break;
      case 'y':
        cells.setType(cell, 'code');
        break;
      case 'm':
        cells.setType(cell, 'markdown');
        break;
      case 'r':
        cells.setType(cell, 'raw');
        break;
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  });
}
