/**
 * The blocks a record is drawn from: its header, decision, effect, message and server text, raw MCP content
 * blocks, and structured content (a records table and its JSON tree). Pure functions of the payload.
 *
 * The only attribute ever set from server data is `img.src`, and only for a data URI of one of four raster
 * image types whose payload is checked to be base64. URIs are shown as text, never as links.
 */

import { CLASS, JSONObject, Trans, asObject, asText, el, headRow, isolated, jsonText, label, pre, text } from './dom';
import { jsonTree } from './tree';

/** The only images shown: these types, as base64 data URIs. */
const IMAGE_TYPES: ReadonlyArray<string> = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Rows shown in a records table before "… N more rows" (as in envelope.py). */
export const PREVIEW_ROWS = 50;

export function malformed(mime: string, trans: Trans): HTMLElement {
  return el('p', CLASS.error, trans.__("purra_jupyter: this output's %1 data is not an object.", mime));
}

/** `kind · status · server · tool · N ms`, the status coloured. */
export function header(kind: string, data: JSONObject): HTMLElement {
  const errorCode = typeof data.errorCode === 'string' ? data.errorCode : null;
  const elapsed = typeof data.elapsedMs === 'number' ? Math.round(data.elapsedMs) : 0;
  const line = el('div', CLASS.header);
  line.appendChild(el('span', CLASS.kind, kind));
  line.appendChild(text(' · '));
  line.appendChild(el('span', errorCode === null ? CLASS.ok : CLASS.error, errorCode ?? 'ok'));
  line.appendChild(text(` · ${asText(data.server)} · `));
  line.appendChild(isolated(el('code', undefined, asText(data.tool))));
  line.appendChild(el('span', CLASS.muted, ` · ${elapsed} ms`));
  return line;
}

/**
 * How the call was decided (a saved record: `approved (approved by a click) at … · server/tool ·
 * arguments digest 1a2b…`), the full digest on hover, then the arguments that were sent as a folded JSON tree
 * under the payload's own label for them. Absent for results not decided by a widget.
 */
export function appendDecision(node: HTMLElement, data: JSONObject, trans: Trans): void {
  const decision = asObject(data.decision);
  if (decision === null) {
    return;
  }
  const digest = asText(decision.argumentsDigest);
  const line = el('div', CLASS.decision);
  line.appendChild(el('b', undefined, asText(decision.state)));
  line.appendChild(
    text(
      ` (${asText(decision.how)}) at ${localTime(asText(decision.at))} · ` +
        `${asText(decision.server)}/${asText(decision.tool)}`
    )
  );
  const effect = asText(decision.effect);
  if (effect && effect !== 'read') {
    line.appendChild(text(` (${effect})`));
  }
  line.appendChild(text(` · ${trans.__('arguments digest')} `));
  const code = el('code', undefined, `${digest.slice(0, 12)}…`);
  code.title = digest;
  line.appendChild(code);
  node.appendChild(line);
  if (Object.prototype.hasOwnProperty.call(decision, 'arguments')) {
    const key = asText(decision.argumentsLabel) || trans.__('arguments');
    const tree = jsonTree(key, decision.arguments, false);
    tree.classList.add(CLASS.arguments);
    node.appendChild(tree);
  }
  appendActivity(node, decision);
}

/** What the server said while the call ran (its progress, its task, its log lines), under the payload's label. */
function appendActivity(node: HTMLElement, decision: JSONObject): void {
  const lines = Array.isArray(decision.activity) ? decision.activity.map(line => asText(line)) : [];
  if (lines.length === 0) {
    return;
  }
  const block = el('div', `${CLASS.block} ${CLASS.activity}`);
  block.appendChild(el('div', CLASS.blockType, asText(decision.activityLabel)));
  block.appendChild(pre(lines.join('\n')));
  node.appendChild(block);
}

/** `2026-12-01T16:04:33+01:00` as `2026-12-01 16:04:33`: the kernel's local time, as the record says. */
function localTime(iso: string): string {
  return iso.replace('T', ' ').slice(0, 19);
}

/** What the effect `state` means, from the envelope payload's `labels.effectNotes`; empty when it has no note. */
function effectNote(data: JSONObject, state: string): string {
  const notes = asObject(asObject(data.labels)?.effectNotes);
  const note = notes === null || !Object.prototype.hasOwnProperty.call(notes, state) ? undefined : notes[state];
  return typeof note === 'string' ? note : '';
}

/** What the call did, in purra's words (the payload's effect notes); `unknown` as a warning. */
export function appendEffect(node: HTMLElement, data: JSONObject): void {
  const state = asText(data.effectState);
  if (state) {
    const unknown = state === 'unknown';
    const line = el('div', unknown ? `${CLASS.effect} ${CLASS.effectUnknown}` : CLASS.effect);
    line.textContent = `effect: ${state}${effectNote(data, state)}`;
    node.appendChild(line);
  }
}

export function appendMessage(node: HTMLElement, data: JSONObject): void {
  const message = asText(data.message);
  if (message) {
    node.appendChild(el('p', CLASS.message, message));
  }
}

/** The server's own error text (a tool error, a JSON-RPC error): labelled as such, drawn as text. */
export function appendServerText(node: HTMLElement, data: JSONObject): void {
  const serverText = asText(data.serverText);
  if (serverText) {
    const words = el('div', CLASS.block);
    words.appendChild(el('div', CLASS.blockType, label(data, 'serverWords')));
    words.appendChild(pre(serverText));
    node.appendChild(words);
  }
}

// --- structured content ------------------------------------------------------------------

/** The list of records in `value`: a list of objects, or an object holding exactly one such list. */
export function recordsIn(value: unknown): JSONObject[] | null {
  const object = asObject(value);
  if (object !== null) {
    const lists = Object.values(object).filter(isRecords);
    return lists.length === 1 ? lists[0] : null;
  }
  return isRecords(value) ? value : null;
}

function isRecords(value: unknown): value is JSONObject[] {
  return Array.isArray(value) && value.length > 0 && value.every(item => asObject(item) !== null);
}

/**
 * Structured content: a records table when it holds records, and always a collapsible JSON tree. `columns` is the
 * server's column order, which the payload carries because a saved notebook's JSON has its keys sorted.
 */
export function appendStructured(node: HTMLElement, key: string, value: unknown, columns?: unknown): void {
  if (value === null || value === undefined) {
    return;
  }
  const records = recordsIn(value);
  if (records !== null) {
    const section = el('div', CLASS.section);
    section.appendChild(recordsTable(records, columns));
    node.appendChild(section);
  }
  node.appendChild(jsonTree(key, value));
}

export function recordsTable(records: JSONObject[], order?: unknown): DocumentFragment {
  const fragment = document.createDocumentFragment();
  const given = Array.isArray(order) ? order.filter((name): name is string => typeof name === 'string') : [];
  const columns = [...new Set([...given, ...records.flatMap(record => Object.keys(record))])];
  const table = el('table', CLASS.table);
  table.appendChild(headRow(columns));
  const body = document.createElement('tbody');
  for (const record of records.slice(0, PREVIEW_ROWS)) {
    const row = document.createElement('tr');
    for (const column of columns) {
      row.appendChild(el('td', undefined, column in record ? cellText(record[column]) : ''));
    }
    body.appendChild(row);
  }
  table.appendChild(body);
  fragment.appendChild(table);
  if (records.length > PREVIEW_ROWS) {
    fragment.appendChild(el('p', CLASS.muted, `… ${records.length - PREVIEW_ROWS} more rows`));
  }
  return fragment;
}

function cellText(value: unknown): string {
  return typeof value === 'string' ? value : jsonText(value, false);
}

// --- raw MCP content blocks --------------------------------------------------------------

/** A data URI for a PNG, JPEG, GIF or WebP block whose data is base64, else null. */
export function imageSrc(block: JSONObject): string | null {
  const mime = block.mimeType;
  const data = block.data;
  if (typeof mime !== 'string' || !IMAGE_TYPES.includes(mime) || typeof data !== 'string') {
    return null;
  }
  if (!BASE64.test(data) || data.length % 4 !== 0) {
    return null;
  }
  return 'data:' + mime + ';base64,' + data;
}

function base64Note(block: JSONObject): string {
  const data = typeof block.data === 'string' ? block.data : '';
  return `${asText(block.mimeType) || '(no mimeType)'} (${data.length} base64 chars)`;
}

/** One content block, drawn by its type; `imageAlt` is the alt text of an image shown. */
export function block(value: unknown, imageAlt: string): HTMLElement {
  const object = asObject(value);
  const container = el('div', CLASS.block);
  if (object === null) {
    container.appendChild(el('div', CLASS.blockType, 'not a content block'));
    container.appendChild(pre(jsonText(value, true)));
    return container;
  }
  const kind = asText(object.type) || '(no type)';
  container.appendChild(el('div', CLASS.blockType, kind));
  switch (object.type) {
    case 'text':
      container.appendChild(pre(asText(object.text)));
      break;
    case 'image': {
      const src = imageSrc(object);
      if (src !== null) {
        const img = el('img', CLASS.image);
        img.alt = imageAlt;
        img.src = src;
        container.appendChild(img);
      } else {
        const why = 'not shown (only PNG, JPEG, GIF and WebP images with base64 data are)';
        container.appendChild(pre(`${base64Note(object)} — ${why}`));
      }
      break;
    }
    case 'audio':
      container.appendChild(pre(`${base64Note(object)} — audio is not played`));
      break;
    case 'resource_link':
      container.appendChild(pre(resourceLinkLines(object).join('\n')));
      break;
    case 'resource':
      container.appendChild(pre(resourceLines(asObject(object.resource) ?? {}).join('\n')));
      break;
    default:
      container.appendChild(pre(jsonText(object, true)));
  }
  return container;
}

function resourceLinkLines(object: JSONObject): string[] {
  const lines = [`name: ${asText(object.name)}`, `uri: ${asText(object.uri)}`];
  for (const field of ['title', 'description', 'mimeType', 'size']) {
    if (object[field] !== undefined && object[field] !== null) {
      lines.push(`${field}: ${asText(object[field])}`);
    }
  }
  return lines;
}

function resourceLines(resource: JSONObject): string[] {
  const lines = [`uri: ${asText(resource.uri)}`];
  if (resource.mimeType !== undefined && resource.mimeType !== null) {
    lines.push(`mimeType: ${asText(resource.mimeType)}`);
  }
  if (typeof resource.text === 'string') {
    lines.push('', resource.text);
  } else {
    const blob = typeof resource.blob === 'string' ? resource.blob : '';
    lines.push(`(binary, ${blob.length} base64 chars)`);
  }
  return lines;
}
