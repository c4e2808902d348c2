import { offer } from '../../src/mcpapps/origins';
import {
  APP_CLASS,
  FIRST_HEIGHT,
  LINKS_SHOWN,
  appendLink,
  decisionList,
  renderDomains,
  renderHead,
  statusWords,
  untrustedLine,
  viewFrame
} from '../../src/mcpapps/renderers';

const XSS_IMG = '<img src=x onerror=window.__pwned=1>';
const PAGE = ['http://127.0.0.1:8888'];
const DECLARED = { connectDomains: ['https://api.example', 'http://localhost:8888'] };

function host(): HTMLElement {
  return document.createElement('div');
}

describe('renderHead and untrustedLine', () => {
  it('shows the view’s label, server/tool, address and short digest, all as text', () => {
    const head = renderHead({
      labels: { view: 'tool view' },
      server: 'van',
      tool: XSS_IMG,
      uri: 'ui://get-time/app.html',
      sha256: 'f'.repeat(64)
    });
    expect(head.className).toBe(APP_CLASS.head);
    expect(head.querySelector('.jp-PurraRenderer-kind')?.textContent).toBe('tool view');
    expect(head.querySelector('.jp-PurraRenderer-muted')?.textContent).toBe(
      `van/${XSS_IMG} · ui://get-time/app.html · sha256 ${'f'.repeat(12)}…`
    );
    expect(head.querySelector('img')).toBeNull();
    expect(renderHead({}).textContent).toBe('view/ ·  · sha256 …');
    expect(untrustedLine().textContent).toContain('this output is not trusted');
  });
});

describe('viewFrame', () => {
  it('is a sandboxed proxy frame with the allowed origins and permissions, bordered unless the view prefers not', () => {
    const offered = offer(DECLARED, PAGE);
    const frame = viewFrame({ tool: 'get-time', allowed: true, permissions: ['camera'] }, offered);
    expect(frame.className).toBe(`${APP_CLASS.frame} ${APP_CLASS.bordered}`);
    expect(frame.getAttribute('sandbox')).toBe('allow-scripts');
    expect(frame.getAttribute('title')).toBe('view of get-time');
    expect(frame.getAttribute('referrerpolicy')).toBe('no-referrer');
    expect(frame.getAttribute('allow')).toMatch(/^camera; /);
    expect(frame.style.height).toBe(`${FIRST_HEIGHT}px`);
    expect(frame.srcdoc).toContain('https://api.example');
    expect(frame.srcdoc).not.toContain('localhost:8888');
  });

  it('grants neither origins nor permissions before the person allows them', () => {
    const frame = viewFrame({ prefersBorder: false, permissions: ['camera'] }, offer(DECLARED, PAGE));
    expect(frame.className).toBe(APP_CLASS.frame);
    expect(frame.getAttribute('allow')).not.toContain('camera');
    expect(frame.srcdoc).not.toContain('https://api.example');
    expect(frame.srcdoc).toContain("connect-src 'none'");
  });
});

describe('renderDomains', () => {
  it('lists what the view asks to reach, with a button that turns the choice over, live only with the kernel', () => {
    const node = host();
    node.appendChild(document.createElement('span'));
    const chosen: boolean[] = [];
    renderDomains(node, { refused: [XSS_IMG] }, offer(DECLARED, PAGE), true, allow => chosen.push(allow));
    expect(node.querySelector('div')?.textContent).toBe('The view asks to reach (not allowed):');
    expect(Array.from(node.querySelectorAll('ul:not(.jp-PurraApp-refused) li')).map(li => li.textContent)).toEqual([
      'connectDomains: https://api.example (fetch and WebSocket to it)'
    ]);
    const button = node.querySelector('button') as HTMLButtonElement;
    expect(button.textContent).toBe('Allow them');
    expect(button.disabled).toBe(false);
    button.click();
    expect(chosen).toEqual([true]);
    const refused = Array.from(node.querySelectorAll(`.${APP_CLASS.refused} li`)).map(li => li.textContent);
    expect(refused[0]).toBe(`refused: ${XSS_IMG}`);
    expect(refused[1]).toMatch(/^refused: connectDomains http:\/\/localhost:8888: /);
    expect(node.querySelector('span')).toBeNull(); // drawn afresh
    expect(node.querySelector('img')).toBeNull();
  });

  it('says what an allowed view may reach, and holds the button without the kernel', () => {
    const node = host();
    renderDomains(node, { allowed: true }, offer(DECLARED, PAGE), false, () => undefined);
    expect(node.querySelector('div')?.textContent).toBe('The view may reach (allowed):');
    const button = node.querySelector('button') as HTMLButtonElement;
    expect(button.textContent).toBe('Refuse them');
    expect(button.disabled).toBe(true);
    expect(button.title).toBe('deciding needs the running kernel');
  });

  it('draws nothing for a view that asks for no origin', () => {
    const node = host();
    renderDomains(node, {}, offer({}, PAGE), true, () => undefined);
    expect(node.childElementCount).toBe(0);
  });
});

describe('decisionList and statusWords', () => {
  it('lists the view’s calls and how each was decided; nothing when there is none', () => {
    const list = decisionList({
      decisions: [{ tool: 'get-time', state: 'approved', how: 'by a click' }, 'junk', { tool: 'x', state: 'denied' }]
    }) as HTMLElement;
    expect(list.className).toBe(APP_CLASS.decisions);
    expect(Array.from(list.querySelectorAll('li')).map(li => li.textContent)).toEqual([
      'the view called get-time: approved (by a click)',
      'the view called x: denied'
    ]);
    expect(decisionList({})).toBeNull();
  });

  it('says whether the view’s calls reach a kernel, in the payload’s words when not', () => {
    expect(statusWords(true, {})).toMatch(/^live: /);
    expect(statusWords(false, { labels: { noLiveSession: 'no kernel here' } })).toBe('no kernel here');
    expect(statusWords(false, {})).toBe('no live session');
  });
});

describe('appendLink', () => {
  it('shows an address as text, never a link, and keeps the last LINKS_SHOWN', () => {
    const node = host();
    for (let index = 0; index < LINKS_SHOWN + 3; index += 1) {
      appendLink(node, `https://example.org/${index}`);
    }
    expect(node.childElementCount).toBe(LINKS_SHOWN);
    expect(node.firstElementChild?.querySelector('code')?.textContent).toBe('https://example.org/3');
    expect(node.querySelector('a')).toBeNull();
    appendLink(node, `javascript:${'x'.repeat(3000)}`);
    expect(node.lastElementChild?.querySelector('code')?.textContent).toHaveLength(2000);
  });
});
