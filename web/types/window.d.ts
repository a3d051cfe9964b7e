// Globals the page's modules set, for the type check (tsconfig.json).

interface Window {
  /** Set by main.js once the page is ready; the browser test waits for it. */
  glassroomReady?: boolean;
}
