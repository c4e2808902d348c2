/**
 * A tool's own view (MCP Apps, `application/vnd.purra.app+json`): the host side of the spec, inside a notebook.
 *
 * The view runs in the sandbox of sandbox.ts (an opaque-origin proxy frame around the view's frame, the spec's
 * default policy plus only the origins the person allowed). This renderer answers the view's `ui/` requests itself
 * (`ui/initialize` with the theme, the container's size and the tool; `ui/open-link` by showing the address as
 * text, never navigating; anything it does not support with an error), sizes the frame as the view asks, sends the
 * call's input and result, and carries `tools/call`, `resources/read` and log lines over a comm (target
 * `purra.app`) to the kernel, where they go through the kit's rules (purra_jupyter/ui/apps.py): a call of the view
 * waits for the approval widget, which this output shows below the view. Without the kernel that made it (a
 * reopened notebook) the view replays from the payload, and its requests are answered "no live session".
 *
 * Every string of the payload comes from a server nobody trusts: the view's HTML only ever reaches the sandbox,
 * everything else is drawn with `textContent`.
 */

import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { type Kernel, ServerConnection } from '@jupyterlab/services';
import { Panel, Widget } from '@lumino/widgets';

import { CLASS as DOM_CLASS, type JSONObject, asArray, asObject, asText, el, label } from './dom';
import { guardClicks } from './guard';
import { CSP_WORDS, type IOffer, offer } from './mcpapps/origins';
import {
  Budget,
  MAX_HEIGHT,
  NOT_SUPPORTED,
  PENDING_MAX,
  REFUSED,
  Sizing,
  Waiting,
  busy,
  inbound,
  route
} from './mcpapps/protocol';
import {
  CSP_KEYS,
  KEEPER_READY,
  NO_ORIGINS,
  RESOURCE_READY,
  WEBRTC_OPEN,
  allowAttribute,
  keeperDocument,
  lockedHtml,
  proxyDocument
} from './mcpapps/sandbox';
import { APP_MIME, WIDGET_MIME } from './mimetypes';
import { WidgetOutput, panelOf } from './widgetoutput/widgets';

/** The comm target of the kernel's side (purra_jupyter/ui/apps.py: COMM_TARGET). */
const COMM_TARGET = 'purra.app';
const FIRST_HEIGHT = 200;
/** What one view may add: log lines to the session log, addresses shown under it (the last LINKS_SHOWN of them). */
const LOG_BURST = 50;
const LOG_PER_SECOND = 10;
const LINK_BURST = 5;
const LINK_PER_SECOND = 1;
const LINKS_SHOWN = 10;
/** How long the page's peer keeper may take to say it holds its process's peer connections (it takes well under a
 * second); without its word, no view is shown. */
const KEEPER_WAIT_MS = 15_000;

export const APP_CLASS = {
  root: 'jp-PurraApp',
  head: 'jp-PurraApp-head',
  domains: 'jp-PurraApp-domains',
  frame: 'jp-PurraApp-frame',
  bordered: 'jp-PurraApp-bordered',
  links: 'jp-PurraApp-links',
  refused: 'jp-PurraApp-refused',
  approvals: 'jp-PurraApp-approvals',
  decisions: 'jp-PurraApp-decisions',
  status: 'jp-PurraApp-status'
} as const;

type Message = { [key: string]: unknown };

/** What the saved payload says, read defensively. */
function text(data: JSONObject, key: string): string {
  return typeof data[key] === 'string' ? (data[key] as string) : '';
}

/** The origins that serve this page: its own, its server's base URL's and its websocket's. */
function pageOrigins(): string[] {
  const settings = ServerConnection.makeSettings();
  const origins = [window.location.origin];
  for (const url of [settings.baseUrl, settings.wsUrl]) {
    try {
      origins.push(new URL(url, window.location.href).origin);
    } catch {
      // not a URL: nothing more to refuse
    }
  }
  return origins;
}

/**
 * The page's peer keeper (sandbox.ts: keeperDocument), made once, before the first view: whether it holds every
 * peer connection its process may have (false: this browser has no limit, and views are not shown).
 */
let keeper: Promise<boolean> | null = null;

function peerKeeper(): Promise<boolean> {
  if (keeper === null) {
    keeper = new Promise(resolve => {
      const frame = document.createElement('iframe');
      frame.setAttribute('sandbox', 'allow-scripts');
      frame.setAttribute('aria-hidden', 'true');
      frame.tabIndex = -1;
      frame.style.display = 'none';
      const settle = (closed: boolean): void => {
        window.removeEventListener('message', onMessage);
        window.clearTimeout(timer);
        resolve(closed);
      };
      const onMessage = (event: MessageEvent): void => {
        const data = asObject(event.data);
        if (event.source === frame.contentWindow && data?.type === KEEPER_READY) {
          settle(data.closed === true);
        }
      };
      window.addEventListener('message', onMessage);
      const timer = window.setTimeout(() => settle(false), KEEPER_WAIT_MS); // (one that never answers closes nothing)
      frame.srcdoc = keeperDocument();
      document.body.appendChild(frame);
    });
  }
  return keeper;
}

/** The theme JupyterLab shows now. */
function theme(): 'light' | 'dark' {
  return document.body.dataset['jpThemeLight'] === 'false' ? 'dark' : 'light';
}

/** A few of JupyterLab's theme colours and fonts under the spec's variable names, as computed now. */
function styleVariables(): { [name: string]: string } {
  const style = getComputedStyle(document.body);
  const pairs: [string, string][] = [
    ['--color-background-primary', '--jp-layout-color0'],
    ['--color-background-secondary', '--jp-layout-color1'],
    ['--color-text-primary', '--jp-ui-font-color0'],
    ['--color-text-secondary', '--jp-ui-font-color1'],
    ['--color-border-primary', '--jp-border-color1'],
    ['--font-sans', '--jp-ui-font-family'],
    ['--font-mono', '--jp-code-font-family']
  ];
  const variables: { [name: string]: string } = {};
  for (const [spec, ours] of pairs) {
    const value = style.getPropertyValue(ours).trim();
    if (value) {
      variables[spec] = value;
    }
  }
  return variables;
}

/** One view output: the head, the origins it asks for, the sandboxed frame, its approvals, then what it did. */
export class AppOutput extends Panel implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions, appRendermime: IRenderMimeRegistry) {
    super();
    this._options = options;
    this._appRendermime = appRendermime;
    this.addClass(DOM_CLASS.root);
    this.addClass(APP_CLASS.root);
    this.node.dataset['mimeType'] = APP_MIME;
    this._top = new Widget();
    this._approvals = new Panel();
    this._approvals.addClass(APP_CLASS.approvals);
    this._links = new Widget();
    this._links.addClass(APP_CLASS.links);
    this._bottom = new Widget();
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
    this._offer = offer(data.declared, pageOrigins());
    const key = [text(data, 'viewId'), text(data, 'sha256'), String(data.allowed === true), model.trusted].join(' ');
    if (key !== this._key) {
      this._key = key;
      this._drawTop(data, model.trusted);
    } else {
      this._drawDomains(data);
    }
    this._drawApprovals(data, model.trusted);
    this._drawBottom(data);
    this._thawIfIdle();
    if (this.isAttached) {
      this._connect();
    }
  }

  protected onAfterAttach(): void {
    this._unguard?.();
    this._unguard = guardClicks(this._top.node); // "Allow them" counts once it has been seen, still
    this._connect();
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
    this._comm?.close();
    this._comm = null;
    super.dispose();
  }

  // --- drawing ---------------------------------------------------------------------------------

  private _drawTop(data: JSONObject, trusted: boolean): void {
    const node = this._top.node;
    node.textContent = '';
    this._initialized = false;
    this._frame = null;
    this._links.node.textContent = '';
    const head = el('div', APP_CLASS.head);
    head.appendChild(el('span', DOM_CLASS.kind, label(data, 'view', 'view')));
    const shortDigest = text(data, 'sha256').slice(0, 12);
    head.appendChild(
      el(
        'div',
        DOM_CLASS.muted,
        `${text(data, 'server')}/${text(data, 'tool')} · ${text(data, 'uri')} · sha256 ${shortDigest}…`
      )
    );
    node.appendChild(head);
    this._domainsNode = el('div', APP_CLASS.domains);
    node.appendChild(this._domainsNode);
    this._drawDomains(data);
    if (!trusted) {
      node.appendChild(
        el(
          'p',
          DOM_CLASS.message,
          'The view is not shown: this output is not trusted (trust the notebook to replay it).'
        )
      );
      return;
    }
    const allowed = data.allowed === true;
    const frame = document.createElement('iframe');
    frame.className = APP_CLASS.frame;
    if (data.prefersBorder !== false) {
      frame.classList.add(APP_CLASS.bordered);
    }
    frame.setAttribute('sandbox', 'allow-scripts');
    frame.setAttribute('title', `view of ${text(data, 'tool')}`);
    frame.setAttribute('referrerpolicy', 'no-referrer');
    const permissions = allowed ? asArray(data.permissions) : [];
    frame.setAttribute('allow', allowAttribute(permissions)); // the proxy delegates to the view only what it holds
    frame.style.height = `${FIRST_HEIGHT}px`;
    frame.srcdoc = proxyDocument(this._csp(), permissions);
    this._frame = frame;
    node.appendChild(frame);
  }

  /** The origins the view may reach: those the person allowed, never one that serves this page. */
  private _csp(): IOffer['csp'] {
    return this._data.allowed === true ? this._offer.csp : NO_ORIGINS;
  }

  private _drawDomains(data: JSONObject): void {
    const node = this._domainsNode;
    if (node === null) {
      return;
    }
    node.textContent = '';
    const lines: string[] = [];
    for (const key of CSP_KEYS) {
      for (const origin of this._offer.csp[key]) {
        lines.push(`${key}: ${origin} (${CSP_WORDS[key]})`);
      }
    }
    const permissions = asArray(data.permissions).map(asText);
    if (permissions.length > 0) {
      lines.push(`permissions: ${permissions.join(', ')}`);
    }
    const refused = [
      ...asArray(data.refused).map(asText),
      ...this._offer.refused.map(item => `${item.key} ${item.origin}: ${item.why}`)
    ];
    if (lines.length === 0 && refused.length === 0) {
      return;
    }
    const allowed = data.allowed === true;
    if (lines.length > 0) {
      node.appendChild(
        el('div', undefined, allowed ? 'The view may reach (allowed):' : 'The view asks to reach (not allowed):')
      );
      const list = el('ul');
      for (const line of lines) {
        list.appendChild(el('li', undefined, line));
      }
      node.appendChild(list);
      const button = el('button', 'jp-Button jp-mod-styled', allowed ? 'Refuse them' : 'Allow them');
      button.disabled = !this._live;
      button.title = this._live ? 'the view starts again with this choice' : 'deciding needs the running kernel';
      button.addEventListener('click', () => this._comm?.send({ type: 'domains', allow: !allowed }));
      node.appendChild(button);
    }
    if (refused.length > 0) {
      const list = el('ul', APP_CLASS.refused);
      for (const line of refused) {
        list.appendChild(el('li', undefined, `refused: ${line}`));
      }
      node.appendChild(list);
    }
  }

  private _drawApprovals(data: JSONObject, trusted: boolean): void {
    const pending = asArray(data.pending)
      .map(asObject)
      .filter((item): item is JSONObject => item !== null)
      .slice(0, PENDING_MAX);
    this._shownPending = pending.length;
    const ids = pending.map(item => asText(asObject(item[WIDGET_MIME])?.model_id));
    // Incremental: an approval already shown stays as it is (and where it is); only new ones are drawn.
    for (const [id, output] of [...this._approvalOutputs]) {
      if (!ids.includes(id)) {
        output.dispose();
        this._approvalOutputs.delete(id);
      }
    }
    pending.forEach((bundle, index) => {
      if (!this._approvalOutputs.has(ids[index])) {
        const output = new WidgetOutput(this._options, this._appRendermime);
        this._approvalOutputs.set(ids[index], output);
        this._approvals.addWidget(output);
        void output.renderModel(new MimeModel({ data: bundle as never, trusted }));
      }
    });
  }

  private _drawBottom(data: JSONObject): void {
    const node = this._bottom.node;
    node.textContent = '';
    const decisions = asArray(data.decisions).map(asObject);
    if (decisions.length > 0) {
      const list = el('ul', APP_CLASS.decisions);
      for (const decision of decisions) {
        if (decision !== null) {
          const how = text(decision, 'how');
          const line = `the view called ${text(decision, 'tool')}: ${text(decision, 'state')}${how ? ` (${how})` : ''}`;
          list.appendChild(el('li', undefined, line));
        }
      }
      node.appendChild(list);
    }
    this._status = el('div', APP_CLASS.status, this._statusWords());
    node.appendChild(this._status);
  }

  private _statusWords(): string {
    return this._live
      ? 'live: the view’s calls go to the kernel, each behind its approval'
      : label(this._data, 'noLiveSession', 'no live session');
  }

  private _setLive(live: boolean): void {
    this._live = live;
    if (this._status !== null) {
      this._status.textContent = this._statusWords();
    }
    this._drawDomains(this._data);
  }

  // --- the kernel ------------------------------------------------------------------------------

  /** Open the comm to the kernel that made this output, if it runs and still holds the view. */
  private _connect(): void {
    if (this._connecting || this._comm !== null) {
      return;
    }
    const panel = panelOf(this);
    const viewId = text(this._data, 'viewId');
    if (panel === null || viewId === '') {
      return;
    }
    this._connecting = true;
    void panel.sessionContext.ready.then(() => {
      this._connecting = false;
      const kernel = panel.sessionContext.session?.kernel ?? null;
      if (kernel === null || this.isDisposed || this._comm !== null) {
        return;
      }
      this._open(kernel, viewId);
    });
  }

  private _open(kernel: Kernel.IKernelConnection, viewId: string): void {
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch {
      return; // the kernel has no comms
    }
    this._comm = comm;
    comm.onMsg = message => this._fromKernel(asObject(message.content.data) ?? {});
    comm.onClose = () => {
      this._comm = null;
      this._setLive(false);
      this._failWaiting(label(this._data, 'noLiveSession', 'no live session'));
    };
    this._setLive(true);
    void comm.open({ viewId });
  }

  private _fromKernel(data: JSONObject): void {
    if (data.type === 'gone') {
      this._setLive(false);
      return;
    }
    if (data.type !== 'response') {
      return;
    }
    const viewId = this._waiting.settle(data.id);
    if (viewId === undefined) {
      return;
    }
    const answer: Message = { jsonrpc: '2.0', id: viewId };
    if (data.error !== undefined) {
      answer.error = data.error;
    } else {
      answer.result = data.result;
    }
    this._toView(answer);
    this._thawIfIdle();
  }

  private _failWaiting(words: string): void {
    for (const viewId of this._waiting.drain()) {
      this._toView({ jsonrpc: '2.0', id: viewId, error: { code: REFUSED, message: words } });
    }
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
    if (frame !== this._frame) {
      return; // drawn anew meanwhile
    }
    const html = closed ? lockedHtml(text(this._data, 'html')) : `<p>${WEBRTC_OPEN}</p>`;
    this._toView({ jsonrpc: '2.0', method: RESOURCE_READY, params: { html } });
  }

  private _answer(id: number | string, result: unknown): void {
    this._toView({ jsonrpc: '2.0', id, result });
  }

  private _refuse(id: number | string, code: number, words: string): void {
    this._toView({ jsonrpc: '2.0', id, error: { code, message: words } });
  }

  private _request(id: number | string, method: string, params: JSONObject): void {
    switch (route(method)) {
      case 'initialize':
        this._answer(id, this._initializeResult());
        return;
      case 'ping':
        this._answer(id, {});
        return;
      case 'open-link':
        if (this._showLink(asText(params.url))) {
          this._answer(id, {});
        } else {
          this._refuse(id, REFUSED, 'mcp_app_refused: too many addresses to open; the last ones are shown.');
        }
        return;
      case 'display-mode':
        this._answer(id, { mode: 'inline' });
        return;
      case 'forward':
        this._forward(id, method, params);
        return;
      default:
        this._refuse(id, NOT_SUPPORTED, `${method} is not supported by purra-jupyter`);
    }
  }

  private _forward(id: number | string, method: string, params: JSONObject): void {
    if (this._comm === null) {
      this._refuse(id, REFUSED, label(this._data, 'noLiveSession', 'no live session'));
      return;
    }
    const local = this._waiting.admit(id);
    if (local === null) {
      const refusal = busy();
      this._refuse(id, refusal.code, refusal.message);
      return;
    }
    this._comm.send({ type: 'request', id: local, method, params: params as never });
  }

  private _notification(method: string, params: JSONObject): void {
    if (method === 'ui/notifications/initialized') {
      this._initialized = true;
      this._toView({
        jsonrpc: '2.0',
        method: 'ui/notifications/tool-input',
        params: { arguments: this._data.toolInput }
      });
      this._toView({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: this._data.toolResult });
      this._watchTheme();
    } else if (method === 'ui/notifications/size-changed') {
      this._setHeight(this._sizing.ask(params.height, this._frozen()));
    } else if (method === 'notifications/message' && this._logBudget.take(performance.now())) {
      this._comm?.send({ type: 'log', params: params as never });
    }
  }

  /** Whether the frame's size waits: a request of the view waits, or an approval of it is on screen. */
  private _frozen(): boolean {
    return this._waiting.size > 0 || this._shownPending > 0;
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

  private _initializeResult(): JSONObject {
    const allowed = this._data.allowed === true;
    const width = this._top.node.clientWidth;
    return {
      protocolVersion: text(this._data, 'protocolVersion') || '2026-01-26',
      hostInfo: { name: 'purra-jupyter', version: text(this._data, 'hostVersion') },
      hostCapabilities: {
        openLinks: {},
        serverTools: {},
        serverResources: {},
        logging: {},
        sandbox: {
          csp: this._csp(),
          permissions: allowed
            ? Object.fromEntries(asArray(this._data.permissions).map(name => [asText(name), {}]))
            : {}
        }
      },
      hostContext: {
        toolInfo: { tool: this._data.toolInfo ?? {} },
        theme: theme(),
        styles: { variables: styleVariables() },
        displayMode: 'inline',
        availableDisplayModes: ['inline'],
        containerDimensions: width > 0 ? { width, maxHeight: MAX_HEIGHT } : { maxHeight: MAX_HEIGHT },
        locale: navigator.language,
        timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        platform: 'web'
      }
    };
  }

  /** The theme the view was told, told again when JupyterLab's changes. */
  private _watchTheme(): void {
    if (this._themeWatch !== null) {
      return;
    }
    let told = theme();
    this._themeWatch = new MutationObserver(() => {
      const now = theme();
      if (now !== told && this._initialized) {
        told = now;
        this._toView({
          jsonrpc: '2.0',
          method: 'ui/notifications/host-context-changed',
          params: { theme: now, styles: { variables: styleVariables() } }
        });
      }
    });
    this._themeWatch.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-light'] });
  }

  /** An address the view asked to open: shown as text, for the person to copy; nothing navigates. False: over
   * the budget, not shown. */
  private _showLink(url: string): boolean {
    if (!this._linkBudget.take(performance.now())) {
      return false;
    }
    const node = this._links.node;
    const line = el('div', undefined, 'The view asks to open (copy it yourself if you trust it): ');
    line.appendChild(el('code', undefined, url.slice(0, 2000)));
    node.appendChild(line);
    while (node.childElementCount > LINKS_SHOWN) {
      node.firstElementChild?.remove();
    }
    return true;
  }

  private readonly _options: IRenderMime.IRendererOptions;
  private readonly _appRendermime: IRenderMimeRegistry;
  private readonly _top: Widget;
  private readonly _approvals: Panel;
  private readonly _links: Widget;
  private readonly _bottom: Widget;
  private _data: JSONObject = {};
  private _offer: IOffer = offer({}, []);
  private _key = '';
  private readonly _approvalOutputs = new Map<string, WidgetOutput>();
  private _shownPending = 0;
  private _frame: HTMLIFrameElement | null = null;
  private _domainsNode: HTMLElement | null = null;
  private _status: HTMLElement | null = null;
  private _initialized = false;
  private _themeWatch: MutationObserver | null = null;
  private _comm: Kernel.IComm | null = null;
  private _connecting = false;
  private _live = false;
  private readonly _waiting = new Waiting();
  private readonly _sizing = new Sizing();
  private readonly _logBudget = new Budget(LOG_BURST, LOG_PER_SECOND);
  private readonly _linkBudget = new Budget(LINK_BURST, LINK_PER_SECOND);
  private _unguard: (() => void) | null = null;
}

/** Before ipywidgets' view and ours (widgetoutput/plugin.ts), so that the view is what draws this output. */
export const APP_RANK = -30;

/** Adds the view renderer to the application's rendermime. */
export const appPlugin: JupyterFrontEndPlugin<void> = {
  id: 'purra-jupyter-renderers:apps',
  description: "Tools' own views (MCP Apps) of purra_jupyter, sandboxed, their requests through the kernel.",
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (_: JupyterFrontEnd, rendermime: IRenderMimeRegistry): void => {
    rendermime.addFactory(
      {
        safe: true, // the server's HTML only ever runs in the sandbox; everything else is text
        mimeTypes: [APP_MIME],
        defaultRank: APP_RANK,
        createRenderer: options => new AppOutput(options, rendermime)
      },
      APP_RANK
    );
  }
};
