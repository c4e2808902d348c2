/**
 * The parts of a tool's view output as pure DOM functions (widgets.ts places them): its head, the origins it asks
 * for with the person's choice, the sandboxed frame, the calls it made, its status and the addresses it asked to
 * open. Every string of the payload comes from a server nobody trusts: it is set with `textContent`; the view's
 * HTML never passes here (it only ever reaches the sandbox, over the bridge).
 */

import { CLASS as DOM_CLASS, type JSONObject, asArray, asObject, el, label } from '../dom';
import { type IOffer, domainLines, grantedCsp } from './origins';
import { stringField } from './protocol';
import { allowAttribute, proxyDocument } from './sandbox';

/** CSS classes (style/base.css). */
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

/** The frame's height until the view asks for one. */
export const FIRST_HEIGHT = 200;
/** How many of the addresses a view asked to open stay shown (the last ones). */
export const LINKS_SHOWN = 10;

/** `view`, then `server/tool · uri · sha256 1a2b…`. */
export function renderHead(data: JSONObject): HTMLElement {
  const head = el('div', APP_CLASS.head);
  head.appendChild(el('span', DOM_CLASS.kind, label(data, 'view', 'view')));
  const shortDigest = stringField(data, 'sha256').slice(0, 12);
  head.appendChild(
    el(
      'div',
      DOM_CLASS.muted,
      `${stringField(data, 'server')}/${stringField(data, 'tool')} · ${stringField(data, 'uri')} · sha256 ${shortDigest}…`
    )
  );
  return head;
}

/** What stands in the view's place in an output that is not trusted. */
export function untrustedLine(): HTMLElement {
  return el(
    'p',
    DOM_CLASS.message,
    'The view is not shown: this output is not trusted (trust the notebook to replay it).'
  );
}

/**
 * The sandbox proxy's frame (sandbox.ts: proxyDocument), with the origins the view may reach and the permissions the
 * person allowed (none until they have); the proxy delegates to the view only what its frame holds.
 */
export function viewFrame(data: JSONObject, offered: IOffer): HTMLIFrameElement {
  const frame = document.createElement('iframe');
  frame.className = APP_CLASS.frame;
  if (data.prefersBorder !== false) {
    frame.classList.add(APP_CLASS.bordered);
  }
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.setAttribute('title', `view of ${stringField(data, 'tool')}`);
  frame.setAttribute('referrerpolicy', 'no-referrer');
  const permissions = data.allowed === true ? asArray(data.permissions) : [];
  frame.setAttribute('allow', allowAttribute(permissions));
  frame.style.height = `${FIRST_HEIGHT}px`;
  frame.srcdoc = proxyDocument(grantedCsp(data, offered), permissions);
  return frame;
}

/**
 * The origins the view may (or asks to) reach, with the button that turns the person's choice over (`choose`, with
 * the new choice; live only with the kernel), then what was refused; nothing when there is neither.
 */
export function renderDomains(
  host: HTMLElement,
  data: JSONObject,
  offered: IOffer,
  live: boolean,
  choose: (allow: boolean) => void
): void {
  host.textContent = '';
  const { reach, refused } = domainLines(data, offered);
  const allowed = data.allowed === true;
  if (reach.length > 0) {
    host.appendChild(
      el('div', undefined, allowed ? 'The view may reach (allowed):' : 'The view asks to reach (not allowed):')
    );
    const list = el('ul');
    for (const line of reach) {
      list.appendChild(el('li', undefined, line));
    }
    host.appendChild(list);
    const button = el('button', 'jp-Button jp-mod-styled', allowed ? 'Refuse them' : 'Allow them');
    button.disabled = !live;
    button.title = live ? 'the view starts again with this choice' : 'deciding needs the running kernel';
    button.addEventListener('click', () => choose(!allowed));
    host.appendChild(button);
  }
  if (refused.length > 0) {
    const list = el('ul', APP_CLASS.refused);
    for (const line of refused) {
      list.appendChild(el('li', undefined, `refused: ${line}`));
    }
    host.appendChild(list);
  }
}

/** The calls the view made and how each was decided; null when it made none. */
export function decisionList(data: JSONObject): HTMLElement | null {
  const decisions = asArray(data.decisions).map(asObject);
  if (decisions.length === 0) {
    return null;
  }
  const list = el('ul', APP_CLASS.decisions);
  for (const decision of decisions) {
    if (decision !== null) {
      const how = stringField(decision, 'how');
      const line = `the view called ${stringField(decision, 'tool')}: ${stringField(decision, 'state')}${how ? ` (${how})` : ''}`;
      list.appendChild(el('li', undefined, line));
    }
  }
  return list;
}

/** Whether the view's calls reach a kernel, in words. */
export function statusWords(live: boolean, data: JSONObject): string {
  return live
    ? 'live: the view’s calls go to the kernel, each behind its approval'
    : label(data, 'noLiveSession', 'no live session');
}

/** An address the view asked to open, as text for the person to copy (nothing navigates); the last LINKS_SHOWN
 * stay. */
export function appendLink(host: HTMLElement, url: string): void {
  const line = el('div', undefined, 'The view asks to open (copy it yourself if you trust it): ');
  line.appendChild(el('code', undefined, url.slice(0, 2000)));
  host.appendChild(line);
  while (host.childElementCount > LINKS_SHOWN) {
    host.firstElementChild?.remove();
  }
}
