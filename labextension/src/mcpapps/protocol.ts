/**
 * The host side of a view's bridge (MCP Apps), as pure functions and small state holders with no DOM: which message
 * the host acts on, where each request goes, how many of the view's requests may wait, the frame's height and the
 * budget of what a view may add to its output. apps.ts wires them to the page; the jest tests drive them directly.
 */

import { type JSONObject, asObject } from '../dom';
import { PROXY_READY } from './sandbox';

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
