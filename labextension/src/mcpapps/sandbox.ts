/**
 * The sandbox of a tool's own view (MCP Apps): pure functions, no DOM of the page.
 *
 * A web host must wrap a view in a sandbox proxy of another origin (the spec's "Sandbox proxy"). Here the proxy is
 * an `<iframe sandbox="allow-scripts" srcdoc=…>`: an opaque origin, so no same-origin access to JupyterLab, and no
 * second port (it works on Binder). Its document carries the Content-Security-Policy below, which the view's own
 * srcdoc frame inherits, and which also governs where the view's frame may navigate (`frame-src`): a view cannot
 * reach the network, navigate itself, its parent or the top, open a popup or submit a form, except to the origins
 * its server declared and the person allowed. The proxy only relays JSON-RPC messages between the page and the view,
 * each checked by its source.
 */

/** The origins a view's resource may declare, by the key that opens each CSP directive (McpUiResourceCsp). */
export interface IViewCsp {
  connectDomains: string[];
  resourceDomains: string[];
  frameDomains: string[];
  baseUriDomains: string[];
}

export const CSP_KEYS: ReadonlyArray<keyof IViewCsp> = [
  'connectDomains',
  'resourceDomains',
  'frameDomains',
  'baseUriDomains'
];

/** The browser features a view may ask for, by their Permissions Policy names. */
const PERMISSION_FEATURES: { readonly [name: string]: string } = {
  camera: 'camera',
  microphone: 'microphone',
  geolocation: 'geolocation',
  clipboardWrite: 'clipboard-write'
};

/** One plain origin (as purra_jupyter/app_meta.py checks it): anything else never reaches a policy. */
const ORIGIN =
  /^(https|wss|http|ws):\/\/(\*\.)?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$/;

export function isOrigin(value: unknown): value is string {
  return typeof value === 'string' && ORIGIN.test(value);
}

/** The origins of `value` (a saved payload: anything) that are plain origins, per key. */
export function viewCsp(value: unknown): IViewCsp {
  const source = typeof value === 'object' && value !== null ? (value as { [key: string]: unknown }) : {};
  const pick = (key: keyof IViewCsp): string[] => {
    const list = source[key];
    return Array.isArray(list) ? list.filter(isOrigin) : [];
  };
  return {
    connectDomains: pick('connectDomains'),
    resourceDomains: pick('resourceDomains'),
    frameDomains: pick('frameDomains'),
    baseUriDomains: pick('baseUriDomains')
  };
}

/** No origin at all: the spec's restrictive default. */
export const NO_ORIGINS: IViewCsp = { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] };

/**
 * The policy of the proxy and the view: the spec's default (no network, inline script and style, `data:` images and
 * media) plus the allowed origins, and no object, no form target, no base but an allowed one. `'self'` is left out:
 * an opaque origin has no self worth naming, and in a srcdoc frame it could name the page's own server.
 */
export function policy(csp: IViewCsp): string {
  const or = (list: string[], fallback: string): string => (list.length > 0 ? list.join(' ') : fallback);
  const resources = csp.resourceDomains.join(' ');
  const withResources = (first: string): string => [first, resources].filter(part => part !== '').join(' ');
  return [
    "default-src 'none'",
    `script-src ${withResources("'unsafe-inline'")}`,
    `style-src ${withResources("'unsafe-inline'")}`,
    `img-src ${withResources('data:')}`,
    `media-src ${withResources('data:')}`,
    `font-src ${or(csp.resourceDomains, "'none'")}`,
    `connect-src ${or(csp.connectDomains, "'none'")}`,
    `frame-src ${or(csp.frameDomains, "'none'")}`,
    `base-uri ${or(csp.baseUriDomains, "'none'")}`,
    "worker-src 'none'",
    "manifest-src 'none'",
    "object-src 'none'",
    "form-action 'none'"
  ].join('; ');
}

/**
 * Features a cross-origin frame holds unless its `allow` attribute takes them away: a picture-in-picture window
 * would float over the kit's approval, and the Topics API is read by requests no CSP directive governs.
 */
export const DENIED_FEATURES: ReadonlyArray<string> = ['picture-in-picture', 'browsing-topics'];

/** The frames' `allow` attribute: the allowed permissions (none unknown), and every feature of DENIED_FEATURES
 * taken away. */
export function allowAttribute(permissions: ReadonlyArray<unknown>): string {
  const granted = permissions
    .filter(
      (name): name is string =>
        typeof name === 'string' && Object.prototype.hasOwnProperty.call(PERMISSION_FEATURES, name)
    )
    .map(name => PERMISSION_FEATURES[name]);
  return [...granted, ...DENIED_FEATURES.map(name => `${name} 'none'`)].join('; ');
}

/** The reserved methods between the page and the proxy, never relayed to or from the view. */
export const SANDBOX_PREFIX = 'ui/notifications/sandbox-';
export const PROXY_READY = 'ui/notifications/sandbox-proxy-ready';
export const RESOURCE_READY = 'ui/notifications/sandbox-resource-ready';

function attribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * The proxy's document: the policy as a `<meta>`, and a script that makes the view's frame once the page sends the
 * view's HTML, then relays messages: from the page (its parent) to the view, from the view (its child) to the page,
 * nothing from anyone else, no reserved method from the view.
 */
export function proxyDocument(csp: IViewCsp, permissions: ReadonlyArray<unknown>): string {
  const allow = allowAttribute(permissions);
  const script = `(() => {
  "use strict";
  const host = window.parent;
  let view = null;
  const reserved = method => typeof method === "string" && method.startsWith(${JSON.stringify(SANDBOX_PREFIX)});
  window.addEventListener("message", event => {
    const data = event.data;
    if (data === null || typeof data !== "object" || data.jsonrpc !== "2.0") return;
    if (event.source === host) {
      if (data.method === ${JSON.stringify(RESOURCE_READY)}) {
        if (view !== null || !data.params || typeof data.params.html !== "string") return;
        view = document.createElement("iframe");
        view.setAttribute("sandbox", "allow-scripts");
        view.setAttribute("allow", ${JSON.stringify(allow)});
        view.setAttribute("title", "the tool's view");
        view.srcdoc = data.params.html;
        document.body.appendChild(view);
      } else if (!reserved(data.method) && view !== null && view.contentWindow !== null) {
        view.contentWindow.postMessage(data, "*");
      }
    } else if (view !== null && event.source === view.contentWindow && !reserved(data.method)) {
      host.postMessage(data, "*");
    }
  });
  host.postMessage({ jsonrpc: "2.0", method: ${JSON.stringify(PROXY_READY)}, params: {} }, "*");
})();`;
  return [
    '<!DOCTYPE html><html><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${attribute(policy(csp))}">`,
    '<style>html,body{margin:0;height:100%;overflow:hidden;background:transparent}',
    'iframe{border:0;width:100%;height:100%;display:block}</style>',
    `</head><body><script>${script}</script></body></html>`
  ].join('');
}

/**
 * How many peer connections a Chromium renderer process holds at most (blink's kMaxPeerConnections); a script that
 * holds them all leaves none to any frame of its process, which is how WebRTC, a network channel no CSP directive
 * governs in Chromium, is closed to a view and to the frames it nests (they share its process). A count reached
 * without refusal means the browser has no such limit: the view is then stopped.
 */
export const PEER_LIMIT = 500;
const PEER_CAP = PEER_LIMIT * 4;
export const WEBRTC_OPEN =
  'purra-jupyter stopped this view: this browser would let it open WebRTC connections, which no policy governs. ' +
  'Views run in Chromium-based browsers.';

/**
 * A script that takes every peer connection its process still has and keeps them as long as its document lives
 * (referenced from a listener only, so that no other script can reach and close them); `then` runs with whether
 * the browser refused more, which is what makes the process closed to WebRTC.
 */
function peerHold(then: string): string {
  return `(() => {
  "use strict";
  const Peer = window.RTCPeerConnection || window.webkitRTCPeerConnection;
  const held = [];
  let closed = typeof Peer !== "function";
  while (!closed && held.length < ${PEER_CAP}) {
    try { held.push(new Peer()); } catch (refused) { closed = true; }
  }
  window.addEventListener("pagehide", () => held.length);
  ${then}
})();`;
}

/** The names a view's realm loses before its own script runs. */
export const REMOVED_GLOBALS: ReadonlyArray<string> = ['RTCPeerConnection', 'webkitRTCPeerConnection'];

/** The first thing in a view's document: no DNS prefetch, and the peer connections held, then taken away. */
export function lockdown(): string {
  const remove = `for (const name of ${JSON.stringify(REMOVED_GLOBALS)}) {
    Object.defineProperty(window, name, { value: undefined, writable: false, configurable: false });
  }
  if (!closed) {
    window.stop();
    document.documentElement.textContent = ${JSON.stringify(WEBRTC_OPEN)};
  }`;
  return (
    '<meta http-equiv="x-dns-prefetch-control" content="off">' +
    `<script>${peerHold(remove).replace(/<\/(script)/gi, '<\\/$1')}</script>`
  );
}

/** A doctype, and whatever may precede it, at the start of a document: the lockdown goes right after it, so that
 * a standards-mode view stays in standards mode. */
const LEADING_DOCTYPE = /^\uFEFF?(?:\s|<!--[\s\S]*?-->)*<!doctype[^>]*>/i;

/** The view's HTML with the lockdown first (after its doctype, when it has one). */
export function lockedHtml(html: string): string {
  const doctype = LEADING_DOCTYPE.exec(html);
  const at = doctype === null ? 0 : doctype[0].length;
  return html.slice(0, at) + lockdown() + html.slice(at);
}

/** The message with which the keeper (below) says it is holding its process's peer connections. */
export const KEEPER_READY = 'purra-jupyter:peer-keeper';

/**
 * The keeper: one hidden sandboxed frame a page keeps while it lives, in the process Chromium gives the page's
 * sandboxed frames, holding that process's peer connections. Views hold none then, so that closing one view frees
 * nothing another could take.
 */
export function keeperDocument(): string {
  const tell = `window.parent.postMessage({ type: ${JSON.stringify(KEEPER_READY)}, closed, held: held.length }, "*");`;
  return [
    '<!DOCTYPE html><html><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${attribute("default-src 'none'; script-src 'unsafe-inline'")}">`,
    `</head><body><script>${peerHold(tell)}</script></body></html>`
  ].join('');
}
