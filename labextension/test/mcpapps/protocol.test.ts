import { WIDGET_MIME } from '../../src/mimetypes';
import {
  Budget,
  MAX_HEIGHT,
  MIN_HEIGHT,
  NOT_SUPPORTED,
  PENDING_MAX,
  REFUSED,
  STYLE_VARIABLES,
  Sizing,
  Waiting,
  answer,
  busy,
  domainsChoice,
  frameHeight,
  fromKernel,
  hostContextChanged,
  inbound,
  initializeResult,
  kernelLog,
  kernelRequest,
  pendingApprovals,
  refusal,
  resourceReady,
  route,
  stringField,
  styleVariables,
  themeOf,
  toolNotifications,
  unsupported,
  viewKey
} from '../../src/mcpapps/protocol';
import { NO_ORIGINS, PROXY_READY, RESOURCE_READY, WEBRTC_OPEN, lockdown } from '../../src/mcpapps/sandbox';

const own = { name: 'this view’s proxy' };
const other = { name: 'another view' };

describe('inbound', () => {
  const request = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'destroy' } };

  it('acts only on what its own frame sends', () => {
    expect(inbound(own, own, request)).toEqual({
      kind: 'request',
      id: 3,
      method: 'tools/call',
      params: { name: 'destroy' }
    });
    expect(inbound(other, own, request)).toBeNull();
    expect(inbound(null, own, request)).toBeNull();
    expect(inbound(own, null, request)).toBeNull(); // no frame (yet): nothing is its
    expect(inbound(undefined, undefined, request)).toBeNull();
  });

  it('tells the proxy’s ready, requests and notifications apart, and ignores anything else', () => {
    expect(inbound(own, own, { jsonrpc: '2.0', method: PROXY_READY, params: {} })).toEqual({
      kind: 'proxy-ready'
    });
    expect(inbound(own, own, { jsonrpc: '2.0', method: 'ui/notifications/size-changed' })).toEqual({
      kind: 'notification',
      method: 'ui/notifications/size-changed',
      params: {}
    });
    for (const junk of [
      null,
      'text',
      [request],
      { ...request, jsonrpc: '1.0' },
      { jsonrpc: '2.0', id: 4, result: {} }, // an answer: the host asks the view nothing
      { jsonrpc: '2.0', id: { forged: 1 }, method: 'tools/call' }
    ]) {
      expect(inbound(own, own, junk)).toBeNull();
    }
    expect(inbound(own, own, { ...request, params: ['not', 'an', 'object'] })).toMatchObject({
      params: {}
    });
  });
});

describe('route', () => {
  it('answers the ui/ requests here, sends the kit’s two on to the kernel and refuses the rest', () => {
    expect(route('ui/initialize')).toBe('initialize');
    expect(route('ui/open-link')).toBe('open-link');
    expect(route('tools/call')).toBe('forward');
    expect(route('resources/read')).toBe('forward');
    for (const method of ['sampling/createMessage', 'ui/message', 'toString', '__proto__', 'constructor']) {
      expect(route(method)).toBe('unsupported');
    }
  });
});

describe('Waiting', () => {
  it('lets PENDING_MAX requests wait, refuses more at once, and takes one again when one is answered', () => {
    const waiting = new Waiting();
    const admitted = Array.from({ length: 150 }, (_, index) => waiting.admit(`view-${index}`));
    const locals = admitted.filter((local): local is number => local !== null);
    expect(locals).toHaveLength(PENDING_MAX);
    expect(waiting.size).toBe(PENDING_MAX);
    expect(waiting.settle(locals[1])).toBe('view-1');
    expect(waiting.settle(locals[1])).toBeUndefined(); // answered twice: the second is nobody's
    expect(waiting.settle('1')).toBeUndefined();
    expect(waiting.admit('late')).not.toBeNull();
    expect(waiting.drain()).toEqual(['view-0', 'view-2', 'late']);
    expect(waiting.size).toBe(0);
    expect(busy().message).toContain(`${PENDING_MAX} requests of this view are waiting`);
  });
});

describe('Sizing', () => {
  it('applies a height at once, within bounds, unless frozen; then the last one asked waits for the thaw', () => {
    const sizing = new Sizing();
    expect(sizing.ask(300.2, false)).toBe(301);
    expect(sizing.ask(5, false)).toBe(MIN_HEIGHT);
    expect(sizing.ask(1e9, false)).toBe(MAX_HEIGHT);
    expect(sizing.ask('300', false)).toBeNull();
    expect(sizing.ask(Number.NaN, false)).toBeNull();
    expect(sizing.ask(120, true)).toBeNull();
    expect(sizing.ask(140, true)).toBeNull();
    expect(sizing.thaw()).toBe(140);
    expect(sizing.thaw()).toBeNull();
    expect(frameHeight(Infinity)).toBeNull();
  });
});

describe('Budget', () => {
  it('takes a burst, then the steady rate, and counts what it drops', () => {
    const budget = new Budget(3, 2);
    expect([0, 0, 0, 0].map(now => budget.take(now))).toEqual([true, true, true, false]);
    expect(budget.take(400)).toBe(false); // 0.8 of a token came back
    expect(budget.take(600)).toBe(true);
    expect(budget.dropped).toBe(2);
  });
});

describe('messages to the view', () => {
  it('answers and refuses a request by its id, and notifies without one', () => {
    expect(answer(7, { mode: 'inline' })).toEqual({ jsonrpc: '2.0', id: 7, result: { mode: 'inline' } });
    expect(refusal('a', REFUSED, 'no live session')).toEqual({
      jsonrpc: '2.0',
      id: 'a',
      error: { code: REFUSED, message: 'no live session' }
    });
    expect(unsupported(2, 'sampling/createMessage')).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: NOT_SUPPORTED, message: 'sampling/createMessage is not supported by purra-jupyter' }
    });
  });

  it('sends the view’s HTML with the lockdown first, or only the stop line when WebRTC stays open', () => {
    const locked = resourceReady(true, '<!DOCTYPE html><p>hi</p>');
    expect(locked).toEqual({
      jsonrpc: '2.0',
      method: RESOURCE_READY,
      params: { html: `<!DOCTYPE html>${lockdown()}<p>hi</p>` }
    });
    expect(resourceReady(false, '<p>hi</p>')).toEqual({
      jsonrpc: '2.0',
      method: RESOURCE_READY,
      params: { html: `<p>${WEBRTC_OPEN}</p>` }
    });
  });

  it('tells the call’s input and result once initialized, and a theme change', () => {
    expect(toolNotifications({ toolInput: { q: 1 }, toolResult: { content: [] } })).toEqual([
      { jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: { q: 1 } } },
      { jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: { content: [] } }
    ]);
    expect(hostContextChanged('dark', { '--font-sans': 'serif' })).toEqual({
      jsonrpc: '2.0',
      method: 'ui/notifications/host-context-changed',
      params: { theme: 'dark', styles: { variables: { '--font-sans': 'serif' } } }
    });
  });
});

describe('fromKernel and the messages to the kernel', () => {
  it('passes the kernel’s answer back under the view’s own id, once, and notes a view the kernel no longer holds', () => {
    const waiting = new Waiting();
    const local = waiting.admit('view-1') as number;
    const other = waiting.admit(9) as number;
    expect(fromKernel({ type: 'response', id: local, result: { ok: 1 } }, waiting)).toEqual({
      kind: 'answer',
      message: { jsonrpc: '2.0', id: 'view-1', result: { ok: 1 } }
    });
    expect(fromKernel({ type: 'response', id: local, result: {} }, waiting)).toBeNull(); // answered already
    expect(fromKernel({ type: 'response', id: other, error: { code: 1, message: 'no' } }, waiting)).toEqual({
      kind: 'answer',
      message: { jsonrpc: '2.0', id: 9, error: { code: 1, message: 'no' } }
    });
    expect(waiting.size).toBe(0);
    expect(fromKernel({ type: 'gone' }, waiting)).toEqual({ kind: 'gone' });
    expect(fromKernel({ type: 'other' }, waiting)).toBeNull();
  });

  it('builds what goes to the kernel', () => {
    expect(kernelRequest(3, 'tools/call', { name: 'x' })).toEqual({
      type: 'request',
      id: 3,
      method: 'tools/call',
      params: { name: 'x' }
    });
    expect(kernelLog({ level: 'info' })).toEqual({ type: 'log', params: { level: 'info' } });
    expect(domainsChoice(false)).toEqual({ type: 'domains', allow: false });
  });
});

describe('initializeResult', () => {
  const facts = {
    csp: NO_ORIGINS,
    theme: 'light' as const,
    variables: { '--font-sans': 'sans' },
    width: 640,
    locale: 'fr-FR',
    timeZone: 'Europe/Paris'
  };

  it('names the host, what it supports and the context the view is drawn in', () => {
    const result = initializeResult(
      {
        protocolVersion: '2026-03-01',
        hostVersion: '1.2.3',
        toolInfo: { name: 'get-time' },
        allowed: true,
        permissions: ['camera']
      },
      facts
    );
    expect(result).toEqual({
      protocolVersion: '2026-03-01',
      hostInfo: { name: 'purra-jupyter', version: '1.2.3' },
      hostCapabilities: {
        openLinks: {},
        serverTools: {},
        serverResources: {},
        logging: {},
        sandbox: { csp: NO_ORIGINS, permissions: { camera: {} } }
      },
      hostContext: {
        toolInfo: { tool: { name: 'get-time' } },
        theme: 'light',
        styles: { variables: { '--font-sans': 'sans' } },
        displayMode: 'inline',
        availableDisplayModes: ['inline'],
        containerDimensions: { width: 640, maxHeight: MAX_HEIGHT },
        locale: 'fr-FR',
        timeZone: 'Europe/Paris',
        platform: 'web'
      }
    });
  });

  it('falls back for a payload without its fields, grants no permission before the person allows, and leaves out a width not laid out', () => {
    const result = initializeResult({ permissions: ['camera'] }, { ...facts, width: 0 });
    expect(result.protocolVersion).toBe('2026-01-26');
    expect(result.hostInfo).toEqual({ name: 'purra-jupyter', version: '' });
    expect(result.hostCapabilities).toMatchObject({ sandbox: { permissions: {} } });
    expect(result.hostContext).toMatchObject({
      toolInfo: { tool: {} },
      containerDimensions: { maxHeight: MAX_HEIGHT }
    });
    expect((result.hostContext as { containerDimensions: object }).containerDimensions).not.toHaveProperty('width');
  });

  it('reads the theme and the style variables as JupyterLab gives them', () => {
    expect(themeOf('false')).toBe('dark');
    expect(themeOf('true')).toBe('light');
    expect(themeOf(undefined)).toBe('light');
    const given: { [name: string]: string } = { '--jp-layout-color0': ' white ', '--jp-ui-font-family': '' };
    expect(styleVariables(name => given[name] ?? '')).toEqual({ '--color-background-primary': 'white' });
    expect(STYLE_VARIABLES.map(([spec]) => spec)).toContain('--font-mono');
  });
});

describe('the payload', () => {
  it('reads a string field, or nothing', () => {
    expect(stringField({ tool: 'get-time', n: 3 }, 'tool')).toBe('get-time');
    expect(stringField({ tool: 'get-time', n: 3 }, 'n')).toBe('');
  });

  it('draws the view anew only for another view, HTML, choice of origins or trust', () => {
    const data = { viewId: 'v1', sha256: 'abc', allowed: false, decisions: [] };
    const key = viewKey(data, true);
    expect(viewKey({ ...data, decisions: [{ tool: 'x' }], pending: [{}] }, true)).toBe(key);
    for (const changed of [
      { ...data, viewId: 'v2' },
      { ...data, sha256: 'abd' },
      { ...data, allowed: true }
    ]) {
      expect(viewKey(changed, true)).not.toBe(key);
    }
    expect(viewKey(data, false)).not.toBe(key);
  });

  it('lists at most PENDING_MAX approvals, each with its widget model id, and skips what is no bundle', () => {
    const bundle = (id: unknown): object => ({ [WIDGET_MIME]: { model_id: id } });
    const pending = [bundle('m1'), 'junk', null, bundle(7), {}, bundle('m4'), bundle('m5')];
    expect(pendingApprovals({ pending })).toEqual([
      { modelId: 'm1', bundle: bundle('m1') },
      { modelId: '7', bundle: bundle(7) },
      { modelId: '', bundle: {} }
    ]);
    expect(pendingApprovals({ pending: 'junk' })).toEqual([]);
    expect(PENDING_MAX).toBe(3);
  });
});
