// The Jupyter widgets of the notebook (ipywidgets 8, widget protocol 2),
// bundled by build.mjs into ../static/vendor/widgets.js: a module of its
// own, which the app imports only when a session has widgets (js/widgets.js),
// with its stylesheet widgets.css and Font Awesome's fonts beside it.
//
// The manager is @jupyter-widgets/base-manager's ManagerBase, as the HTML
// manager (@jupyter-widgets/html-manager) and JupyterLab's build theirs,
// with the built-in modules only: @jupyter-widgets/base, controls and
// output. Nothing is loaded from anywhere else (no require.js, no CDN: a
// model of another module fails to load and shows as an error widget).
// The HTML manager itself is not bundled: it renders the Output widget with
// JupyterLab's rendermime, which puts kernel HTML into the page (the
// notebook shows kernel HTML in sandboxed frames only) and more than
// doubles the bundle; its loadClass and display_view are the few lines
// below.
//
// Kernel markup never reaches the page unsanitised: the HTML and HTMLMath
// widgets' values and HTML descriptions go through DOMPurify (build.mjs
// rewrites the controls' innerHTML assignments to call sanitizedFragment),
// and the Output widget's outputs are drawn by the app's own renderer.
// The page's CSP holds: no eval (build.mjs takes underscore's template
// compiler out), no inline style (widgets style elements through CSSOM).

import * as base from '@jupyter-widgets/base';
import * as controls from '@jupyter-widgets/controls';
import * as outputBase from '@jupyter-widgets/output';
import { ManagerBase } from '@jupyter-widgets/base-manager';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import '@jupyter-widgets/controls/css/widgets-base.css';
import '@jupyter-widgets/controls/css/labvariables.css';
import '@fortawesome/fontawesome-free/css/all.min.css';
import '@fortawesome/fontawesome-free/css/v4-shims.min.css';
import './widgets-theme.css';

export const PROTOCOL_VERSION = base.PROTOCOL_VERSION;
export { sanitizeInline, sanitizedFragment } from './widgets-sanitize.js';

// ---- the Output widget

// OutputModel keeps the outputs of an Output widget as nbformat outputs.
// What goes into it is decided by the app's comm layer (kernel.setOutputSink):
// the outputs of the request whose msg_id the widget holds (with out: ...).
// As JupyterLab's, it saves its outputs back to the kernel.
class OutputModel extends outputBase.OutputModel {
  defaults() {
    return { ...super.defaults(), msg_id: '', outputs: [] };
  }

  initialize(attributes, options) {
    super.initialize(attributes, options);
    this._outs = [];
    this._clearPending = false;
    this.listenTo(this, 'change:outputs', this._fromState);
    this._fromState();
    const kernel = this.widget_manager.kernel;
    kernel.setOutputSink(this.model_id, (item) => this._add(item));
    this.once('comm:close', () => kernel.setOutputSink(this.model_id, null));
  }

  get nbOutputs() {
    return this._outs;
  }

  _fromState(_model, _value, options) {
    if (options && options.newMessage) return;
    const outs = this.get('outputs');
    this._outs = Array.isArray(outs) ? outs.filter((o) => o && typeof o === 'object').map((o) => ({ ...o })) : [];
    this.trigger('outputs:changed');
  }

  // _add takes one item from the comm layer: {output} or {clear, wait}.
  _add(item) {
    if (item.clear) {
      if (item.wait) {
        this._clearPending = true;
        return;
      }
      this._outs = [];
    } else {
      if (this._clearPending) {
        this._outs = [];
        this._clearPending = false;
      }
      const o = item.output;
      const last = this._outs[this._outs.length - 1];
      if (o.output_type === 'stream' && last && last.output_type === 'stream' && last.name === o.name) {
        this._outs[this._outs.length - 1] = { ...last, text: last.text + o.text };
      } else {
        this._outs.push(o);
      }
    }
    this.set('outputs', this._outs.slice(), { newMessage: true });
    this.save_changes();
    this.trigger('outputs:changed');
  }
}

// OutputView draws its model's outputs with the app's renderer, at most
// once per frame.
class OutputView extends outputBase.OutputView {
  render() {
    super.render();
    this.el.classList.add('jupyter-widgets', 'widget-output');
    this._frame = 0;
    this.listenTo(this.model, 'outputs:changed', this._schedule);
    this._draw();
  }

  _schedule() {
    if (this._frame) return;
    this._frame = requestAnimationFrame(() => {
      this._frame = 0;
      this._draw();
    });
  }

  _draw() {
    this.model.widget_manager.renderOutputs(this.el, this.model.nbOutputs);
  }

  remove() {
    if (this._frame) cancelAnimationFrame(this._frame);
    this._frame = 0;
    return super.remove();
  }
}

const outputModule = { ...outputBase, OutputModel, OutputView };

// ---- the manager

// The modules a model may name, each with the versions it serves (semver
// major: protocol 2 is ipywidgets 8).
const MODULES = {
  '@jupyter-widgets/base': { major: '2', module: base },
  '@jupyter-widgets/controls': { major: '2', module: controls },
  '@jupyter-widgets/output': { major: '1', module: outputModule }
};

// GlassroomManager is the widget manager of one page. kernel is the app's
// comm layer (js/comms.js): newComm, commInfo, setOutputSink. hooks:
//   renderOutputs(el, outputs)  draws an Output widget's nbformat outputs
//   output(view, output)        an output of a widget's request that no
//                               Output widget took (print in on_click)
class GlassroomManager extends ManagerBase {
  constructor(kernel, hooks) {
    super();
    this.kernel = kernel;
    this.hooks = hooks;
    this._views = new Set();
    this._waiting = new Map(); // model id -> resolvers of whenModel
    this._onResize = () => {
      for (const v of this._views) MessageLoop.postMessage(v.luminoWidget, Widget.ResizeMessage.UnknownSize);
    };
    window.addEventListener('resize', this._onResize);
  }

  loadClass(className, moduleName, moduleVersion) {
    const m = MODULES[moduleName];
    if (!m) return Promise.reject(new Error(`widget module ${moduleName}@${moduleVersion} is not built into this page`));
    const major = String(moduleVersion || '').replace(/^[\^~=v]+/, '').split('.')[0];
    if (major !== m.major) {
      return Promise.reject(new Error(`${moduleName}@${moduleVersion}: this page has version ${m.major}.x (ipywidgets 8)`));
    }
    const cls = m.module[className];
    return cls ? Promise.resolve(cls) : Promise.reject(new Error(`class ${className} not found in ${moduleName}@${moduleVersion}`));
  }

  async display_view(view, el) {
    Widget.attach(view.luminoWidget, el);
    this._views.add(view);
    view.once('remove', () => this._views.delete(view));
    return view;
  }

  _create_comm(target, modelId, data, metadata, buffers) {
    const comm = this.kernel.newComm(target, modelId);
    if (data || metadata) comm.open(data || {}, undefined, metadata || {}, buffers);
    return Promise.resolve(comm);
  }

  _get_comm_info() {
    return this.kernel.commInfo(this.comm_target_name);
  }

  // callbacks routes an output of a widget's request (a callback that
  // printed) to the cell that shows the view.
  callbacks(view) {
    return {
      iopub: {
        output: (msg) => {
          if (this.hooks.output) this.hooks.output(view, msg);
        }
      }
    };
  }

  renderOutputs(el, outputs) {
    this.hooks.renderOutputs(el, outputs);
  }

  register_model(modelId, promise) {
    super.register_model(modelId, promise);
    const waiting = this._waiting.get(modelId);
    if (waiting) {
      this._waiting.delete(modelId);
      for (const w of waiting) w(promise);
    }
  }

  // whenModel resolves to the model of modelId once it exists (now, or
  // when the kernel opens or restores it); it never rejects by itself.
  whenModel(modelId) {
    if (this.has_model(modelId)) return this.get_model(modelId);
    return new Promise((resolve) => {
      let list = this._waiting.get(modelId);
      if (!list) this._waiting.set(modelId, (list = []));
      list.push(resolve);
    });
  }

  // renderView shows the view of modelId in el; it resolves to the view.
  async renderView(el, modelId) {
    const model = await this.whenModel(modelId);
    const view = await this.create_view(model, {});
    if (!el.isConnected) {
      view.remove();
      return null;
    }
    await this.display_view(view, el);
    return view;
  }

  // disposeUnder removes the views shown inside root, not root's own
  // (outputs cleared or drawn again).
  disposeUnder(root) {
    for (const v of [...this._views]) {
      const node = v.luminoWidget && v.luminoWidget.node;
      if (node && node !== root && root.contains(node)) {
        if (v.luminoWidget.isAttached) Widget.detach(v.luminoWidget);
        v.remove();
      }
    }
  }

  dispose() {
    window.removeEventListener('resize', this._onResize);
    this._waiting.clear();
  }
}

// createWidgetManager returns the manager of the page (see GlassroomManager).
export function createWidgetManager(kernel, hooks) {
  return new GlassroomManager(kernel, hooks);
}
