// Types of what the app's modules use from vendor.js (the bundle of
// web/vendor/entry.js), for the type check (`tsc -p web`, run by
// TestTypeCheck). Hand-written, a subset of the packages' own declarations:
// the bundle itself is never type-checked. A module that starts to use more
// of the bundle adds the declarations here.

// ---- @codemirror/state

/** Anything that configures an editor: opaque here. */
export type Extension = { readonly extension: Extension } | readonly Extension[];

export interface Text {
  readonly length: number;
  toString(): string;
  lineAt(pos: number): Line;
}

export interface Line {
  readonly from: number;
  readonly to: number;
  readonly number: number;
  readonly text: string;
}

export interface SelectionRange {
  readonly from: number;
  readonly to: number;
  readonly head: number;
  readonly empty: boolean;
}

export interface EditorSelection {
  readonly main: SelectionRange;
  readonly ranges: readonly SelectionRange[];
}

export interface ChangeDesc {
  mapPos(pos: number, assoc?: number): number;
}

export interface TransactionSpec {
  changes?: { from: number; to?: number; insert?: string };
  selection?: { anchor: number; head?: number };
  effects?: StateEffect<any> | readonly StateEffect<any>[];
  scrollIntoView?: boolean;
  userEvent?: string;
}

export interface Transaction {
  readonly state: EditorState;
  readonly docChanged: boolean;
  readonly changes: ChangeDesc;
  readonly selection: EditorSelection | undefined;
  readonly effects: readonly StateEffect<any>[];
}

export declare class EditorState {
  private constructor();
  readonly doc: Text;
  readonly selection: EditorSelection;
  field<T>(field: StateField<T>): T;
  field<T>(field: StateField<T>, require: false): T | undefined;
  replaceSelection(text: string): TransactionSpec;
  static create(config?: { doc?: string; extensions?: Extension }): EditorState;
  static readonly allowMultipleSelections: Facet<boolean>;
  static readonly tabSize: Facet<number>;
}

export interface Facet<Input> {
  of(value: Input): Extension;
  from<T>(field: StateField<T>, get: (value: T) => Input): Extension;
}

export declare class Compartment {
  of(ext: Extension): Extension;
  reconfigure(content: Extension): StateEffect<unknown>;
}

export interface StateEffectType<Value> {
  of(value: Value): StateEffect<Value>;
}

export declare class StateEffect<Value> {
  private constructor();
  readonly value: Value;
  is<T>(type: StateEffectType<T>): this is StateEffect<T>;
  static define<Value = null>(spec?: object): StateEffectType<Value>;
}

export declare class StateField<Value> {
  private constructor();
  readonly extension: Extension;
  static define<Value>(config: {
    create: (state: EditorState) => Value;
    update: (value: Value, transaction: Transaction) => Value;
    provide?: (field: StateField<Value>) => Extension;
  }): StateField<Value>;
}

export declare const Prec: {
  highest(ext: Extension): Extension;
};

// ---- @codemirror/view

export interface ViewUpdate {
  readonly view: EditorView;
  readonly state: EditorState;
  readonly docChanged: boolean;
  readonly focusChanged: boolean;
}

export declare class EditorView {
  constructor(config?: { state?: EditorState; parent?: Element });
  readonly state: EditorState;
  readonly dom: HTMLElement;
  readonly hasFocus: boolean;
  dispatch(...specs: TransactionSpec[]): void;
  focus(): void;
  destroy(): void;
  static theme(spec: object, options?: { dark?: boolean }): Extension;
  static readonly lineWrapping: Extension;
  static readonly contentAttributes: Facet<{ [name: string]: string }>;
  static readonly updateListener: Facet<(update: ViewUpdate) => void>;
}

export type Command = (view: EditorView) => boolean;

export interface KeyBinding {
  key?: string;
  run?: Command;
  shift?: Command;
  preventDefault?: boolean;
}

export declare const keymap: Facet<readonly KeyBinding[]>;

export interface TooltipView {
  dom: HTMLElement;
}

export interface Tooltip {
  pos: number;
  above?: boolean;
  arrow?: boolean;
  create(view: EditorView): TooltipView;
}

export declare const showTooltip: Facet<Tooltip | null>;

export declare function drawSelection(): Extension;
export declare function dropCursor(): Extension;
export declare function rectangularSelection(): Extension;
export declare function crosshairCursor(): Extension;
export declare function highlightSpecialChars(): Extension;

// ---- @codemirror/commands

export declare const defaultKeymap: readonly KeyBinding[];
export declare const historyKeymap: readonly KeyBinding[];
export declare function history(): Extension;
export declare const indentMore: Command;
export declare const indentLess: Command;

// ---- @codemirror/language, @codemirror/lang-python, @codemirror/lang-javascript,
// @codemirror/legacy-modes (r, shell), @lezer/highlight

export interface Highlighter {
  style(tags: readonly object[]): string | null;
}

export declare const indentUnit: Facet<string>;
export declare function indentOnInput(): Extension;
export declare function bracketMatching(): Extension;
export declare function syntaxHighlighting(highlighter: Highlighter): Extension;
export declare function python(): Extension;
export declare function javascript(config?: { jsx?: boolean; typescript?: boolean }): Extension;
/** A legacy (CodeMirror 5) mode, for StreamLanguage.define. */
export interface StreamParser {
  readonly name?: string;
}
export declare class StreamLanguage {
  private constructor();
  static define(parser: StreamParser): StreamLanguage;
  readonly extension: Extension;
}
export declare const r: StreamParser;
export declare const shell: StreamParser;
export declare const classHighlighter: Highlighter;

// ---- @codemirror/search

export declare function search(config?: { top?: boolean }): Extension;
export declare const searchKeymap: readonly KeyBinding[];
export declare function highlightSelectionMatches(): Extension;

// ---- @codemirror/autocomplete

export interface CompletionContext {
  readonly state: EditorState;
  readonly pos: number;
  readonly explicit: boolean;
  readonly view: EditorView | undefined;
  addEventListener(type: 'abort', listener: () => void): void;
}

export interface Completion {
  label: string;
  type?: string;
  detail?: string;
}

export interface CompletionResult {
  from: number;
  to?: number;
  options: readonly Completion[];
  validFor?: RegExp;
}

export type CompletionSource = (context: CompletionContext) => CompletionResult | null | Promise<CompletionResult | null>;

export declare function autocompletion(config?: {
  override?: readonly CompletionSource[] | null;
  activateOnTyping?: boolean;
  icons?: boolean;
  closeOnBlur?: boolean;
}): Extension;
export declare const startCompletion: Command;
export declare const acceptCompletion: Command;
export declare const closeCompletion: Command;
export declare function completionStatus(state: EditorState): null | 'active' | 'pending';

// ---- markdown-it

export interface Token {
  content: string;
}

export interface StateInline {
  readonly src: string;
  pos: number;
  push(type: string, tag: string, nesting: number): Token;
}

export type InlineRule = (state: StateInline, silent: boolean) => boolean;
export type RenderRule = (tokens: Token[], idx: number) => string;

export declare class MarkdownIt {
  constructor(options?: { html?: boolean; linkify?: boolean; typographer?: boolean });
  readonly inline: { ruler: { before(beforeName: string, ruleName: string, fn: InlineRule): void } };
  readonly renderer: { rules: { [name: string]: RenderRule | undefined } };
  readonly utils: { escapeHtml(s: string): string };
  render(src: string): string;
}

// ---- dompurify

export interface PurifyConfig {
  USE_PROFILES?: { html?: boolean };
  FORBID_TAGS?: string[];
  FORBID_ATTR?: string[];
  ALLOW_DATA_ATTR?: boolean;
  RETURN_DOM_FRAGMENT?: boolean;
}

export declare const DOMPurify: {
  addHook(entryPoint: 'afterSanitizeAttributes', hook: (node: Node) => void): void;
  sanitize(dirty: string, config: PurifyConfig & { RETURN_DOM_FRAGMENT: true }): DocumentFragment;
};

// ---- @xterm/xterm, @xterm/addon-fit

export interface IDisposable {
  dispose(): void;
}

export interface ITerminalOptions {
  cols?: number;
  rows?: number;
  cursorBlink?: boolean;
  convertEol?: boolean;
  fontFamily?: string;
  fontSize?: number;
  scrollback?: number;
  theme?: { background?: string; foreground?: string; cursor?: string; selectionBackground?: string };
}

export interface ITerminalAddon extends IDisposable {
  activate(terminal: Terminal): void;
}

export declare class Terminal implements IDisposable {
  constructor(options?: ITerminalOptions);
  readonly cols: number;
  readonly rows: number;
  readonly element: HTMLElement | undefined;
  options: ITerminalOptions;
  open(parent: HTMLElement): void;
  write(data: string | Uint8Array, callback?: () => void): void;
  focus(): void;
  reset(): void;
  loadAddon(addon: ITerminalAddon): void;
  onData(listener: (data: string) => void): IDisposable;
  onBinary(listener: (data: string) => void): IDisposable;
  onResize(listener: (size: { cols: number; rows: number }) => void): IDisposable;
  dispose(): void;
}

export declare class FitAddon implements ITerminalAddon {
  constructor();
  activate(terminal: Terminal): void;
  fit(): void;
  proposeDimensions(): { cols: number; rows: number } | undefined;
  dispose(): void;
}
