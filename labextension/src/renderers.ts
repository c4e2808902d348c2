/**
 * The pure render functions of the MIME extension, as JupyterLab's rendermime keeps them apart from its widgets
 * (widgets.ts): each draws one payload into an empty host node and returns nothing else, so jest drives it in jsdom.
 *
 * Every string in these payloads comes from an MCP server nobody here trusts, so all of it is drawn with
 * `textContent` (dom.ts, blocks.ts, tree.ts, catalog.ts); none of it is HTML.
 *
 * The kit's own fixed words about a result (a raw result's label, the label of a server's error text, what an
 * effect state means, the verdict badges) come with each payload under `labels`, from purra_jupyter
 * (envelope.py, catalog.py). The words of this front end alone (the search box, column names) go through `trans`.
 */

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
import { CLASS, type JSONObject, type Trans, asArray, asObject, asText, el, label, pre } from './dom';
import { ENVELOPE_MIME, RAW_RESULT_MIME } from './mimetypes';

/** One render function: draws `data` into the empty `host`. */
export type PayloadRender = (host: HTMLElement, data: JSONObject, trans: Trans) => void;

/**
 * Draw the payload under `mimeType` into the emptied `host` with `render`, or the line for data that is not an
 * object: what every widget of widgets.ts does with its model.
 */
export function renderPayload(
  host: HTMLElement,
  mimeType: string,
  value: unknown,
  trans: Trans,
  render: PayloadRender
): void {
  host.textContent = '';
  const data = asObject(value);
  if (data === null) {
    host.appendChild(malformed(mimeType, trans));
  } else {
    render(host, data, trans);
  }
}

/** A PurrA envelope: what a PurrA host gets from a bound tool. */
export function renderEnvelope(host: HTMLElement, data: JSONObject, trans: Trans): void {
  appendDecision(host, data, trans);
  host.appendChild(header(label(data, 'kind', ENVELOPE_MIME), data));
  appendEffect(host, data);
  appendMessage(host, data);
  appendServerText(host, data);
  const envelope = asObject(data.envelope) ?? {};
  for (const text of asArray(envelope.text)) {
    host.appendChild(pre(asText(text)));
  }
  appendStructured(host, 'structured', envelope.structured, data.columns);
}

/** A raw tools/call result, every content block kept, clearly labelled as outside the contract. */
export function renderRawResult(host: HTMLElement, data: JSONObject, trans: Trans): void {
  appendDecision(host, data, trans);
  host.appendChild(el('div', CLASS.rawLabel, label(data, 'raw', RAW_RESULT_MIME)));
  host.appendChild(header(trans.__('raw result'), data));
  appendMessage(host, data);
  appendServerText(host, data);
  const result = asObject(data.result) ?? {};
  if (result.isError === true) {
    host.appendChild(el('p', CLASS.error, trans.__('The server flagged this result isError: true.')));
  }
  const imageAlt = label(data, 'imageAlt', '');
  for (const item of asArray(result.content)) {
    host.appendChild(block(item, imageAlt));
  }
  appendStructured(host, 'structuredContent', result.structuredContent, data.columns);
}

/** A server's tool catalog with PurrA verdicts, searchable and filterable (catalog.ts). */
export function renderCatalog(host: HTMLElement, data: JSONObject, trans: Trans): void {
  drawCatalog(host, data, trans);
}
