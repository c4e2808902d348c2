import { PAGE_ORIGIN_REASON, offer, servesThisPage } from '../../src/mcpapps/origins';
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
