// Types of what the app's modules use from widgets.js (the bundle of
// web/vendor/widgets-entry.js, imported lazily by js/widgets.js), for the
// type check. Hand-written; the bundle itself is never type-checked.

import type { Comm, Comms } from '../js/comms.js';

/** A widget view as the manager shows it. */
export interface WidgetView {
  remove(): void;
  /** calls cb once, on the view's next event of that name ('remove': the view went) */
  once(event: string, cb: () => void): void;
}

/** An nbformat output as an Output widget keeps it. */
export type NbOutputJson = { [key: string]: any };

/** What the manager asks of the page. */
export interface ManagerHooks {
  /** draws an Output widget's outputs into el (replacing what it shows) */
  renderOutputs(el: HTMLElement, outputs: NbOutputJson[]): void;
  /** an output of a widget's request that no Output widget took */
  output(view: WidgetView | undefined, msg: { header: { msg_type: string }; content: { [key: string]: any } }): void;
}

/** The widget manager of the page (ipywidgets 8). */
export interface WidgetManager {
  /** makes the model of a comm_open of the jupyter.widget target */
  handle_comm_open(comm: Comm, msg: unknown): Promise<unknown>;
  /** shows the view of a model in el (waits for the model to exist) */
  renderView(el: HTMLElement, modelId: string): Promise<WidgetView | null>;
  /** removes the views shown inside root */
  disposeUnder(root: Element): void;
  /** restores the widgets the kernel holds (after a page load or reconnect) */
  _loadFromKernel(): Promise<void>;
  dispose(): void;
}

/** The widget protocol version of the bundled packages ("2.1.0"). */
export const PROTOCOL_VERSION: string;

export function createWidgetManager(kernel: Pick<Comms, 'newComm' | 'commInfo' | 'setOutputSink'>, hooks: ManagerHooks): WidgetManager;

/** kernel HTML, sanitised (DOMPurify), as a fragment */
export function sanitizedFragment(html: string): DocumentFragment;
