/**
 * The Lumino widgets of the MIME extension, implementing `IRenderMime.IRenderer` as JupyterLab's `RenderedHTML`
 * and kin do: each takes the renderer options and hands its payload to a pure render function (renderers.ts).
 *
 * Every string in these payloads is drawn with `textContent`; none of it is HTML, which is why the factories can
 * declare themselves `safe`. The options' sanitizer is kept for any HTML a widget would ever draw; none does today.
 * The words of this front end alone go through the options' translator, domain `purra-jupyter`.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { CLASS, type Trans, untranslated } from './dom';
import { CATALOG_MIME, ENVELOPE_MIME, RAW_RESULT_MIME } from './mimetypes';
import { type PayloadRender, renderCatalog, renderEnvelope, renderPayload, renderRawResult } from './renderers';

/** The translation domain of this front end's own words. */
export const DOMAIN = 'purra-jupyter';

/**
 * What the three widgets share: the classes, the `data-mime-type` mark (as JupyterLab's own widgets set it), the
 * options' translator and sanitizer, and drawing the model's payload afresh, with its render function, each time.
 */
class RenderedPurra extends Widget implements IRenderMime.IRenderer {
  /** This front end's words, translated. */
  protected readonly trans: Trans;
  /** For HTML, should a widget ever draw some: server data never is (it is drawn as text). */
  protected readonly sanitizer: IRenderMime.ISanitizer;

  constructor(
    options: IRenderMime.IRendererOptions,
    private readonly mimeType: string,
    className: string,
    private readonly renderData: PayloadRender
  ) {
    super();
    this.trans = options.translator?.load(DOMAIN) ?? untranslated;
    this.sanitizer = options.sanitizer;
    this.addClass(CLASS.root);
    this.addClass(className);
    this.node.dataset['mimeType'] = mimeType;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    renderPayload(this.node, this.mimeType, model.data[this.mimeType], this.trans, this.renderData);
    return Promise.resolve();
  }
}

/** Shows a PurrA envelope: what a PurrA host gets from a bound tool. */
export class RenderedEnvelope extends RenderedPurra {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options, ENVELOPE_MIME, CLASS.envelope, renderEnvelope);
  }
}

/** Shows a raw tools/call result, every content block kept, clearly labelled as outside the contract. */
export class RenderedRawResult extends RenderedPurra {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options, RAW_RESULT_MIME, CLASS.raw, renderRawResult);
  }
}

/** Shows a server's tool catalog with PurrA verdicts, searchable and filterable. */
export class RenderedCatalog extends RenderedPurra {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options, CATALOG_MIME, CLASS.catalog, renderCatalog);
  }
}
