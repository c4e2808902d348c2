/**
 * A tool's own view (MCP Apps, `application/vnd.purra.app+json`): the Lumino widget of the host side of the spec,
 * inside a notebook (the plugin: plugin.ts).
 *
 * The view runs in the sandbox of sandbox.ts (an opaque-origin proxy frame around the view's frame, the spec's
 * default policy plus only the origins the person allowed). This widget answers the view's `ui/` requests itself
 * (`ui/initialize` with the theme, the container's size and the tool; `ui/open-link` by showing the address as
 * text, never navigating; anything it does not support with an error), sizes the frame as the view asks, sends the
 * call's input and result, and carries `tools/call`, `resources/read` and log lines over a comm (comm.ts) to the
 * kernel, where they go through the kit's rules (purra_jupyter/ui/apps.py): a call of the view waits for the
 * approval widget, which this output shows below the view. Without the kernel that made it (a reopened notebook)
 * the view replays from the payload, and its requests are answered "no live session".
 *
 * What to do with each message is decided in protocol.ts and origins.ts (pure, jest-tested); the parts are drawn
 * by renderers.ts. Every string of the payload comes from a server nobody trusts: the view's HTML only ever reaches
 * the sandbox, everything else is drawn with `textContent`.
 */

import { type IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

import { CLASS as DOM_CLASS, type JSONObject, asObject, asText, el, label } from '../dom';
import { guardClicks } from '../guard';
import { APP_MIME } from '../mimetypes';
import { WidgetOutput } from '../widgetoutput/widgets';
import { ViewComm } from './comm';
import { type IOffer, grantedCsp, offer } from './origins';
import { currentStyleVariables, hostFacts, peerKeeper, thisPageOrigins, watchTheme } from './page';
import {
  Budget,
  INITIALIZED,
  type IPendingApproval,
  LOG_MESSAGE,
  type Message,
  REFUSED,
  type RequestId,
  SIZE_CHANGED,
  Sizing,
  TOO_MANY_LINKS,
  answer,
  domainsChoice,
  hostContextChanged,
  inbound,
  initializeResult,
  type KernelEvent,
  kernelLog,
  pendingApprovals,
  refusal,
  resourceReady,
  route,
  stringField,
  toolNotifications,
  unsupported,
  viewKey
} from './protocol';
import {
  APP_CLASS,
  appendLink,
  decisionList,
  renderDomains,
  renderHead,
  statusWords,
  untrustedLine,
  viewFrame
} from './renderers';

/** What one view may add: log lines to the session log, addresses shown under it. */
const LOG_BURST = 50;
const LOG_PER_SECOND = 10;
const LINK_BURST = 5;
const LINK_PER_SECOND = 1;

/** One view output: the head, the origins it asks for, the sandboxed frame, its approvals, then what it did. */
export class AppOutput extends Panel implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions, appRendermime: IRenderMimeRegistry) {
    super();
    this.addClass(DOM_CLASS.root);
    this.addClass(APP_CLASS.root);
    this.node.dataset['mimeType'] = APP_MIME;
    this._approvals = new Approvals(options, appRendermime);
    // Nothing the view does moves its approvals: above them only the head, the origins (the person's choice) and
    // the frame, whose size waits while a request of the view does; the addresses it asks to open come below.
    this.addWidget(this._top);
    this.addWidget(this._approvals);
    this.addWidget(this._links);
    this.addWidget(this._bottom);
    window.addEventListener('message', this._onMessage);
  }

  /** Called again with the new payload when the kernel rewrites the output (a decision, an approval, a choice). */
  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = asObject(model.data[APP_MIME]) ?? {};
    this._data = data;
    this._offer = offer(data.declared, thisPageOrigins());
    const key = viewKey(data, model.trusted);
    if (key !== this._key) {
      this._key = key;
      this._drawTop(model.trusted);
    } else {
      this._drawDomains();
    }
    this._approvals.showPending(pendingApprovals(data), model.trusted);
    this._drawBottom();
    this._thawIfIdle();
    if (this.isAttached) {
      this._comm.connect(this, stringField(data, 'viewId'));
    }
  }

  protected onAfterAttach(): void {
    this._unguard?.();
    this._unguard = guardClicks(this._top.node); // "Allow them" counts once it has been seen, still
    this._comm.connect(this, stringField(this._data, 'viewId'));
  }

  protected onBeforeDetach(): void {
    this._unguard?.();
    this._unguard = null;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._unguard?.();
    this._unguard = null;
    window.removeEventListener('message', this._onMessage);
    this._themeWatch?.disconnect();
    this._comm.close();
    super.dispose();
  }

  // --- drawing ---------------------------------------------------------------------------------

  private _drawTop(trusted: boolean): void {
    const node = this._top.node;
    node.textContent = '';
    this._initialized = false;
    this._frame = null;
    this._links.clear();
    node.appendChild(renderHead(this._data));
    this._domainsNode = el('div', APP_CLASS.domains);
    node.appendChild(this._domainsNode);
    this._drawDomains();
    if (!trusted) {
      node.appendChild(untrustedLine());
      return;
    }
    this._frame = viewFrame(this._data, this._offer);
    node.appendChild(this._frame);
  }

  private _drawDomains(): void {
    if (this._domainsNode !== null) {
      renderDomains(this._domainsNode, this._data, this._offer, this._live, allow =>
        this._comm.send(domainsChoice(allow))
      );
    }
  }

  private _drawBottom(): void {
    const node = this._bottom.node;
    node.textContent = '';
    const decisions = decisionList(this._data);
    if (decisions !== null) {
      node.appendChild(decisions);
    }
    this._status = el('div', APP_CLASS.status, statusWords(this._live, this._data));
    node.appendChild(this._status);
  }

  /** Whether the kernel holds the view (its comm opened; not closed, and the kernel has not said it is gone): the
   * status line and the choice of origins say so. */
  private _setLive(live: boolean): void {
    this._live = live;
    if (this._status !== null) {
      this._status.textContent = statusWords(live, this._data);
    }
    this._drawDomains();
  }

  // --- the kernel ------------------------------------------------------------------------------

  private _fromKernel(event: KernelEvent): void {
    if (event?.kind === 'gone') {
      this._setLive(false);
    } else if (event?.kind === 'answer') {
      this._toView(event.message);
      this._thawIfIdle();
    }
  }

  private _failWaiting(words: string): void {
    this._comm.refuseWaiting(words).forEach(message => this._toView(message));
    this._thawIfIdle();
  }

  // --- the view --------------------------------------------------------------------------------

  private _toView(message: Message): void {
    this._frame?.contentWindow?.postMessage(message, '*');
  }

  private readonly _onMessage = (event: MessageEvent): void => {
    const message = inbound(event.source, this._frame?.contentWindow, event.data);
    if (message === null) {
      return; // not from this output's own proxy (which relays only its own view)
    }
    if (message.kind === 'proxy-ready') {
      void this._sendView();
    } else if (message.kind === 'request') {
      this._request(message.id, message.method, message.params);
    } else {
      this._notification(message.method, message.params);
    }
  };

  /** The view's HTML to the proxy, with the lockdown first, once the page's peer keeper holds its connections. */
  private async _sendView(): Promise<void> {
    const frame = this._frame;
    const closed = await peerKeeper();
    if (frame === this._frame) {
      this._toView(resourceReady(closed, stringField(this._data, 'html'))); // (else: drawn anew meanwhile)
    }
  }

  private _request(id: RequestId, method: string, params: JSONObject): void {
    switch (route(method)) {
      case 'initialize': {
        const facts = hostFacts(grantedCsp(this._data, this._offer), this._top.node.clientWidth);
        this._toView(answer(id, initializeResult(this._data, facts)));
        return;
      }
      case 'ping':
        this._toView(answer(id, {}));
        return;
      case 'open-link':
        this._toView(this._links.showLink(asText(params.url)) ? answer(id, {}) : refusal(id, REFUSED, TOO_MANY_LINKS));
        return;
      case 'display-mode':
        this._toView(answer(id, { mode: 'inline' }));
        return;
      case 'forward':
        this._forward(id, method, params);
        return;
      default:
        this._toView(unsupported(id, method));
    }
  }

  private _forward(id: RequestId, method: string, params: JSONObject): void {
    const refused = this._comm.forward(id, method, params, label(this._data, 'noLiveSession', 'no live session'));
    if (refused !== null) {
      this._toView(refused);
    }
  }

  private _notification(method: string, params: JSONObject): void {
    if (method === INITIALIZED) {
      this._initialized = true;
      toolNotifications(this._data).forEach(message => this._toView(message));
      // The theme the view was told, told again when JupyterLab's changes.
      this._themeWatch ??= watchTheme(
        () => this._initialized,
        theme => this._toView(hostContextChanged(theme, currentStyleVariables()))
      );
    } else if (method === SIZE_CHANGED) {
      this._setHeight(this._sizing.ask(params.height, this._frozen()));
    } else if (method === LOG_MESSAGE && this._logBudget.take(performance.now())) {
      this._comm.send(kernelLog(params));
    }
  }

  /** Whether the frame's size waits: a request of the view waits, or an approval of it is on screen. */
  private _frozen(): boolean {
    return this._comm.waiting > 0 || this._approvals.count > 0;
  }

  private _thawIfIdle(): void {
    if (!this._frozen()) {
      this._setHeight(this._sizing.thaw());
    }
  }

  private _setHeight(height: number | null): void {
    if (height !== null && this._frame !== null) {
      this._frame.style.height = `${height}px`;
    }
  }

  private readonly _top = new Widget();
  private readonly _approvals: Approvals;
  private readonly _links = new Links();
  private readonly _bottom = new Widget();
  private _data: JSONObject = {};
  private _offer: IOffer = offer({}, []);
  private _key = '';
  private _frame: HTMLIFrameElement | null = null;
  private _domainsNode: HTMLElement | null = null;
  private _status: HTMLElement | null = null;
  private _initialized = false;
  private _themeWatch: MutationObserver | null = null;
  private readonly _comm = new ViewComm({
    opened: () => this._setLive(true),
    received: data => this._fromKernel(data),
    closed: () => {
      this._setLive(false);
      this._failWaiting(label(this._data, 'noLiveSession', 'no live session'));
    }
  });
  private _live = false;
  private readonly _sizing = new Sizing();
  private readonly _logBudget = new Budget(LOG_BURST, LOG_PER_SECOND);
  private _unguard: (() => void) | null = null;
}

/** The addresses the view asked to open, shown as text for the person to copy (nothing navigates), within a budget. */
class Links extends Widget {
  constructor() {
    super();
    this.addClass(APP_CLASS.links);
  }

  /** Show `url`; false: over the budget, not shown. */
  showLink(url: string): boolean {
    if (!this._budget.take(performance.now())) {
      return false;
    }
    appendLink(this.node, url);
    return true;
  }

  clear(): void {
    this.node.textContent = '';
  }

  private readonly _budget = new Budget(LINK_BURST, LINK_PER_SECOND);
}

/**
 * The approvals of the view's calls that wait for the person, each a widget output (widgetoutput/widgets.ts).
 * Incremental: an approval already shown stays as it is (and where it is); only new ones are drawn.
 */
class Approvals extends Panel {
  constructor(
    private readonly _options: IRenderMime.IRendererOptions,
    private readonly _rendermime: IRenderMimeRegistry
  ) {
    super();
    this.addClass(APP_CLASS.approvals);
  }

  /** How many approvals the payload last listed (while one is, the frame's size waits). */
  get count(): number {
    return this._count;
  }

  showPending(pending: ReadonlyArray<IPendingApproval>, trusted: boolean): void {
    this._count = pending.length;
    const ids = pending.map(item => item.modelId);
    for (const [id, output] of [...this._outputs]) {
      if (!ids.includes(id)) {
        output.dispose();
        this._outputs.delete(id);
      }
    }
    for (const { modelId, bundle } of pending) {
      if (!this._outputs.has(modelId)) {
        const output = new WidgetOutput(this._options, this._rendermime);
        this._outputs.set(modelId, output);
        this.addWidget(output);
        void output.renderModel(new MimeModel({ data: bundle as never, trusted }));
      }
    }
  }

  private _count = 0;
  private readonly _outputs = new Map<string, WidgetOutput>();
}
