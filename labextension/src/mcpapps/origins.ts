/**
 * Which origins a tool's view is offered, as pure functions: the ones its server declared (sandbox.ts: viewCsp) but
 * any that serves this page, which are refused; the lines the person reads before allowing them; and the origins
 * the view gets once the person has chosen. widgets.ts shows them; the jest tests drive them directly.
 */

import { type JSONObject, asArray, asText } from '../dom';
import { type IViewCsp, CSP_KEYS, NO_ORIGINS, viewCsp } from './sandbox';

const DEFAULT_PORTS: { readonly [scheme: string]: string } = { http: '80', ws: '80', https: '443', wss: '443' };

interface IOriginParts {
  secure: boolean;
  host: string;
  port: string;
}

/** An origin's scheme family (http and ws alike, https and wss alike), host and port (the default one spelled). */
function parts(origin: string): IOriginParts | null {
  const found = /^(https?|wss?):\/\/(\[[0-9a-f:.]+\]|[^/:]+)(?::([0-9]{1,5}))?$/i.exec(origin.trim());
  if (found === null) {
    return null;
  }
  const scheme = found[1].toLowerCase();
  return {
    secure: scheme === 'https' || scheme === 'wss',
    host: found[2].toLowerCase(),
    port: found[3] ?? DEFAULT_PORTS[scheme]
  };
}

/** Whether a host name reaches this machine's own loopback interface whatever it is called. */
function loopback(host: string): boolean {
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '[::1]' ||
    /^127(\.[0-9]{1,3}){3}$/.test(host) ||
    host === '0.0.0.0'
  );
}

/** Whether `pattern` (a host, or `*.` and a domain) names `host`. */
function namesHost(pattern: string, host: string): boolean {
  if (pattern.startsWith('*.')) {
    return host.endsWith(pattern.slice(1)) || host === pattern.slice(2);
  }
  return pattern === host;
}

/**
 * Whether a declared origin would reach the server that serves this page (its origin, its base URL's, its
 * websocket's: `page`), whatever scheme of the pair or loopback name it uses: a view must never be given the
 * Jupyter server, which runs code.
 */
export function servesThisPage(origin: string, page: ReadonlyArray<string>): boolean {
  const declared = parts(origin);
  if (declared === null) {
    return false;
  }
  return page.some(pageOrigin => {
    const served = parts(pageOrigin);
    if (served === null || served.port !== declared.port) {
      return false;
    }
    if (namesHost(declared.host, served.host)) {
      return true;
    }
    const wildcard = declared.host.startsWith('*.');
    return loopback(served.host) && (loopback(declared.host) || (wildcard && declared.host.endsWith('.localhost')));
  });
}

export const PAGE_ORIGIN_REASON = 'the Jupyter server that serves this notebook (never given to a view)';

/** What the person is offered to allow: the declared origins but those that serve this page, which are refused. */
export interface IOffer {
  csp: IViewCsp;
  refused: Array<{ key: keyof IViewCsp; origin: string; why: string }>;
}

export function offer(declared: unknown, page: ReadonlyArray<string>): IOffer {
  const all = viewCsp(declared);
  const csp = viewCsp({});
  const refused: IOffer['refused'] = [];
  for (const key of CSP_KEYS) {
    for (const origin of all[key]) {
      if (servesThisPage(origin, page)) {
        refused.push({ key, origin, why: PAGE_ORIGIN_REASON });
      } else {
        csp[key].push(origin);
      }
    }
  }
  return { csp, refused };
}

/** What each directive lets the view do, in words, for the list the person reads before allowing it. */
export const CSP_WORDS: { readonly [key in keyof IViewCsp]: string } = {
  connectDomains: 'fetch and WebSocket to it',
  resourceDomains: 'scripts, styles, images and fonts from it',
  frameDomains: 'its pages in frames',
  baseUriDomains: 'its addresses as the base'
};

/**
 * The origins that serve this page: its own (`location`, the page's) and those of its server's URLs (base URL,
 * websocket URL), each made absolute against the page's address; a URL that is none adds nothing.
 */
export function pageOrigins(
  location: { readonly origin: string; readonly href: string },
  urls: ReadonlyArray<string>
): string[] {
  const origins = [location.origin];
  for (const url of urls) {
    try {
      origins.push(new URL(url, location.href).origin);
    } catch {
      // not a URL: nothing more to refuse
    }
  }
  return origins;
}

/** The origins the view may reach: those the person allowed, none until they have. */
export function grantedCsp(data: JSONObject, offered: IOffer): IViewCsp {
  return data.allowed === true ? offered.csp : NO_ORIGINS;
}

/** What the person reads about the view's origins: what it may (or asks to) reach, and what was refused. */
export interface IDomainLines {
  /** `connectDomains: https://api.example (fetch and WebSocket to it)`, then the permissions it asks for. */
  readonly reach: ReadonlyArray<string>;
  /** What purra_jupyter refused (the payload's `refused`), then the origins that serve this page. */
  readonly refused: ReadonlyArray<string>;
}

export function domainLines(data: JSONObject, offered: IOffer): IDomainLines {
  const reach: string[] = [];
  for (const key of CSP_KEYS) {
    for (const origin of offered.csp[key]) {
      reach.push(`${key}: ${origin} (${CSP_WORDS[key]})`);
    }
  }
  const permissions = asArray(data.permissions).map(asText);
  if (permissions.length > 0) {
    reach.push(`permissions: ${permissions.join(', ')}`);
  }
  const refused = [
    ...asArray(data.refused).map(asText),
    ...offered.refused.map(item => `${item.key} ${item.origin}: ${item.why}`)
  ];
  return { reach, refused };
}
