import {
  NO_ORIGINS,
  PROXY_READY,
  RESOURCE_READY,
  allowAttribute,
  isOrigin,
  policy,
  proxyDocument,
  viewCsp
} from '../src/sandbox';

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
  it('names the known permissions as the browser spells them and drops the rest', () => {
    expect(allowAttribute(['camera', 'clipboardWrite', 'bogus', 3, 'toString'])).toBe('camera; clipboard-write');
    expect(allowAttribute([])).toBe('');
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
    expect(script).toContain('view.setAttribute("allow", "camera")');
  });

  it('asks for no permission when none was allowed', () => {
    expect(proxyDocument(NO_ORIGINS, [])).not.toContain('setAttribute("allow"');
  });
});
