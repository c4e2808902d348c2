import {
  Budget,
  MAX_HEIGHT,
  MIN_HEIGHT,
  PENDING_MAX,
  Sizing,
  Waiting,
  busy,
  frameHeight,
  inbound,
  route
} from '../../src/mcpapps/protocol';
import { PROXY_READY } from '../../src/mcpapps/sandbox';

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
