/**
 * What a view's host reads from the page it runs in: the origins that serve it, JupyterLab's theme and its
 * colours now, and the page's one peer keeper frame. The decisions on them are pure (protocol.ts, origins.ts);
 * these are the few lines that touch `window` and `document`.
 */

import { ServerConnection } from '@jupyterlab/services';

import { asObject } from '../dom';
import { pageOrigins } from './origins';
import { type IHostFacts, type StyleVariables, type Theme, styleVariables, themeOf } from './protocol';
import { type IViewCsp, KEEPER_READY, keeperDocument } from './sandbox';

/** How long the page's peer keeper may take to say it holds its process's peer connections (it takes well under a
 * second); without its word, no view is shown. */
const KEEPER_WAIT_MS = 15_000;

/** The origins that serve this page: its own, its server's base URL's and its websocket's. */
export function thisPageOrigins(): string[] {
  const settings = ServerConnection.makeSettings();
  return pageOrigins(window.location, [settings.baseUrl, settings.wsUrl]);
}

/** The theme JupyterLab shows now. */
export function currentTheme(): Theme {
  return themeOf(document.body.dataset['jpThemeLight']);
}

/** JupyterLab's theme colours and fonts under the spec's names, as computed now. */
export function currentStyleVariables(): StyleVariables {
  const style = getComputedStyle(document.body);
  return styleVariables(name => style.getPropertyValue(name));
}

/** What the host tells a view in its answer to `ui/initialize`, as the page is now. */
export function hostFacts(csp: IViewCsp, width: number): IHostFacts {
  return {
    csp,
    theme: currentTheme(),
    variables: currentStyleVariables(),
    width,
    locale: navigator.language,
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone
  };
}

/**
 * Calls `tell` with JupyterLab's theme whenever it changes from the one last told, if `ready` (a view not ready is
 * told at the next change); disconnect the observer to stop.
 */
export function watchTheme(ready: () => boolean, tell: (theme: Theme) => void): MutationObserver {
  let told = currentTheme();
  const observer = new MutationObserver(() => {
    const now = currentTheme();
    if (now !== told && ready()) {
      told = now;
      tell(now);
    }
  });
  observer.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-light'] });
  return observer;
}

/**
 * The page's peer keeper (sandbox.ts: keeperDocument), made once, before the first view: whether it holds every
 * peer connection its process may have (false: this browser has no limit, and views are not shown).
 */
let keeper: Promise<boolean> | null = null;

export function peerKeeper(): Promise<boolean> {
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
