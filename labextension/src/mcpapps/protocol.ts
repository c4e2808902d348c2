/**
 * The host side of a view's bridge (MCP Apps), as pure functions and small state holders with no DOM: which message
 * the host acts on, where each request goes, how many of the view's requests may wait, the frame's height, the
 * budget of what a view may add to its output, the messages the host sends to the view and to the kernel, and the
 * answer to `ui/initialize`. widgets.ts wires them to the page; the jest tests drive them directly.
 */

import { type JSONObject, asArray, asObject, asText } from '../dom';
import { WIDGET_MIME } from '../mimetypes';
import { type IViewCsp, PROXY_READY, RESOURCE_READY, WEBRTC_OPEN, lockedHtml } from './sandbox';

/** How many requests of one view may wait at once (for an approval, the kernel or the server): a person decides a
 * few at a time, and a view asking more is refused at once rather than queued in front of them. The kernel holds
 * the same bound per view (purra_jupyter/ui/apps.py: PENDING_MAX). */
export const PENDING_MAX = 3;
export const MIN_HEIGHT = 60;
export const MAX_HEIGHT = 1600;
/** JSON-RPC's "method not found", and the spec's implementation-defined refusal of a host. */
export const NOT_SUPPORTED = -32601;
export const REFUSED = -32000;

/** One message the host acts on: the proxy saying it is ready, a request of the view, or a notification of it. */
export type Inbound =
  | { kind: 'proxy-ready' }
  | { kind: 'request'; id: number | string; method: string; params: JSONObject }
  | { kind: 'notification'; method: string; params: JSONObject };

/**
 * What a message event means to the host of one view, or null: only a message whose source is that view's own frame
 * (its proxy, which relays nothing but its own view's messages) counts. Views can post to each other's frames and to
 * the page; whatever another frame sends is ignored here.
 */
export function inbound(source: unknown, own: unknown, data: unknown): Inbound | null {
  if (own === null || own === undefined || source !== own) {
    return null;
  }
  const message = asObject(data);
  if (message === null || message.jsonrpc !== '2.0' || typeof message.method !== 'string') {
    return null;
  }
  const params = asObject(message.params) ?? {};
  if (message.method === PROXY_READY) {
    return { kind: 'proxy-ready' };
  }
  if (typeof message.id === 'number' || typeof message.id === 'string') {
    return { kind: 'request', id: message.id, method: message.method, params };
  }
  return message.id === undefined ? { kind: 'notification', method: message.method, params } : null;
}

/** Where a request of the view goes: answered here, sent to the kernel, or refused as not supported. */
export type Route = 'initialize' | 'ping' | 'open-link' | 'display-mode' | 'forward' | 'unsupported';

const LOCAL: { readonly [method: string]: Route } = {
  'ui/initialize': 'initialize',
  ping: 'ping',
  'ui/open-link': 'open-link',
  'ui/request-display-mode': 'display-mode'
};
/** Requests the kernel answers (purra_jupyter/apps.py: FORWARDED). */
export const FORWARDED: ReadonlyArray<string> = ['tools/call', 'resources/read'];

export function route(method: string): Route {
  if (Object.prototype.hasOwnProperty.call(LOCAL, method)) {
    return LOCAL[method];
  }
  return FORWARDED.includes(method) ? 'forward' : 'unsupported';
}

/** The view's requests sent on to the kernel and not yet answered, by the host's own id; at most PENDING_MAX. */
export class Waiting {
  /** The host's id for a new request of the view's id `viewId`, or null when PENDING_MAX already wait. */
  admit(viewId: number | string): number | null {
    if (this._ids.size >= PENDING_MAX) {
      return null;
    }
    this._next += 1;
    this._ids.set(this._next, viewId);
    return this._next;
  }

  /** The view's id of the request the kernel answered (undefined: not one of ours, or answered already). */
  settle(local: unknown): number | string | undefined {
    if (typeof local !== 'number') {
      return undefined;
    }
    const viewId = this._ids.get(local);
    this._ids.delete(local);
    return viewId;
  }

  /** Every request still waiting (to be answered with an error), forgotten. */
  drain(): Array<number | string> {
    const ids = [...this._ids.values()];
    this._ids.clear();
    return ids;
  }

  get size(): number {
    return this._ids.size;
  }

  private _next = 0;
  private readonly _ids = new Map<number, number | string>();
}

/** The refusal a view gets for a request beyond PENDING_MAX. */
export function busy(): { code: number; message: string } {
  return {
    code: REFUSED,
    message: `mcp_app_refused: ${PENDING_MAX} requests of this view are waiting already; ask again once they are decided.`
  };
}

/** The height a view asks for, within bounds, or null when it is not a number. */
export function frameHeight(value: unknown): number | null {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    return null;
  }
  return Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, Math.ceil(value)));
}

/**
 * The frame's height: applied at once, except while the view has a request waiting (an approval may be on screen
 * below it, and a view that resizes itself would move it); then the last height asked for waits until none does.
 */
export class Sizing {
  /** The height to apply now, or null (none asked, or frozen: it is kept for `thaw`). */
  ask(value: unknown, frozen: boolean): number | null {
    const height = frameHeight(value);
    if (height === null) {
      return null;
    }
    if (frozen) {
      this._held = height;
      return null;
    }
    return height;
  }

  /** The height asked for while frozen, once nothing waits any more (null: none). */
  thaw(): number | null {
    const held = this._held;
    this._held = null;
    return held;
  }

  private _held: number | null = null;
}

/**
 * A budget of things a view may add to the page or the kernel's log (log lines, addresses to show): a burst, then a
 * steady rate; what is over it is dropped and counted.
 */
export class Budget {
  constructor(
    readonly burst: number,
    readonly perSecond: number
  ) {
    this._tokens = burst;
  }

  take(nowMs: number): boolean {
    if (this._last !== null) {
      this._tokens = Math.min(this.burst, this._tokens + ((nowMs - this._last) / 1000) * this.perSecond);
    }
    this._last = nowMs;
    if (this._tokens < 1) {
      this.dropped += 1;
      return false;
    }
    this._tokens -= 1;
    return true;
  }

  dropped = 0;
  private _tokens: number;
  private _last: number | null = null;
}

// --- messages to the view ------------------------------------------------------------------------------------

/** One JSON-RPC message, as posted to the view's proxy. */
export type Message = { [key: string]: unknown };
export type RequestId = number | string;

/** The notifications of the view the host acts on, and the ones it sends. */
export const INITIALIZED = 'ui/notifications/initialized';
export const SIZE_CHANGED = 'ui/notifications/size-changed';
export const LOG_MESSAGE = 'notifications/message';
export const TOOL_INPUT = 'ui/notifications/tool-input';
export const TOOL_RESULT = 'ui/notifications/tool-result';
export const HOST_CONTEXT_CHANGED = 'ui/notifications/host-context-changed';

export function answer(id: RequestId, result: unknown): Message {
  return { jsonrpc: '2.0', id, result };
}

export function refusal(id: RequestId, code: number, message: string): Message {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

export function notification(method: string, params: unknown): Message {
  return { jsonrpc: '2.0', method, params };
}

/** The refusal of an address beyond the view's budget of them. */
export const TOO_MANY_LINKS = 'mcp_app_refused: too many addresses to open; the last ones are shown.';

/** The refusal of a method the host does not support. */
export function unsupported(id: RequestId, method: string): Message {
  return refusal(id, NOT_SUPPORTED, `${method} is not supported by purra-jupyter`);
}

/**
 * The view's document for the proxy (`sandbox-resource-ready`): its HTML with the lockdown first when the page's
 * peer keeper holds its process's peer connections (`closed`), else only the line saying why it is stopped.
 */
export function resourceReady(closed: boolean, html: string): Message {
  return notification(RESOURCE_READY, { html: closed ? lockedHtml(html) : `<p>${WEBRTC_OPEN}</p>` });
}

/** The call's input and result, which the view gets once it says it is initialized. */
export function toolNotifications(data: JSONObject): Message[] {
  return [notification(TOOL_INPUT, { arguments: data.toolInput }), notification(TOOL_RESULT, data.toolResult)];
}

export function hostContextChanged(theme: Theme, variables: StyleVariables): Message {
  return notification(HOST_CONTEXT_CHANGED, { theme, styles: { variables } });
}

// --- the kernel ----------------------------------------------------------------------------------------------

/** A message of the kernel (purra_jupyter/ui/apps.py) as the host acts on it: the view is gone, the answer to a
 * request of the view (already settled in `waiting`), or nothing (not one of ours, or answered already). */
export type KernelEvent = { kind: 'gone' } | { kind: 'answer'; message: Message } | null;

export function fromKernel(data: JSONObject, waiting: Waiting): KernelEvent {
  if (data.type === 'gone') {
    return { kind: 'gone' };
  }
  if (data.type !== 'response') {
    return null;
  }
  const viewId = waiting.settle(data.id);
  if (viewId === undefined) {
    return null;
  }
  const message: Message = { jsonrpc: '2.0', id: viewId };
  if (data.error !== undefined) {
    message.error = data.error;
  } else {
    message.result = data.result;
  }
  return { kind: 'answer', message };
}

/** What the host sends the kernel: a request of the view under the host's own id, a log line, the person's choice
 * of origins. */
export function kernelRequest(local: number, method: string, params: JSONObject): JSONObject {
  return { type: 'request', id: local, method, params };
}

export function kernelLog(params: JSONObject): JSONObject {
  return { type: 'log', params };
}

export function domainsChoice(allow: boolean): JSONObject {
  return { type: 'domains', allow };
}

// --- ui/initialize -------------------------------------------------------------------------------------------

export type Theme = 'light' | 'dark';
export type StyleVariables = { [name: string]: string };

/** The theme JupyterLab shows, from its body's `data-jp-theme-light`. */
export function themeOf(themeLight: string | undefined): Theme {
  return themeLight === 'false' ? 'dark' : 'light';
}

/** The spec's style variables and the JupyterLab CSS variables they are read from. */
export const STYLE_VARIABLES: ReadonlyArray<readonly [string, string]> = [
  ['--color-background-primary', '--jp-layout-color0'],
  ['--color-background-secondary', '--jp-layout-color1'],
  ['--color-text-primary', '--jp-ui-font-color0'],
  ['--color-text-secondary', '--jp-ui-font-color1'],
  ['--color-border-primary', '--jp-border-color1'],
  ['--font-sans', '--jp-ui-font-family'],
  ['--font-mono', '--jp-code-font-family']
];

/** JupyterLab's theme colours and fonts under the spec's names, as `read` gives them (empty ones left out). */
export function styleVariables(read: (name: string) => string): StyleVariables {
  const variables: StyleVariables = {};
  for (const [spec, ours] of STYLE_VARIABLES) {
    const value = read(ours).trim();
    if (value) {
      variables[spec] = value;
    }
  }
  return variables;
}

/** What the host knows of the page when the view asks `ui/initialize`. */
export interface IHostFacts {
  /** The origins the view may reach (origins.ts: grantedCsp). */
  readonly csp: IViewCsp;
  readonly theme: Theme;
  readonly variables: StyleVariables;
  /** The output's width in pixels; 0 while it is not laid out. */
  readonly width: number;
  readonly locale: string;
  readonly timeZone: string;
}

/** The answer to `ui/initialize`: the host, what it supports, and the context the view is drawn in. */
export function initializeResult(data: JSONObject, facts: IHostFacts): JSONObject {
  const allowed = data.allowed === true;
  return {
    protocolVersion: stringField(data, 'protocolVersion') || '2026-01-26',
    hostInfo: { name: 'purra-jupyter', version: stringField(data, 'hostVersion') },
    hostCapabilities: {
      openLinks: {},
      serverTools: {},
      serverResources: {},
      logging: {},
      sandbox: {
        csp: facts.csp,
        permissions: allowed ? Object.fromEntries(asArray(data.permissions).map(name => [asText(name), {}])) : {}
      }
    },
    hostContext: {
      toolInfo: { tool: data.toolInfo ?? {} },
      theme: facts.theme,
      styles: { variables: facts.variables },
      displayMode: 'inline',
      availableDisplayModes: ['inline'],
      containerDimensions: facts.width > 0 ? { width: facts.width, maxHeight: MAX_HEIGHT } : { maxHeight: MAX_HEIGHT },
      locale: facts.locale,
      timeZone: facts.timeZone,
      platform: 'web'
    }
  };
}

// --- the payload ---------------------------------------------------------------------------------------------

/** A string field of the saved payload, or '' (a saved file may hold anything). */
export function stringField(data: JSONObject, key: string): string {
  return typeof data[key] === 'string' ? (data[key] as string) : '';
}

/**
 * What decides whether the view is drawn anew (a new frame, the view started again): which view, its HTML's digest,
 * the person's choice of origins and the output's trust. Anything else the kernel rewrites (a decision, an
 * approval) leaves the running view as it is.
 */
export function viewKey(data: JSONObject, trusted: boolean): string {
  return [stringField(data, 'viewId'), stringField(data, 'sha256'), String(data.allowed === true), trusted].join(' ');
}

/** One approval of the view's calls waiting for the person: its widget model id and its output's MIME bundle. */
export interface IPendingApproval {
  readonly modelId: string;
  readonly bundle: JSONObject;
}

/** The approvals the payload lists (at most PENDING_MAX, what the kernel holds), each with its model id. */
export function pendingApprovals(data: JSONObject): IPendingApproval[] {
  return asArray(data.pending)
    .map(asObject)
    .filter((item): item is JSONObject => item !== null)
    .slice(0, PENDING_MAX)
    .map(bundle => ({ modelId: asText(asObject(bundle[WIDGET_MIME])?.model_id), bundle }));
}
