import { untranslated } from '../src/dom';
import { ENVELOPE_MIME, RAW_RESULT_MIME } from '../src/mimetypes';
import { renderCatalog, renderEnvelope, renderPayload, renderRawResult } from '../src/renderers';

const XSS_IMG = '<img src=x onerror=window.__pwned=1>';

function host(): HTMLElement {
  return document.createElement('div');
}

describe('renderPayload', () => {
  it('empties the host, then draws an object with its render function', () => {
    const node = host();
    node.appendChild(document.createElement('span'));
    const seen: unknown[] = [];
    renderPayload(node, ENVELOPE_MIME, { a: 1 }, untranslated, (_, data) => seen.push(data));
    expect(node.childElementCount).toBe(0);
    expect(seen).toEqual([{ a: 1 }]);
  });

  it('draws one error line, naming the MIME type, for data that is not an object', () => {
    for (const value of [null, 'text', [1, 2], 3]) {
      const node = host();
      renderPayload(node, RAW_RESULT_MIME, value, untranslated, () => {
        throw new Error('not an object: never rendered');
      });
      expect(node.children).toHaveLength(1);
      expect(node.querySelector('p.jp-PurraRenderer-error')?.textContent).toBe(
        `purra_jupyter: this output's ${RAW_RESULT_MIME} data is not an object.`
      );
    }
  });
});

describe('renderEnvelope', () => {
  it('draws the header under the payload’s kind, the envelope’s text as text and its structured content', () => {
    const node = host();
    renderEnvelope(
      node,
      {
        labels: { kind: 'an envelope' },
        server: 'demo',
        tool: 'list_notes',
        elapsedMs: 12.4,
        message: XSS_IMG,
        envelope: { text: [XSS_IMG, 'second'], structured: { notes: [{ id: 1 }] } }
      },
      untranslated
    );
    expect(node.querySelector('.jp-PurraRenderer-header')?.textContent).toBe(
      'an envelope · ok · demo · list_notes · 12 ms'
    );
    expect(node.querySelector('.jp-PurraRenderer-message')?.textContent).toBe(XSS_IMG);
    expect(Array.from(node.querySelectorAll('pre')).map(pre => pre.textContent)).toEqual([XSS_IMG, 'second']);
    expect(node.querySelector('.jp-PurraRenderer-table')).not.toBeNull();
    expect(node.querySelector('img')).toBeNull();
  });

  it('falls back to the MIME type for a payload without labels', () => {
    const node = host();
    renderEnvelope(node, {}, untranslated);
    expect(node.querySelector('.jp-PurraRenderer-kind')?.textContent).toBe(ENVELOPE_MIME);
  });
});

describe('renderRawResult', () => {
  it('labels the result as raw, flags isError and draws every content block', () => {
    const node = host();
    renderRawResult(
      node,
      {
        labels: { raw: 'raw, outside the contract' },
        result: {
          isError: true,
          content: [
            { type: 'text', text: XSS_IMG },
            { type: 'text', text: 'two' }
          ]
        }
      },
      untranslated
    );
    expect(node.querySelector('.jp-PurraRenderer-rawLabel')?.textContent).toBe('raw, outside the contract');
    expect(node.querySelector('.jp-PurraRenderer-kind')?.textContent).toBe('raw result');
    expect(node.querySelector('p.jp-PurraRenderer-error')?.textContent).toBe(
      'The server flagged this result isError: true.'
    );
    expect(node.querySelectorAll('.jp-PurraRenderer-block')).toHaveLength(2);
    expect(node.textContent).toContain(XSS_IMG);
    expect(node.querySelector('img')).toBeNull();
  });

  it('falls back to the MIME type for the raw label, and flags nothing for a result that is no error', () => {
    const node = host();
    renderRawResult(node, { result: { content: [] } }, untranslated);
    expect(node.querySelector('.jp-PurraRenderer-rawLabel')?.textContent).toBe(RAW_RESULT_MIME);
    expect(node.querySelector('p.jp-PurraRenderer-error')).toBeNull();
  });
});

describe('renderCatalog', () => {
  it('draws the catalog’s table, a tool’s name as text', () => {
    const node = host();
    renderCatalog(
      node,
      { server: 'demo', tools: [{ tool: XSS_IMG, shown_name: XSS_IMG, callable: true }] },
      untranslated
    );
    expect(node.querySelector('.jp-PurraCatalog-table')?.textContent).toContain(XSS_IMG);
    expect(node.querySelector('img')).toBeNull();
  });
});
