/**
 * The Lumino widget of a widget output that reads without its kernel (the plugin: plugin.ts).
 *
 * Every widget output of purra_jupyter (an approval, a batch, a form) carries, beside ipywidgets' own view
 * (`application/vnd.jupyter.widget-view+json`, for any other frontend), `application/vnd.purra.widget+json`:
 * the widget's model id, its static view (the escaped HTML purra_jupyter also gives as `text/html`), the names
 * of its buttons and the lines that say why they are dead. This renderer is ranked before ipywidgets' view, so
 * it decides: it draws the static view, and mounts the live widget (through the notebook's own rendermime, that
 * is through ipywidgets' renderer and widget manager) only while the notebook's kernel holds that model. When the
 * kernel restarts, shuts down or is replaced, it goes back to the static view, its buttons disabled and a line
 * saying why. So a reopened notebook never shows "Error displaying widget", and a dead button never looks alive.
 *
 * The static view is markup purra_jupyter built with every server string escaped; it is still rendered through
 * the application's sanitizer (`renderHTML`, untrusted), and everything else is set with `textContent`.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel, renderHTML } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { Kernel } from '@jupyterlab/services';
import { Panel, Widget } from '@lumino/widgets';

import { guardClicks } from '../guard';
import { WIDGET_MIME, WIDGET_VIEW_MIME } from '../mimetypes';
import { CLASS, type Dead, deadControls, type IWidgetData, widgetData } from './renderers';

/** The comm target of ipywidgets' models: the kernel lists the open ones (comm id = model id). */
const COMM_TARGET = 'jupyter.widget';
/** How long to wait for ipywidgets' manager to take over the notebook's rendermime, and how often to look. */
const MANAGER_WAIT_MS = 10_000;
const MANAGER_POLL_MS = 50;

/** Whether the kernel has the widget model open (its comm id is the model id). */
async function kernelHolds(kernel: Kernel.IKernelConnection, modelId: string): Promise<boolean> {
  const reply = await kernel.requestCommInfo({ target_name: COMM_TARGET });
  const content = reply.content;
  return content.status === 'ok' && Object.prototype.hasOwnProperty.call(content.comms, modelId);
}

/** The notebook panel a widget sits in, if any. */
export function panelOf(widget: Widget): NotebookPanel | null {
  for (let parent = widget.parent; parent !== null; parent = parent.parent) {
    if (parent instanceof NotebookPanel) {
      return parent;
    }
  }
  return null;
}

function delay(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/**
 * One widget output: its static view, or the live widget while the notebook's kernel holds its model.
 */
export class WidgetOutput extends Panel implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions, appRendermime: IRenderMimeRegistry) {
    super();
    this._options = options;
    this._appRendermime = appRendermime;
    this.addClass(CLASS.root);
    this.node.dataset['mimeType'] = WIDGET_MIME;
  }

  /** Also called again with a new model when the output is rewritten in place (a display id's update). */
  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._stopFollowing();
    this._panel = null;
    this._round += 1;
    this._model = model;
    this._data = widgetData(model.data[WIDGET_MIME]);
    await this._showStatic(null);
    if (this.isAttached) {
      await this._follow();
    }
  }

  protected onAfterAttach(): void {
    this._unguard?.();
    this._unguard = guardClicks(this.node); // an approval's click counts once it has been seen, still
    if (this._model !== null && this._panel === null) {
      void this._follow();
    }
  }

  protected onBeforeDetach(): void {
    this._unguard?.();
    this._unguard = null;
  }

  dispose(): void {
    this._unguard?.();
    this._unguard = null;
    this._stopFollowing();
    super.dispose();
  }

  /** Find the notebook, follow its kernel, and mount the live widget if the kernel holds the model. */
  private async _follow(): Promise<void> {
    if (this._panel !== null) {
      return; // followed already (attached while the first drawing was under way)
    }
    const panel = panelOf(this);
    if (panel === null) {
      await this._showStatic('gone'); // not in a notebook (an output opened in its own view)
      return;
    }
    const round = this._round;
    this._panel = panel;
    const session = panel.sessionContext;
    await session.ready; // (a reloaded page changes kernels while it starts: only what happens after counts)
    if (this._round !== round) {
      return;
    }
    session.statusChanged.connect(this._onStatus, this);
    session.kernelChanged.connect(this._onKernelChanged, this);
    const kernel = session.session?.kernel ?? null;
    if (kernel === null) {
      await this._showStatic('noKernel');
      return;
    }
    const model = this._model;
    const view = model?.data[WIDGET_VIEW_MIME];
    let held = false;
    try {
      held = model !== null && model.trusted && view !== undefined && (await kernelHolds(kernel, this._data.modelId));
    } catch {
      held = false; // the kernel went away while asked
    }
    const ready = held && (await this._managerReady(panel));
    if (this._round !== round) {
      return; // it restarted, changed or was rendered anew meanwhile
    }
    if (!ready) {
      this._stopFollowing(); // this kernel never gets the model back
      await this._showStatic('gone');
      return;
    }
    await this._showLive(panel, view);
  }

  /** ipywidgets' manager replaces the app's placeholder renderer in the notebook's rendermime once it holds
   * the kernel; a renderer made before that would wait for a manager forever. */
  private async _managerReady(panel: NotebookPanel): Promise<boolean> {
    const placeholder = this._appRendermime.getFactory(WIDGET_VIEW_MIME);
    for (let waited = 0; waited < MANAGER_WAIT_MS; waited += MANAGER_POLL_MS) {
      const factory = panel.content.rendermime.getFactory(WIDGET_VIEW_MIME);
      if (factory !== undefined && factory !== placeholder) {
        return true;
      }
      await delay(MANAGER_POLL_MS);
    }
    return false;
  }

  private async _showLive(panel: NotebookPanel, view: unknown): Promise<void> {
    const live = panel.content.rendermime.createRenderer(WIDGET_VIEW_MIME);
    this._ticket += 1;
    this._clear();
    this.addWidget(live);
    await live.renderModel(new MimeModel({ data: { [WIDGET_VIEW_MIME]: view as never }, trusted: true }));
  }

  private async _showStatic(why: Dead | null): Promise<void> {
    const ticket = (this._ticket += 1);
    const view = document.createElement('div');
    view.className = CLASS.view;
    await renderHTML({
      host: view,
      source: this._data.html,
      trusted: false, // through the sanitizer, whatever the output's trust
      sanitizer: this._options.sanitizer,
      resolver: this._options.resolver,
      linkHandler: this._options.linkHandler,
      shouldTypeset: false,
      latexTypesetter: null,
      translator: this._options.translator
    });
    if (this.isDisposed || ticket !== this._ticket) {
      return; // disposed, or something newer was shown while this drew
    }
    const node = document.createElement('div');
    node.className = CLASS.static;
    node.append(view, ...deadControls(this._data, why));
    this._clear();
    const holder = new Widget({ node });
    this.addWidget(holder);
  }

  private _onStatus(_: unknown, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting') {
      this._die('restarted');
    } else if (status === 'dead') {
      this._die('noKernel');
    }
  }

  private _onKernelChanged(_: unknown, change: { newValue: Kernel.IKernelConnection | null }): void {
    this._die(change.newValue === null ? 'noKernel' : 'gone');
  }

  /** The model is gone for good: the static view, and no more following. */
  private _die(why: Dead): void {
    this._stopFollowing();
    this._round += 1;
    void this._showStatic(why);
  }

  private _stopFollowing(): void {
    const session = this._panel?.sessionContext;
    if (session) {
      session.statusChanged.disconnect(this._onStatus, this);
      session.kernelChanged.disconnect(this._onKernelChanged, this);
    }
  }

  private _clear(): void {
    for (const child of [...this.widgets]) {
      child.dispose();
    }
  }

  private readonly _options: IRenderMime.IRendererOptions;
  private readonly _appRendermime: IRenderMimeRegistry;
  private _model: IRenderMime.IMimeModel | null = null;
  private _data: IWidgetData = widgetData(null);
  private _panel: NotebookPanel | null = null;
  private _round = 0; // one per model rendered and per death: a check answered for an older round is dropped
  private _ticket = 0; // one per view shown: a drawing finished after a newer one is dropped
  private _unguard: (() => void) | null = null;
}
