import { appendDecision, block, imageSrc, recordsIn, recordsTable } from '../src/blocks';
import { untranslated } from '../src/dom';

const XSS_IMG = '<img src=x onerror=window.__pwned=1>';

function decided(decision: Record<string, unknown>): HTMLElement {
  const node = document.createElement('div');
  appendDecision(node, { decision }, untranslated);
  return node;
}

const DECISION = {
  state: 'approved',
  how: 'approved by a click',
  at: '2026-12-01T16:04:33+01:00',
  server: 'demo',
  tool: 'search_documents',
  effect: 'read',
  argumentsDigest: 'a'.repeat(64)
};

describe('appendDecision', () => {
  it('shows the decision line with the short digest, the full one on hover', () => {
    const node = decided(DECISION);
    const line = node.querySelector('.jp-PurraRenderer-decision') as HTMLElement;
    expect(line.textContent).toBe(
      `approved (approved by a click) at 2026-12-01 16:04:33 · demo/search_documents · arguments digest ${'a'.repeat(12)}…`
    );
    expect(line.querySelector('code')?.title).toBe('a'.repeat(64));
    expect(node.querySelector('.jp-PurraRenderer-arguments')).toBeNull(); // a record saved before arguments were
  });

  it('shows the arguments sent under it as a folded tree, markup as text', () => {
    const node = decided({
      ...DECISION,
      argumentsLabel: 'arguments (sent exactly as shown):',
      arguments: { query: XSS_IMG, limit: 3 }
    });
    const tree = node.querySelector('.jp-PurraRenderer-arguments') as HTMLElement;
    const root = tree.querySelector('details') as HTMLDetailsElement;
    expect(root.open).toBe(false);
    expect(root.querySelector('summary')?.textContent).toBe('arguments (sent exactly as shown): {2 keys}');
    expect(tree.textContent).toContain(JSON.stringify(XSS_IMG));
    expect(node.querySelector('img')).toBeNull();
  });

  it("shows what the server said while the call ran as text, under the payload's label", () => {
    const node = decided({
      ...DECISION,
      activityLabel: 'what the server said while the call ran',
      activity: ['progress 4 of 4 (100%)', `info: ${XSS_IMG}`]
    });
    const activity = node.querySelector('.jp-PurraRenderer-activity') as HTMLElement;
    expect(activity.querySelector('.jp-PurraRenderer-blockType')?.textContent).toBe(
      'what the server said while the call ran'
    );
    expect(activity.querySelector('pre')?.textContent).toBe(`progress 4 of 4 (100%)\ninfo: ${XSS_IMG}`);
    expect(node.querySelector('img')).toBeNull();
    expect(decided({ ...DECISION, activity: [] }).querySelector('.jp-PurraRenderer-activity')).toBeNull();
  });

  it('draws nothing for a result not decided by a widget', () => {
    const node = document.createElement('div');
    appendDecision(node, {}, untranslated);
    expect(node.childNodes).toHaveLength(0);
  });
});

describe('block', () => {
  it('draws a text block as text', () => {
    const node = block({ type: 'text', text: XSS_IMG }, '');
    expect(node.querySelector('pre')?.textContent).toBe(XSS_IMG);
    expect(node.querySelector('img')).toBeNull();
  });

  it('shows only base64 raster images, and an image of any other kind as a note', () => {
    expect(imageSrc({ mimeType: 'image/png', data: 'iVBORw0K' })).toBe('data:image/png;base64,iVBORw0K');
    expect(imageSrc({ mimeType: 'image/svg+xml', data: 'PHN2Zz4=' })).toBeNull();
    expect(imageSrc({ mimeType: 'image/png', data: 'not base64!' })).toBeNull();
    const svg = block({ type: 'image', mimeType: 'image/svg+xml', data: 'PHN2Zz4=' }, 'alt');
    expect(svg.querySelector('img')).toBeNull();
    expect(svg.textContent).toContain('image/svg+xml (8 base64 chars)');
  });

  it('shows a resource link as text, never a link', () => {
    const node = block({ type: 'resource_link', name: 'n', uri: 'javascript:alert(1)' }, '');
    expect(node.querySelector('a')).toBeNull();
    expect(node.textContent).toContain('uri: javascript:alert(1)');
  });
});

describe('recordsIn', () => {
  it('finds a list of objects, alone or as the one list of an object', () => {
    expect(recordsIn([{ a: 1 }])).toEqual([{ a: 1 }]);
    expect(recordsIn({ rows: [{ a: 1 }], n: 1 })).toEqual([{ a: 1 }]);
    expect(recordsIn({ a: [{ a: 1 }], b: [{ b: 1 }] })).toBeNull();
    expect(recordsIn([1, 2])).toBeNull();
  });
});

describe('recordsTable', () => {
  const heads = (fragment: DocumentFragment): string[] =>
    Array.from(fragment.querySelectorAll('th')).map(cell => cell.textContent ?? '');

  it("keeps the server's column order the payload carries, though a saved file sorts the keys", () => {
    const saved = [{ id: 'a', score: 1, title: 'A' }]; // as nbformat writes it: keys sorted
    expect(heads(recordsTable(saved, ['title', 'id', 'score']))).toEqual(['title', 'id', 'score']);
    expect(heads(recordsTable(saved))).toEqual(['id', 'score', 'title']); // an output saved before columns were
    expect(heads(recordsTable([{ a: 1, b: 2 }], ['b', 7]))).toEqual(['b', 'a']); // what is not a name is left out
  });
});
