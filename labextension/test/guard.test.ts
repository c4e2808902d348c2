import { GUARD_ATTRIBUTE, IGNORED_ATTRIBUTE, QUIET_MS, Stillness, buttonPlaces, guardClicks } from '../src/guard';

describe('Stillness', () => {
  it('counts a click only after the buttons were where they are for the whole quiet time', () => {
    const still = new Stillness();
    expect(still.ready('a', 0)).toBe(false); // never seen
    still.sample('a', 0);
    expect(still.ready('a', QUIET_MS - 1)).toBe(false);
    expect(still.ready('a', QUIET_MS)).toBe(true);
    still.sample('a', 2 * QUIET_MS); // the same places: the quiet time goes on
    expect(still.ready('a', 2 * QUIET_MS)).toBe(true);
    expect(still.ready('b', 2 * QUIET_MS)).toBe(false); // moved since the last look
    still.sample('b', 3 * QUIET_MS);
    expect(still.ready('b', 3 * QUIET_MS + 100)).toBe(false);
    expect(still.ready('b', 4 * QUIET_MS)).toBe(true);
    still.restart(5 * QUIET_MS); // the page was hidden, then seen again
    expect(still.ready('b', 5 * QUIET_MS + 1)).toBe(false);
  });
});

describe('guardClicks', () => {
  const setup = () => {
    const node = document.createElement('div');
    const button = document.createElement('button');
    button.innerHTML = '<span>Approve</span>';
    node.appendChild(button);
    document.body.appendChild(node);
    let top = 10;
    button.getBoundingClientRect = () => ({ left: 0, top, width: 80, height: 20 }) as DOMRect;
    let now = 0;
    const clicks: number[] = [];
    button.addEventListener('click', () => clicks.push(now));
    const stop = guardClicks(node, () => now);
    return {
      node,
      button,
      clicks,
      stop,
      at: (ms: number) => (now = ms),
      move: () => (top += 30)
    };
  };

  afterEach(() => {
    jest.useRealTimers();
    document.body.textContent = '';
  });

  it('stops a click that comes too soon, or just after the button moved; a later one reaches the button', () => {
    jest.useFakeTimers();
    const { node, button, clicks, stop, at, move } = setup();
    expect(node.getAttribute(GUARD_ATTRIBUTE)).toBe('settling');
    at(100);
    button.querySelector('span')?.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(clicks).toEqual([]);
    expect(node.getAttribute(IGNORED_ATTRIBUTE)).toBe('1');
    at(QUIET_MS);
    jest.advanceTimersByTime(100);
    expect(node.getAttribute(GUARD_ATTRIBUTE)).toBe('ready');
    button.click();
    expect(clicks).toEqual([QUIET_MS]);
    move(); // moved, and clicked before any look saw it
    at(QUIET_MS + 50);
    button.click();
    expect(clicks).toEqual([QUIET_MS]);
    expect(node.getAttribute(GUARD_ATTRIBUTE)).toBe('settling');
    expect(node.getAttribute(IGNORED_ATTRIBUTE)).toBe('2');
    at(2 * QUIET_MS + 50);
    jest.advanceTimersByTime(100);
    button.click();
    expect(clicks).toEqual([QUIET_MS, 2 * QUIET_MS + 50]);
    stop();
    expect(node.hasAttribute(GUARD_ATTRIBUTE)).toBe(false);
    expect(node.hasAttribute(IGNORED_ATTRIBUTE)).toBe(false);
  });

  it('looks again at once when a button is drawn', async () => {
    const { node, stop, at } = setup();
    at(QUIET_MS);
    const later = document.createElement('button');
    later.getBoundingClientRect = () => ({ left: 90, top: 10, width: 80, height: 20 }) as DOMRect;
    node.appendChild(later);
    await Promise.resolve(); // (the mutation observer's turn)
    expect(node.getAttribute(GUARD_ATTRIBUTE)).toBe('settling');
    stop();
  });

  it('leaves clicks that are not on a button alone, and says ready when there is no enabled button', () => {
    const { node, button, stop } = setup();
    const seen: string[] = [];
    node.addEventListener('click', () => seen.push('node'));
    node.click();
    expect(seen).toEqual(['node']);
    button.disabled = true;
    expect(buttonPlaces(node)).toBe('');
    stop();
  });
});
