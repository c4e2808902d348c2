import { DESCRIPTION_LIMIT, catalogColumns, drawCatalog, matches, passes } from '../src/catalog';
import { JSONObject, untranslated } from '../src/dom';

const XSS_IMG = '<img src=x onerror=window.__pwned=1>';

const TOOLS = [
  {
    tool: 'search_documents',
    shown_name: 'search_documents',
    description: 'Search the documents by words.',
    callable: true,
    input_verdict: 'compatible',
    output_verdict: 'compatible',
    input_schema: { type: 'object', properties: { query: { type: 'string' } } },
    output_schema: { type: 'object' },
    reasons: []
  },
  {
    tool: XSS_IMG,
    shown_name: XSS_IMG,
    description: 'x'.repeat(DESCRIPTION_LIMIT + 50),
    callable: false,
    input_verdict: 'unsupported',
    output_verdict: 'none',
    input_schema: { type: 'object' },
    output_schema: null,
    reasons: ['name: not a name PurrA binds']
  },
  {
    tool: 'greet',
    shown_name: 'greet',
    title: 'Greeter',
    description: 'Say hello to someone.',
    callable: false,
    reasons: ['r1', 'r2']
  }
];

function drawn(): HTMLElement {
  const node = document.createElement('div');
  drawCatalog(node, { server: 'demo', digest: 'f'.repeat(64), tools: TOOLS, labels: {} }, untranslated);
  return node;
}

function visibleNames(node: HTMLElement): string[] {
  return Array.from(node.querySelectorAll('tbody tr'))
    .filter(row => !(row as HTMLElement).hidden)
    .map(row => row.querySelector('code')?.textContent ?? '');
}

function type(input: HTMLInputElement, value: string): void {
  input.value = value;
  input.dispatchEvent(new Event('input'));
}

describe('matches and passes', () => {
  it('search names and descriptions, case and surrounding spaces aside', () => {
    expect(matches(TOOLS[0], '  SEARCH ')).toBe(true);
    expect(matches(TOOLS[0], 'by words')).toBe(true);
    expect(matches(TOOLS[0], 'hello')).toBe(false);
    expect(matches(TOOLS[0], '')).toBe(true);
    expect(passes('all', false) && passes('callable', true) && passes('blocked', false)).toBe(true);
    expect(passes('callable', false) || passes('blocked', true)).toBe(false);
  });
});

describe('drawCatalog', () => {
  it('draws every server string as text', () => {
    const node = drawn();
    expect(node.querySelector('img')).toBeNull();
    expect(visibleNames(node)).toEqual(['search_documents', XSS_IMG, 'greet']);
  });

  it('gives each column a least width its words fit in, the reasons the widest, within a 950 px area', () => {
    const widths = Array.from(drawn().querySelectorAll('thead th')).map(th => (th as HTMLElement).style.minWidth);
    expect(widths).toHaveLength(catalogColumns(untranslated).length);
    expect(widths.every(width => /^\d+(\.\d+)?em$/.test(width))).toBe(true);
    const ems = widths.map(parseFloat);
    expect(ems[ems.length - 1]).toBe(Math.max(...ems));
    expect(ems[ems.length - 1]).toBeGreaterThanOrEqual(14);
    expect(Math.min(...ems)).toBeGreaterThanOrEqual(4); // "callable", "bindable": a word of the kit's own, whole
    // within the output of a 950 px notebook area (its prompt, 64 px, aside): 13 px text, 8 px of padding a cell
    expect(ems.reduce((sum, em) => sum + em, 0) * 13 + 8 * ems.length).toBeLessThanOrEqual(950 - 64 - 40);
    expect(drawn().querySelector('col')).toBeNull(); // no fixed shares that squeeze a column
  });

  it('narrows the rows by the search and the verdict filter together', () => {
    const node = drawn();
    const search = node.querySelector('input[type=search]') as HTMLInputElement;
    const select = node.querySelector('select') as HTMLSelectElement;
    const shown = (): string => node.querySelector('.jp-PurraRenderer-filter')?.textContent ?? '';
    expect(shown()).toContain('showing 3 of 3');
    type(search, 'hello');
    expect(visibleNames(node)).toEqual(['greet']);
    expect(shown()).toContain('showing 1 of 3');
    select.value = 'callable';
    select.dispatchEvent(new Event('change'));
    expect(visibleNames(node)).toEqual([]);
    type(search, '');
    expect(visibleNames(node)).toEqual(['search_documents']);
    select.value = 'blocked';
    select.dispatchEvent(new Event('change'));
    type(search, 'IMG SRC');
    expect(visibleNames(node)).toEqual([XSS_IMG]);
  });

  it("shows each tool's schemas as folded trees, and none for a tool without one", () => {
    const [first, second] = Array.from(drawn().querySelectorAll('tbody tr'));
    const trees = first.querySelectorAll('.jp-PurraCatalog-schemas > .jp-PurraRenderer-tree > details');
    expect(Array.from(trees).map(tree => (tree as HTMLDetailsElement).open)).toEqual([false, false]);
    expect(first.querySelector('.jp-PurraCatalog-schemas summary')?.textContent).toBe('input: compatible {2 keys}');
    expect(first.textContent).toContain('"string"');
    const parts = Array.from(second.querySelectorAll('.jp-PurraCatalog-schemas')).map(part => part.textContent);
    expect(parts[1]).toBe('output: none');
  });

  it('folds a long description and counts reasons', () => {
    const [, second, third] = Array.from(drawn().querySelectorAll('tbody tr'));
    expect(second.querySelector('details summary')?.textContent).toHaveLength(DESCRIPTION_LIMIT);
    expect(third.lastElementChild?.querySelector('summary')?.textContent).toBe('2 reasons');
    expect(third.firstElementChild?.textContent).toBe('greetGreeter'); // the title under the name
  });
});

const BIDI_NAME = 'leak tok-9d4\u202egnp.exe';
const SHARED = 'inputSchema.$schema: declares <img src=x onerror=window.__pwned=1> \u202eRLO';

function sharedCatalog(labels: JSONObject = { sharedBy: 'Shared by', sharedBelow: 'shared, below' }): HTMLElement {
  const tools = [XSS_IMG, BIDI_NAME, 'plain'].map(name => ({
    tool: name,
    shown_name: name === BIDI_NAME ? 'leak tok-9d4\\u202egnp.exe' : name,
    callable: false,
    reasons: name === 'plain' ? [SHARED, 'own reason'] : [SHARED]
  }));
  const node = document.createElement('div');
  const sharedReasons = [{ reason: SHARED, tools: [XSS_IMG, BIDI_NAME, 'plain'] }];
  drawCatalog(node, { server: 'demo', digest: 'f'.repeat(64), tools, sharedReasons, labels }, untranslated);
  return node;
}

describe('a reason several tools give', () => {
  it('is shown once below the table, naming its tools, and each row counts it', () => {
    const node = sharedCatalog();
    const sections = node.querySelectorAll('.jp-PurraCatalog-sharedReason');
    expect(sections).toHaveLength(1);
    expect(sections[0].querySelector('b')?.textContent).toBe('Shared by 3 tools:');
    const names = Array.from(sections[0].querySelectorAll('code'));
    expect(names.map(name => name.textContent)).toEqual([XSS_IMG, 'leak tok-9d4\\u202egnp.exe', 'plain']);
    expect(names.every(name => name.dir === 'auto')).toBe(true); // isolated: a name reorders nothing after it
    const shown = node.textContent ?? '';
    expect(shown.split('inputSchema.$schema').length - 1).toBe(1);
    expect(shown).toContain('\\u202eRLO'); // the reason's override shown as its escape, never applied
    expect(shown).not.toContain('\u202e');
    expect(node.querySelector('img')).toBeNull();
    const cells = Array.from(node.querySelectorAll('tbody tr')).map(row => row.lastElementChild as HTMLElement);
    expect(cells.map(cell => cell.querySelector('.jp-PurraRenderer-muted')?.textContent)).toEqual(
      Array(3).fill('+ 1 shared, below')
    );
    expect(cells[2].querySelector('summary')?.textContent).toBe('1 reason');
    expect(cells[2].querySelector('li')?.textContent).toBe('own reason');
    expect(cells[0].querySelector('details')).toBeNull();
  });

  it('is shown on each row of a catalog saved before reasons were grouped', () => {
    const node = document.createElement('div');
    drawCatalog(node, { server: 'demo', digest: 'f', tools: [{ tool: 'a', reasons: [SHARED] }] }, untranslated);
    expect(node.querySelector('.jp-PurraCatalog-sharedReason')).toBeNull();
    expect(node.querySelector('tbody li')?.textContent).toContain('inputSchema.$schema');
  });
});
