/**
 * A click counts only on buttons that have been on screen and still for a while (DESIGN §11: the approval is the
 * person's). A view cannot draw over the kit's outputs, but it can move them: it resizes itself, an approval appears
 * where the pointer is, and the second click of a double click meant for the view lands on Approve. Browsers guard
 * their permission prompts the same way: Chromium ignores input on a prompt for the double-click interval after it
 * shows (500 ms on the common desktops), Firefox enables its install prompt's buttons after a second. The kit takes
 * 500 ms of stillness: longer than a double click, short enough that a person reading the approval never meets it.
 */

/** How long the buttons must have been where they are, and seen, before a click on them counts. */
export const QUIET_MS = 500;
/** How often the buttons' places are looked at while the output is on the page. */
export const SAMPLE_MS = 100;
/** The attribute that says the guard's state: `settling` (clicks ignored) or `ready`. */
export const GUARD_ATTRIBUTE = 'data-purra-guard';
/** The attribute that counts the clicks the guard ignored. */
export const IGNORED_ATTRIBUTE = 'data-purra-guard-ignored';

/** Since when the buttons have been where they are (pure: the places and the clock are given). */
export class Stillness {
  constructor(readonly quietMs: number = QUIET_MS) {}

  /** The buttons' places now; a change (or the first look) starts the quiet time again. */
  sample(places: string, nowMs: number): void {
    if (places !== this._places) {
      this._places = places;
      this._since = nowMs;
    }
  }

  /** Start the quiet time again with the places unchanged (the page was hidden, then seen again). */
  restart(nowMs: number): void {
    this._since = nowMs;
  }

  /** Whether a click now counts: the places are still those sampled last, for the whole quiet time. */
  ready(places: string, nowMs: number): boolean {
    return this._since !== null && places === this._places && nowMs - this._since >= this.quietMs;
  }

  private _places: string | null = null;
  private _since: number | null = null;
}

/** The places of the enabled buttons under `node`, as one comparable string (none: ''). */
export function buttonPlaces(node: HTMLElement): string {
  const places: string[] = [];
  for (const button of Array.from(node.querySelectorAll('button'))) {
    if (!button.disabled) {
      const box = button.getBoundingClientRect();
      places.push([box.left, box.top, box.width, box.height].map(Math.round).join(','));
    }
  }
  return places.join(' ');
}

/**
 * Guards the buttons under `node` while it is on the page: a click that comes before they were still and visible
 * for QUIET_MS is stopped before any handler sees it. Returns what stops the guard.
 */
export function guardClicks(node: HTMLElement, clock: () => number = () => performance.now()): () => void {
  const stillness = new Stillness();
  const look = (): void => {
    const places = buttonPlaces(node);
    const now = clock();
    stillness.sample(places, now);
    const state = places === '' || stillness.ready(places, now) ? 'ready' : 'settling';
    if (node.getAttribute(GUARD_ATTRIBUTE) !== state) {
      node.setAttribute(GUARD_ATTRIBUTE, state);
    }
  };
  let ignored = 0;
  const onClick = (event: MouseEvent): void => {
    const places = buttonPlaces(node);
    if (!stillness.ready(places, clock()) && (event.target as Element | null)?.closest('button') !== null) {
      event.stopImmediatePropagation();
      event.preventDefault();
      ignored += 1;
      node.setAttribute(IGNORED_ATTRIBUTE, String(ignored));
      look();
    }
  };
  const onVisibility = (): void => {
    if (document.visibilityState === 'visible') {
      stillness.restart(clock());
      look();
    }
  };
  node.addEventListener('click', onClick, true);
  document.addEventListener('visibilitychange', onVisibility);
  // A button drawn, enabled or restyled is looked at at once; a move of the whole output at the next sample (and a
  // click before that sample compares the places itself).
  const changes = new MutationObserver(look);
  changes.observe(node, { childList: true, subtree: true, attributes: true, attributeFilter: ['disabled', 'class'] });
  look();
  const timer = window.setInterval(look, SAMPLE_MS);
  return () => {
    changes.disconnect();
    window.clearInterval(timer);
    node.removeEventListener('click', onClick, true);
    document.removeEventListener('visibilitychange', onVisibility);
    node.removeAttribute(GUARD_ATTRIBUTE);
    node.removeAttribute(IGNORED_ATTRIBUTE);
  };
}
