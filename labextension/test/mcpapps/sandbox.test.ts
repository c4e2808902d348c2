import {
  DENIED_FEATURES,
  KEEPER_READY,
  NO_ORIGINS,
  PROXY_READY,
  REMOVED_GLOBALS,
  RESOURCE_READY,
  WEBRTC_OPEN,
  allowAttribute,
  isOrigin,
  keeperDocument,
  lockdown,
  lockedHtml,
  policy,
  proxyDocument,
  viewCsp
} from '../../src/mcpapps/sandbox';

const SMUGGLED = 'https://a.example; script-src *';

describe('isOrigin', () => {
  it('takes one plain origin and nothing that could add to a policy', () => {
    for (const origin of ['https://a.example', 'wss://b.example:8443', 'http://127.0.0.1:9', 'https://*.c.example']) {
      expect(isOrigin(origin)).toBe(true);
    }
    for (const other of [SMUGGLED, "'self'", 'javascript:alert(1)', 'https://a.example/path', '*', 'data:', 7, null]) {
      expect(isOrigin(other)).toBe(false);
    }
  });
});

describe('viewCsp', () => {
  it('keeps the plain origins of each key of a saved payload, whatever else it holds', () => {
    expect(viewCsp({ connectDomains: ['https://a.example', SMUGGLED, 3], frameDomains: 'https://b.example' })).toEqual({
      ...NO_ORIGINS,
      connectDomains: ['https://a.example']
    });
    expect(viewCsp('not an object')).toEqual(NO_ORIGINS);
    expect(viewCsp(null)).toEqual(NO_ORIGINS);
  });
});

describe('policy', () => {
  it('is the restrictive default with no origin: no network, no frame, no form, no base', () => {
    const directives = policy(NO_ORIGINS).split('; ');
    expect(directives).toEqual([
      "default-src 'none'",
      "script-src 'unsafe-inline'",
      "style-src 'unsafe-inline'",
      'img-src data:',
      'media-src data:',
      "font-src 'none'",
      "connect-src 'none'",
      "frame-src 'none'",
      "base-uri 'none'",
      "worker-src 'none'",
      "manifest-src 'none'",
      "object-src 'none'",
      "form-action 'none'"
    ]);
  });

  it('opens each directive to the origins allowed for it, and only those', () => {
    const directives = policy({
      connectDomains: ['https://api.example'],
      resourceDomains: ['https://cdn.example'],
      frameDomains: [],
      baseUriDomains: []
    }).split('; ');
    expect(directives).toContain('connect-src https://api.example');
    expect(directives).toContain("script-src 'unsafe-inline' https://cdn.example");
    expect(directives).toContain('img-src data: https://cdn.example');
    expect(directives).toContain('font-src https://cdn.example');
    expect(directives).toContain("frame-src 'none'");
  });
});

describe('allowAttribute', () => {
  const denied = DENIED_FEATURES.map(name => `${name} 'none'`);

  it('names the known permissions as the browser spells them, drops the rest, and takes the denied features away', () => {
    expect(allowAttribute(['camera', 'clipboardWrite', 'bogus', 3, 'toString']).split('; ')).toEqual([
      'camera',
      'clipboard-write',
      ...denied
    ]);
    expect(allowAttribute([]).split('; ')).toEqual(denied);
    expect(denied).toContain("picture-in-picture 'none'");
  });
});

describe('proxyDocument', () => {
  it('carries the policy as one escaped meta, the ready message and the sandbox of the view frame', () => {
    const html = proxyDocument(NO_ORIGINS, ['camera']);
    const parsed = new DOMParser().parseFromString(html, 'text/html');
    const metas = parsed.querySelectorAll('meta[http-equiv="Content-Security-Policy"]');
    expect(metas).toHaveLength(1);
    expect(metas[0].getAttribute('content')).toBe(policy(NO_ORIGINS));
    const script = parsed.querySelector('script')?.textContent ?? '';
    expect(script).toContain(PROXY_READY);
    expect(script).toContain(RESOURCE_READY);
    expect(script).toContain('view.setAttribute("sandbox", "allow-scripts")');
    expect(script).toContain(`view.setAttribute("allow", ${JSON.stringify(allowAttribute(['camera']))})`);
  });

  it('asks for no permission when none was allowed, and still takes the denied features away', () => {
    const html = proxyDocument(NO_ORIGINS, []);
    expect(html).not.toContain('camera');
    expect(html).toContain(JSON.stringify(allowAttribute([])));
  });
});

describe('lockedHtml', () => {
  const script = (html: string): string =>
    new DOMParser().parseFromString(html, 'text/html').querySelector('script')?.textContent ?? '';

  it('puts the lockdown right after the doctype, so that the view stays in standards mode', () => {
    const view = '<!-- made by a server -->\n<!DOCTYPE html><html><head><title>v</title></head><body>hi</body></html>';
    const locked = lockedHtml(view);
    expect(locked.startsWith('<!-- made by a server -->\n<!DOCTYPE html>' + lockdown())).toBe(true);
    expect(locked.endsWith('<html><head><title>v</title></head><body>hi</body></html>')).toBe(true);
    const parsed = new DOMParser().parseFromString(locked, 'text/html');
    expect(parsed.compatMode).toBe('CSS1Compat');
    expect(parsed.head.firstElementChild?.getAttribute('http-equiv')).toBe('x-dns-prefetch-control');
    expect(parsed.querySelectorAll('script')[0].textContent).toBe(script(lockdown()));
    expect(parsed.title).toBe('v');
  });

  it('comes first in a view without a doctype, and whatever the view holds cannot end it early', () => {
    const view = '<p>no doctype</p><script>window.x = 1</script>';
    expect(lockedHtml(view)).toBe(lockdown() + view);
    expect(lockdown().match(/<\/script/gi)).toHaveLength(1);
  });

  it('takes every peer connection, keeps them from any other script, removes the constructors, else stops', () => {
    const code = script(lockdown());
    for (const name of REMOVED_GLOBALS) {
      expect(code).toContain(JSON.stringify(name));
    }
    expect(code).toContain('configurable: false');
    expect(code).toContain('window.addEventListener("pagehide", () => held.length)');
    expect(code).toContain('window.stop()');
    expect(code).toContain(JSON.stringify(WEBRTC_OPEN));
    expect(code).not.toMatch(/window\.[a-zA-Z_]+ = held|globalThis/);
  });
});

describe('keeperDocument', () => {
  it('holds the peer connections of its process and says so to the page, under a policy with no network', () => {
    const parsed = new DOMParser().parseFromString(keeperDocument(), 'text/html');
    const csp = parsed.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute('content');
    expect(csp).toBe("default-src 'none'; script-src 'unsafe-inline'");
    const code = parsed.querySelector('script')?.textContent ?? '';
    expect(code).toContain('new Peer()');
    expect(code).toContain(JSON.stringify(KEEPER_READY));
  });
});

describe('the lockdown, run', () => {
  const run = (limit: number | null): { made: number; stopped: boolean } => {
    let made = 0;
    let stopped = false;
    const win = window as unknown as { [key: string]: unknown };
    win.RTCPeerConnection = class {
      constructor() {
        if (limit !== null && made >= limit) {
          throw new Error('Cannot create so many PeerConnections');
        }
        made += 1;
      }
    };
    const stop = jest.spyOn(window, 'stop').mockImplementation(() => {
      stopped = true;
    });
    const code = new DOMParser().parseFromString(lockdown(), 'text/html').querySelector('script')?.textContent ?? '';
    // A fresh realm each time: the properties it locks cannot be locked twice in one window.
    const frame = document.createElement('iframe');
    document.body.appendChild(frame);
    const inner = frame.contentWindow as unknown as { [key: string]: unknown } & Window;
    inner.RTCPeerConnection = win.RTCPeerConnection;
    inner.stop = window.stop;
    (inner as unknown as { eval: (code: string) => void }).eval(code);
    expect(inner.RTCPeerConnection).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(inner, 'RTCPeerConnection')?.configurable).toBe(false);
    stop.mockRestore();
    frame.remove();
    return { made, stopped };
  };

  it('takes the connections until the browser refuses one, and leaves the constructor to nobody', () => {
    expect(run(500)).toEqual({ made: 500, stopped: false });
    expect(run(0)).toEqual({ made: 0, stopped: false });
  });

  it('stops the view when the browser never refuses', () => {
    expect(run(null)).toEqual({ made: 2000, stopped: true });
  });
});
