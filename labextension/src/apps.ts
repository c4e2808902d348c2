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
import type { Kernel } from '@jupyterlab/services';
import { Panel, Widget } from '@lumino/widgets';

import { CLASS as DOM_CLASS, type JSONObject, asArray, asObject, asText, el, label } from './dom';
import { NO_ORIGINS, PROXY_READY, RESOURCE_READY, allowAttribute, proxyDocument, viewCsp } from './sandbox';
import { WIDGET_MIME, WidgetOutput, panelOf } from './widgets';

export const APP_MIME = 'application/vnd.purra.app+json';
/** The comm target of the kernel's side (purra_jupyter/ui/apps.py: COMM_TARGET). */
const COMM_TARGET = 'purra.app';
/** Requests the kernel answers (purra_jupyter/apps.py: FORWARDED); the other ui/ ones are this renderer's. */
const FORWARDED = new Set(['tools/call', 'resources/read']);
const NOT_SUPPORTED = -32601;
const REFUSED = -32000;
const MIN_HEIGHT = 60;
const MAX_HEIGHT = 1600;
const FIRST_HEIGHT = 200;

export const APP_CLASS = {
  root: 'jp-PurraApp',
  head: 'jp-PurraApp-head',
  domains: 'jp-PurraApp-domains',
  frame: 'jp-PurraApp-frame',
  bordered: 'jp-PurraApp-bordered',
  links: 'jp-PurraApp-links',
  approvals: 'jp-PurraApp-approvals',
  decisions: 'jp-PurraApp-decisions',
  status: 'jp-PurraApp-status'
} as const;

type Message = { [key: string]: unknown };

/** What the saved payload says, read defensively. */
function text(data: JSONObject, key: string): string {
  return typeof data[key] === 'string' ? (data[key] as string) : '';
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

/** One view output: the head, the domains it asks for, the sandboxed frame, then approvals and decisions. */
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
    this._bottom = new Widget();
    this.addWidget(this._top);
    this.addWidget(this._approvals);
    this.addWidget(this._bottom);
    window.addEventListener('message', this._onMessage);
  }

  /** Called again with the new payload when the kernel rewrites the output (a decision, an approval, a choice). */
  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = asObject(model.data[APP_MIME]) ?? {};
    this._data = data;
    const key = [text(data, 'viewId'), text(data, 'sha256'), String(data.allowed === true), model.trusted].join(' ');
    if (key !== this._key) {
      this._key = key;
      this._drawTop(data, model.trusted);
    } else {
      this._drawDomains(data);
    }
    this._drawApprovals(data, model.trusted);
    this._drawBottom(data);
    if (this.isAttached) {
      this._connect();
    }
  }

  protected onAfterAttach(): void {
    this._connect();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
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
    const allow = allowAttribute(permissions); // the proxy delegates to the view only what it holds
    if (allow) {
      frame.setAttribute('allow', allow);
    }
    frame.style.height = `${FIRST_HEIGHT}px`;
    frame.srcdoc = proxyDocument(allowed ? viewCsp(data.declared) : NO_ORIGINS, permissions);
    this._frame = frame;
    node.appendChild(frame);
    this._links = el('div', APP_CLASS.links);
    node.appendChild(this._links);
  }

  private _drawDomains(data: JSONObject): void {
    const node = this._domainsNode;
    if (node === null) {
      return;
    }
    node.textContent = '';
    const declared = asObject(data.declared) ?? {};
    const lines: string[] = [];
    for (const [key, values] of Object.entries(declared)) {
      lines.push(`${key}: ${asArray(values).map(asText).join(', ')}`);
    }
    const permissions = asArray(data.permissions).map(asText);
    if (permissions.length > 0) {
      lines.push(`permissions: ${permissions.join(', ')}`);
    }
    for (const refused of asArray(data.refused)) {
      lines.push(`refused: ${asText(refused)}`);
    }
    if (lines.length === 0) {
      return;
    }
    const allowed = data.allowed === true;
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

  private _drawApprovals(data: JSONObject, trusted: boolean): void {
    const pending = asArray(data.pending)
      .map(asObject)
      .filter((item): item is JSONObject => item !== null);
    const ids = pending.map(item => asText(asObject(item[WIDGET_MIME])?.model_id)).join(' ');
    if (ids === this._approvalIds) {
      return;
    }
    this._approvalIds = ids;
    for (const child of [...this._approvals.widgets]) {
      child.dispose();
    }
    for (const bundle of pending) {
      const output = new WidgetOutput(this._options, this._appRendermime);
      this._approvals.addWidget(output);
      void output.renderModel(new MimeModel({ data: bundle as never, trusted }));
    }
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
      this._failPending(label(this._data, 'noLiveSession', 'no live session'));
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
    const local = typeof data.id === 'number' ? data.id : -1;
    const viewId = this._waiting.get(local);
    if (viewId === undefined) {
      return;
    }
    this._waiting.delete(local);
    const answer: Message = { jsonrpc: '2.0', id: viewId };
    if (data.error !== undefined) {
      answer.error = data.error;
    } else {
      answer.result = data.result;
    }
    this._toView(answer);
  }

  private _failPending(words: string): void {
    for (const viewId of this._waiting.values()) {
      this._toView({ jsonrpc: '2.0', id: viewId, error: { code: REFUSED, message: words } });
    }
    this._waiting.clear();
  }

  // --- the view --------------------------------------------------------------------------------

  private _toView(message: Message): void {
    this._frame?.contentWindow?.postMessage(message, '*');
  }

  private readonly _onMessage = (event: MessageEvent): void => {
    const frame = this._frame;
    if (frame === null || event.source !== frame.contentWindow) {
      return; // only what the proxy of this output relays
    }
    const message = asObject(event.data);
    if (message === null || message.jsonrpc !== '2.0') {
      return;
    }
    const method = typeof message.method === 'string' ? message.method : null;
    const hasId = typeof message.id === 'number' || typeof message.id === 'string';
    if (method === PROXY_READY) {
      this._toView({ jsonrpc: '2.0', method: RESOURCE_READY, params: { html: text(this._data, 'html') } });
    } else if (method !== null && hasId) {
      this._request(message.id as number | string, method, asObject(message.params) ?? {});
    } else if (method !== null) {
      this._notification(method, asObject(message.params) ?? {});
    }
  };

  private _answer(id: number | string, result: unknown): void {
    this._toView({ jsonrpc: '2.0', id, result });
  }

  private _refuse(id: number | string, code: number, words: string): void {
    this._toView({ jsonrpc: '2.0', id, error: { code, message: words } });
  }

  private _request(id: number | string, method: string, params: JSONObject): void {
    if (method === 'ui/initialize') {
      this._answer(id, this._initializeResult());
    } else if (method === 'ping') {
      this._answer(id, {});
    } else if (method === 'ui/open-link') {
      this._showLink(asText(params.url));
      this._answer(id, {});
    } else if (method === 'ui/request-display-mode') {
      this._answer(id, { mode: 'inline' });
    } else if (FORWARDED.has(method)) {
      if (this._comm === null) {
        this._refuse(id, REFUSED, label(this._data, 'noLiveSession', 'no live session'));
        return;
      }
      const local = (this._nextId += 1);
      this._waiting.set(local, id);
      this._comm.send({ type: 'request', id: local, method, params: params as never });
    } else {
      this._refuse(id, NOT_SUPPORTED, `${method} is not supported by purra-jupyter`);
    }
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
      const height = typeof params.height === 'number' ? params.height : NaN;
      if (this._frame !== null && Number.isFinite(height)) {
        this._frame.style.height = `${Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, Math.ceil(height)))}px`;
      }
    } else if (method === 'notifications/message') {
      this._comm?.send({ type: 'log', params: params as never });
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
          csp: allowed ? viewCsp(this._data.declared) : NO_ORIGINS,
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

  /** An address the view asked to open: shown as text, for the person to copy; nothing navigates. */
  private _showLink(url: string): void {
    if (this._links === null) {
      return;
    }
    const line = el('div', undefined, 'The view asks to open (copy it yourself if you trust it): ');
    line.appendChild(el('code', undefined, url.slice(0, 2000)));
    this._links.appendChild(line);
  }

  private readonly _options: IRenderMime.IRendererOptions;
  private readonly _appRendermime: IRenderMimeRegistry;
  private readonly _top: Widget;
  private readonly _approvals: Panel;
  private readonly _bottom: Widget;
  private _data: JSONObject = {};
  private _key = '';
  private _approvalIds: string | null = null;
  private _frame: HTMLIFrameElement | null = null;
  private _domainsNode: HTMLElement | null = null;
  private _links: HTMLElement | null = null;
  private _status: HTMLElement | null = null;
  private _initialized = false;
  private _themeWatch: MutationObserver | null = null;
  private _comm: Kernel.IComm | null = null;
  private _connecting = false;
  private _live = false;
  private _nextId = 0;
  private readonly _waiting = new Map<number, number | string>(); // our request id -> the view's
}

/** Before ipywidgets' view and ours (widgets.ts), so that the view is what draws this output. */
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
