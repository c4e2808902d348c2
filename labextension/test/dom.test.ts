import { asText, el, isolated, label, readable, text, untranslated } from '../src/dom';

const XSS_IMG = '<img src=x onerror=window.__pwned=1>';

describe('el', () => {
  it('puts server text in as text: a markup name stays one text node', () => {
    const node = el('code', 'x', XSS_IMG);
    expect(node.textContent).toBe(XSS_IMG);
    expect(node.querySelector('img')).toBeNull();
    expect(node.childNodes).toHaveLength(1);
    expect(node.firstChild?.nodeType).toBe(Node.TEXT_NODE);
  });

  it('sets the class only when given', () => {
    expect(el('div').hasAttribute('class')).toBe(false);
    expect(el('div', 'a b').className).toBe('a b');
  });
});

describe('readable', () => {
  it('writes control, bidirectional and invisible characters as escapes and keeps line breaks and tabs', () => {
    expect(readable('a\u202eb\u200bc\u001b[31m\td\ne\u00a0f g')).toBe('a\\u202eb\\u200bc\\u001b[31m\td\ne\\u00a0f g');
    expect(readable('tag \u{e0041}')).toBe('tag \\U000e0041');
    expect(el('span', undefined, 'x\u202ey').textContent).toBe('x\\u202ey');
    expect(text('x\u200by').textContent).toBe('x\\u200by');
  });
});

describe('isolated', () => {
  it('makes the node a bidirectional isolate', () => {
    expect(isolated(el('span')).dir).toBe('auto');
  });
});

describe('asText', () => {
  it('keeps strings, shows other values as JSON and nothing for null', () => {
    expect(asText('a')).toBe('a');
    expect(asText({ a: [1, true] })).toBe('{"a":[1,true]}');
    expect(asText(null)).toBe('');
    expect(asText(undefined)).toBe('');
  });
});

describe('label', () => {
  it("reads the payload's label, else the fallback (the key by default)", () => {
    const data = { labels: { kind: 'PurrA envelope', raw: 7 } };
    expect(label(data, 'kind')).toBe('PurrA envelope');
    expect(label(data, 'raw')).toBe('raw');
    expect(label({}, 'imageAlt', '')).toBe('');
  });
});

describe('untranslated', () => {
  it('substitutes %1 … and picks the plural by count', () => {
    expect(untranslated.__('showing %1 of %2', 3, 10)).toBe('showing 3 of 10');
    expect(untranslated.__('no %3 here', 1)).toBe('no %3 here');
    expect(untranslated._n('%1 tool', '%1 tools', 1)).toBe('1 tool');
    expect(untranslated._n('%1 tool', '%1 tools', 2)).toBe('2 tools');
  });
});
