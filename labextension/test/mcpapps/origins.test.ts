import {
  PAGE_ORIGIN_REASON,
  domainLines,
  grantedCsp,
  offer,
  pageOrigins,
  servesThisPage
} from '../../src/mcpapps/origins';
import { NO_ORIGINS } from '../../src/mcpapps/sandbox';

describe('servesThisPage and offer', () => {
  const page = ['http://127.0.0.1:8888', 'http://127.0.0.1:8888', 'ws://127.0.0.1:8888'];

  it('refuses every spelling of the server that serves the page, and nothing else', () => {
    for (const origin of [
      'http://127.0.0.1:8888',
      'ws://127.0.0.1:8888',
      'https://127.0.0.1:8888',
      'http://localhost:8888',
      'http://a.localhost:8888',
      'http://*.localhost:8888',
      'http://[::1]:8888',
      'http://127.1.2.3:8888',
      'http://0.0.0.0:8888'
    ]) {
      expect([origin, servesThisPage(origin, page)]).toEqual([origin, true]);
    }
    for (const origin of ['http://127.0.0.1:8889', 'http://127.0.0.1', 'https://api.example', 'not an origin']) {
      expect([origin, servesThisPage(origin, page)]).toEqual([origin, false]);
    }
    const hub = ['https://hub.example.org', 'wss://hub.example.org'];
    expect(servesThisPage('https://*.example.org', hub)).toBe(true);
    expect(servesThisPage('wss://hub.example.org:443', hub)).toBe(true);
    expect(servesThisPage('https://hub.example.org:8443', hub)).toBe(false);
    expect(servesThisPage('https://localhost', hub)).toBe(false);
  });

  it('offers the declared origins but the page’s, which it names as refused and why', () => {
    const declared = {
      connectDomains: ['https://api.example', 'http://localhost:8888', 'https://a.example; script-src *'],
      frameDomains: ['ws://127.0.0.1:8888']
    };
    expect(offer(declared, page)).toEqual({
      csp: { ...NO_ORIGINS, connectDomains: ['https://api.example'] },
      refused: [
        { key: 'connectDomains', origin: 'http://localhost:8888', why: PAGE_ORIGIN_REASON },
        { key: 'frameDomains', origin: 'ws://127.0.0.1:8888', why: PAGE_ORIGIN_REASON }
      ]
    });
    expect(offer('junk', page)).toEqual({ csp: NO_ORIGINS, refused: [] });
  });
});

describe('pageOrigins', () => {
  it('names the page’s own origin and its server’s URLs’, made absolute against the page; junk adds nothing', () => {
    const location = { origin: 'http://127.0.0.1:8888', href: 'http://127.0.0.1:8888/lab/tree/a.ipynb' };
    expect(pageOrigins(location, ['/', 'ws://127.0.0.1:8888/', 'https://hub.example.org/user/a/'])).toEqual([
      'http://127.0.0.1:8888',
      'http://127.0.0.1:8888',
      'ws://127.0.0.1:8888',
      'https://hub.example.org'
    ]);
    expect(pageOrigins(location, ['http://[not a host/'])).toEqual(['http://127.0.0.1:8888']);
  });
});

describe('grantedCsp and domainLines', () => {
  const page = ['http://127.0.0.1:8888'];
  const declared = {
    connectDomains: ['https://api.example', 'http://localhost:8888'],
    resourceDomains: ['https://cdn.example']
  };

  it('grants the offered origins only once the person allowed them', () => {
    const offered = offer(declared, page);
    expect(grantedCsp({ allowed: true }, offered)).toEqual(offered.csp);
    expect(grantedCsp({}, offered)).toEqual(NO_ORIGINS);
    expect(grantedCsp({ allowed: 'true' }, offered)).toEqual(NO_ORIGINS);
  });

  it('lists what the view would reach and why, its permissions, then what was refused and why', () => {
    const data = { permissions: ['camera', 7], refused: ['frameDomains https://x.example: not an origin'] };
    expect(domainLines(data, offer(declared, page))).toEqual({
      reach: [
        'connectDomains: https://api.example (fetch and WebSocket to it)',
        'resourceDomains: https://cdn.example (scripts, styles, images and fonts from it)',
        'permissions: camera, 7'
      ],
      refused: [
        'frameDomains https://x.example: not an origin',
        `connectDomains http://localhost:8888: ${PAGE_ORIGIN_REASON}`
      ]
    });
    expect(domainLines({}, offer({}, page))).toEqual({ reach: [], refused: [] });
  });
});
