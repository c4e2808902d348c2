/**
 * The Lumino widgets implementing `IRenderMime.IRenderer`: PurrA envelopes, raw MCP results and tool catalogs.
 *
 * Every string in these payloads comes from an MCP server nobody here trusts, so all of it is drawn with
 * `textContent` (dom.ts); none of it is HTML, which is why the factories can declare themselves `safe`. The
 * renderer options' sanitizer is kept for any HTML a renderer would ever draw; none does today.
 *
 * The kit's own fixed words about a result (a raw result's label, the label of a server's error text, what an
 * effect state means, the verdict badges) come with each payload under `labels`, from purra_jupyter
 * (envelope.py, catalog.py). The words of this front end alone (the search box, column names) go through the
 * options' translator, domain `purra-jupyter`.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import {
  appendDecision,
  appendEffect,
  appendMessage,
  appendServerText,
  appendStructured,
  block,
  header,
  malformed
} from './blocks';
import { drawCatalog } from './catalog';
import { CLASS, JSONObject, Trans, asArray, asObject, asText, el, label, pre, untranslated } from './dom';

/** The MIME types purra_jupyter emits (see purra_jupyter/wire.py). */
export const ENVELOPE_MIME = 'application/vnd.purra.envelope+json';
export const RAW_RESULT_MIME = 'application/vnd.purra.raw-result+json';
export const CATALOG_MIME = 'application/vnd.purra.catalog+json';

/** The translation domain of this front end's own words. */
export const DOMAIN = 'purra-jupyter';

/**
 * What the three renderers share: the classes, the `data-mime-type` mark (as JupyterLab's own renderers
 * set it), the options' translator and sanitizer, clearing before each render, and the line shown for data
 * that is not an object.
 */
abstract class PurraRenderer extends Widget implements IRenderMime.IRenderer {
  /** This front end's words, translated. */
  protected readonly trans: Trans;
  /** For HTML, should a renderer ever draw some: server data never is (it is drawn as text). */
  protected readonly sanitizer: IRenderMime.ISanitizer;

  constructor(
    options: IRenderMime.IRendererOptions,
    private readonly mimeType: string,
    className: string
  ) {
    super();
    this.trans = options.translator?.load(DOMAIN) ?? untranslated;
    this.sanitizer = options.sanitizer;
    this.addClass(CLASS.root);
    this.addClass(className);
    this.node.dataset['mimeType'] = mimeType;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.textContent = '';
    const data = asObject(model.data[this.mimeType]);
    if (data === null) {
      this.node.appendChild(malformed(this.mimeType, this.trans));
    } else {
      this.draw(this.node, data);
    }
    return Promise.resolve();
  }

  /** Draw ``data`` into the empty ``node``. */
  protected abstract draw(node: HTMLElement, data: JSONObject): void;
}

/** Shows a PurrA envelope: what a PurrA host gets from a bound tool. */
export class EnvelopeRenderer extends PurraRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options, ENVELOPE_MIME, CLASS.envelope);
  }

  protected draw(node: HTMLElement, data: JSONObject): void {
    appendDecision(node, data, this.trans);
    node.appendChild(header(label(data, 'kind', ENVELOPE_MIME), data));
    appendEffect(node, data);
    appendMessage(node, data);
    appendServerText(node, data);
    const envelope = asObject(data.envelope) ?? {};
    for (const text of asArray(envelope.text)) {
      node.appendChild(pre(asText(text)));
    }
    appendStructured(node, 'structured', envelope.structured, data.columns);
  }
}

/** Shows a raw tools/call result, every content block kept, clearly labelled as outside the contract. */
export class RawResultRenderer extends PurraRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options, RAW_RESULT_MIME, CLASS.raw);
  }

  protected draw(node: HTMLElement, data: JSONObject): void {
    appendDecision(node, data, this.trans);
    node.appendChild(el('div', CLASS.rawLabel, label(data, 'raw', RAW_RESULT_MIME)));
    node.appendChild(header(this.trans.__('raw result'), data));
    appendMessage(node, data);
    appendServerText(node, data);
    const result = asObject(data.result) ?? {};
    if (result.isError === true) {
      node.appendChild(el('p', CLASS.error, this.trans.__('The server flagged this result isError: true.')));
    }
    const imageAlt = label(data, 'imageAlt', '');
    for (const item of asArray(result.content)) {
      node.appendChild(block(item, imageAlt));
    }
    appendStructured(node, 'structuredContent', result.structuredContent, data.columns);
  }
}

/** Shows a server's tool catalog with PurrA verdicts, searchable and filterable (catalog.ts). */
export class CatalogRenderer extends PurraRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options, CATALOG_MIME, CLASS.catalog);
  }

  protected draw(node: HTMLElement, data: JSONObject): void {
    drawCatalog(node, data, this.trans);
  }
}
