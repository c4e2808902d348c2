import { DESCRIPTION_LIMIT, catalogColumns, drawCatalog, matches, passes } from '../src/catalog';
import { untranslated } from '../src/dom';

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
  { tool: 'greet', shown_name: 'greet', description: 'Say hello to someone.', callable: false, reasons: ['r1', 'r2'] }
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

  it('lays the table out in fixed column widths that fill its area', () => {
    const widths = Array.from(drawn().querySelectorAll('col')).map(col => col.style.width);
    expect(widths).toHaveLength(catalogColumns(untranslated).length);
    expect(widths.reduce((sum, width) => sum + parseFloat(width), 0)).toBe(100);
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
  });
});
