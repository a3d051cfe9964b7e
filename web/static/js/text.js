// @ts-check
// Pure text helpers: formatting, nbformat-style line lists, paths.

/** @returns {string} */
export function randomId() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  const b = new Uint8Array(16);
  c.getRandomValues(b);
  let s = '';
  for (let i = 0; i < b.length; i++) s += (b[i] + 256).toString(16).slice(1);
  return s.slice(0, 8) + '-' + s.slice(8, 12) + '-' + s.slice(12, 16) + '-' + s.slice(16, 20) + '-' + s.slice(20);
}

// fmtClock formats a duration as m:ss or h:mm:ss.
/** @param {number} ms */
export function fmtClock(ms) {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const ss = (s < 10 ? '0' : '') + s;
  if (h > 0) return h + ':' + (m < 10 ? '0' : '') + m + ':' + ss;
  return m + ':' + ss;
}

// fmtElapsed formats a run time: tenths of seconds under a minute.
/** @param {number} ms */
export function fmtElapsed(ms) {
  if (ms < 60000) return (ms / 1000).toFixed(1) + 's';
  return fmtClock(ms);
}

/**
 * fmtSize formats a byte count ('' for anything that is not a number).
 * @param {unknown} n
 * @returns {string}
 */
export function fmtSize(n) {
  if (typeof n !== 'number' || !isFinite(n)) return '';
  if (n < 1024) return n + ' B';
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < units.length - 1);
  return (v < 10 ? v.toFixed(1) : Math.round(v)) + ' ' + units[i];
}

// joinText joins mime/stream text that may arrive as an array of lines.
// nbformat style arrays keep their newlines ("a\n", "b"); plain line lists
// don't. Objects become indented JSON.
/**
 * @param {unknown} v
 * @returns {string}
 */
export function joinText(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    let keepends = true;
    for (let i = 0; i < v.length - 1; i++) {
      if (typeof v[i] !== 'string' || v[i].slice(-1) !== '\n') {
        keepends = false;
        break;
      }
    }
    return v.map(String).join(keepends ? '' : '\n');
  }
  if (typeof v === 'object') {
    try {
      return JSON.stringify(v, null, 2);
    } catch (_) {
      return String(v);
    }
  }
  return String(v);
}

// splitLines splits s into nbformat lines, each keeping its newline.
/**
 * @param {string} s
 * @returns {string[]}
 */
export function splitLines(s) {
  if (!s) return [];
  return s.match(/[^\n]*\n|[^\n]+$/g) || [];
}

/**
 * @param {unknown} p
 * @returns {string}
 */
export function basename(p) {
  const parts = String(p).split('/').filter(Boolean);
  return parts.length ? parts[parts.length - 1] : String(p);
}

// encPath percent-encodes each segment of a relative, '/'-separated path.
/**
 * @param {unknown} p
 * @returns {string}
 */
export function encPath(p) {
  return String(p)
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .map(encodeURIComponent)
    .join('/');
}

// applyCR applies carriage returns the way a terminal would (progress bars).
/**
 * @param {string} text
 * @returns {string}
 */
export function applyCR(text) {
  if (text.indexOf('\r') < 0) return text;
  return text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((line) => {
      const trimmed = line.replace(/\r+$/, '');
      const i = trimmed.lastIndexOf('\r');
      return i >= 0 ? trimmed.slice(i + 1) : trimmed;
    })
    .join('\n');
}

/**
 * @param {string} s
 * @returns {string}
 */
export function utf8ToBase64(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    bin += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return globalThis.btoa(bin);
}
