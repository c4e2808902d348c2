/**
 * JupyterLab MIME renderers for purra_jupyter: PurrA envelopes, raw MCP results and tool catalogs.
 *
 * Every string in these bundles comes from an MCP server nobody here trusts. So all of it is
 * rendered through `document.createElement` and `textContent`; the only attribute ever set from
 * server data is `img.src`, and only for a data URI of one of four raster image types whose payload
 * is checked to be base64. URIs are shown as text, never as links. That is why the factories
 * below can honestly declare themselves `safe`.
 *
 * The kit's own fixed words (a raw result's label, the label of a server's error text, what an effect state
 * means, the verdict badges) are not typed here: each payload carries them under `labels`, from purra_jupyter
 * (envelope.py, catalog.py), and they are drawn as text too. A payload saved before labels existed, or one
 * whose label is not a string, shows the label's neutral fallback instead (see `Private.label`).
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

/** The MIME types purra_jupyter emits (see purra_jupyter/wire.py). */
export const ENVELOPE_MIME = 'application/vnd.purra.envelope+json';
export const RAW_RESULT_MIME = 'application/vnd.purra.raw-result+json';
export const CATALOG_MIME = 'application/vnd.purra.catalog+json';

/** The only images shown: these types, as base64 data URIs. */
const IMAGE_TYPES: ReadonlyArray<string> = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Rows shown in a records table before "… N more rows" (as in envelope.py). */
const PREVIEW_ROWS = 50;
/** Children shown per JSON-tree node, and the depth past which a node is shown as plain JSON. */
const TREE_CHILDREN = 500;
const TREE_DEPTH = 40;
/** Descriptions longer than this are folded in the catalog table (as `_shorten` in catalog.py). */
const DESCRIPTION_LIMIT = 300;

/** CSS classes (style/base.css). */
const CLASS = {
  root: 'jp-PurraRenderer',
  envelope: 'jp-PurraEnvelope',
  raw: 'jp-PurraRawResult',
  catalog: 'jp-PurraCatalog',
  header: 'jp-PurraRenderer-header',
  decision: 'jp-PurraRenderer-decision',
  kind: 'jp-PurraRenderer-kind',
  ok: 'jp-PurraRenderer-ok',
  error: 'jp-PurraRenderer-error',
  muted: 'jp-PurraRenderer-muted',
  message: 'jp-PurraRenderer-message',
  rawLabel: 'jp-PurraRenderer-rawLabel',
  effect: 'jp-PurraRenderer-effect',
  effectUnknown: 'jp-PurraRenderer-effectUnknown',
  pre: 'jp-PurraRenderer-pre',
  section: 'jp-PurraRenderer-section',
  block: 'jp-PurraRenderer-block',
  blockType: 'jp-PurraRenderer-blockType',
  image: 'jp-PurraRenderer-image',
  table: 'jp-PurraRenderer-table',
  badge: 'jp-PurraRenderer-badge',
  nameWarning: 'jp-PurraRenderer-nameWarning',
  filter: 'jp-PurraRenderer-filter',
  tree: 'jp-PurraRenderer-tree',
  treeKey: 'jp-PurraRenderer-treeKey',
  treeLeaf: 'jp-PurraRenderer-treeLeaf',
  treeValue: 'jp-PurraRenderer-treeValue'
} as const;

/**
 * What the three renderers share: the classes, the `data-mime-type` mark (as JupyterLab's own renderers
 * set it), clearing before each render, and the line shown for data that is not an object.
 */
abstract class PurraRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(
    private readonly mimeType: string,
    className: string
  ) {
    super();
    this.addClass(CLASS.root);
    this.addClass(className);
    this.node.dataset['mimeType'] = mimeType;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.textContent = '';
    const data = Private.asObject(model.data[this.mimeType]);
    if (data === null) {
      this.node.appendChild(Private.malformed(this.mimeType));
    } else {
      this.draw(this.node, data);
    }
    return Promise.resolve();
  }

  /** Draw ``data`` into the empty ``node``. */
  protected abstract draw(node: HTMLElement, data: Private.JSONObject): void;
}

/** Shows a PurrA envelope: what a PurrA host gets from a bound tool. */
export class EnvelopeRenderer extends PurraRenderer {
  constructor() {
    super(ENVELOPE_MIME, CLASS.envelope);
  }

  protected draw(node: HTMLElement, data: Private.JSONObject): void {
    Private.appendDecision(node, data);
    node.appendChild(Private.header(Private.label(data, 'kind', ENVELOPE_MIME), data));
    Private.appendEffect(node, data);
    Private.appendMessage(node, data);
    Private.appendServerText(node, data);
    const envelope = Private.asObject(data.envelope) ?? {};
    for (const text of Private.asArray(envelope.text)) {
      node.appendChild(Private.pre(Private.asText(text)));
    }
    Private.appendStructured(node, 'structured', envelope.structured);
  }
}

/** Shows a raw tools/call result, every content block kept, clearly labelled as outside the contract. */
export class RawResultRenderer extends PurraRenderer {
  constructor() {
    super(RAW_RESULT_MIME, CLASS.raw);
  }

  protected draw(node: HTMLElement, data: Private.JSONObject): void {
    Private.appendDecision(node, data);
    node.appendChild(Private.el('div', CLASS.rawLabel, Private.label(data, 'raw', RAW_RESULT_MIME)));
    node.appendChild(Private.header('raw result', data));
    Private.appendMessage(node, data);
    Private.appendServerText(node, data);
    const result = Private.asObject(data.result) ?? {};
    if (result.isError === true) {
      node.appendChild(Private.el('p', CLASS.error, 'The server flagged this result isError: true.'));
    }
    const imageAlt = Private.label(data, 'imageAlt', '');
    for (const block of Private.asArray(result.content)) {
      node.appendChild(Private.block(block, imageAlt));
    }
    Private.appendStructured(node, 'structuredContent', result.structuredContent);
  }
}

/** Shows a server's tool catalog with PurrA verdicts, filterable by whether a tool is callable. */
export class CatalogRenderer extends PurraRenderer {
  constructor() {
    super(CATALOG_MIME, CLASS.catalog);
  }

  protected draw(node: HTMLElement, data: Private.JSONObject): void {
    const tools = Private.asArray(data.tools).map(tool => Private.asObject(tool) ?? {});
    const usable = tools.filter(tool => tool.callable === true).length;
    const verdicts: Private.Verdicts = {
      callable: Private.label(data, 'callable'),
      notCallable: Private.label(data, 'notCallable')
    };
    const summary = Private.el('div', CLASS.header);
    summary.appendChild(Private.el('span', CLASS.kind, 'PurrA catalog'));
    summary.appendChild(
      Private.text(
        ` · ${Private.asText(data.server)}: ${tools.length} tools, ${usable} ${Private.label(data, 'callableUnder')}` +
          ` · digest ${Private.asText(data.digest).slice(0, 12)}`
      )
    );
    if (typeof data.protocolVersion === 'string') {
      summary.appendChild(Private.el('span', CLASS.muted, ` · protocol ${data.protocolVersion}`));
    }
    node.appendChild(summary);
    const note = Private.asText(data.note);
    if (note) {
      node.appendChild(Private.el('p', CLASS.message, note));
    }
    const dropped = Private.asArray(data.dropped).map(Private.asText);
    if (dropped.length > 0) {
      node.appendChild(Private.el('p', CLASS.error, `${Private.label(data, 'dropped')}: ${dropped.join(', ')}`));
    }

    const rows = tools.map(tool => ({ callable: tool.callable === true, row: Private.toolRow(tool, verdicts) }));
    const shown = Private.el('span', CLASS.muted);
    const select = document.createElement('select');
    for (const [value, label] of Private.filters(verdicts)) {
      const option = document.createElement('option');
      option.value = value;
      option.textContent = label;
      select.appendChild(option);
    }
    const applyFilter = (): void => {
      let count = 0;
      for (const { callable, row } of rows) {
        row.hidden = !Private.passes(select.value, callable);
        count += row.hidden ? 0 : 1;
      }
      shown.textContent = ` showing ${count} of ${rows.length}`;
    };
    select.addEventListener('change', applyFilter);
    const filter = Private.el('label', CLASS.filter, 'Show ');
    filter.appendChild(select);
    filter.appendChild(shown);
    node.appendChild(filter);

    const table = Private.el('table', CLASS.table);
    table.appendChild(Private.headRow(Private.CATALOG_COLUMNS));
    const body = document.createElement('tbody');
    for (const { row } of rows) {
      body.appendChild(row);
    }
    table.appendChild(body);
    node.appendChild(table);
    applyFilter();
  }
}

const extensions: IRenderMime.IExtension[] = [
  {
    id: 'purra-jupyter-renderers:envelope',
    rendererFactory: {
      safe: true,
      mimeTypes: [ENVELOPE_MIME],
      createRenderer: () => new EnvelopeRenderer()
    },
    rank: 0,
    dataType: 'json'
  },
  {
    id: 'purra-jupyter-renderers:raw-result',
    rendererFactory: {
      safe: true,
      mimeTypes: [RAW_RESULT_MIME],
      createRenderer: () => new RawResultRenderer()
    },
    rank: 0,
    dataType: 'json'
  },
  {
    id: 'purra-jupyter-renderers:catalog',
    rendererFactory: {
      safe: true,
      mimeTypes: [CATALOG_MIME],
      createRenderer: () => new CatalogRenderer()
    },
    rank: 0,
    dataType: 'json'
  }
];

export default extensions;

namespace Private {
  export type JSONObject = { readonly [key: string]: unknown };

  /** The words of a tool's verdict badge, from the catalog payload's labels. */
  export type Verdicts = { readonly callable: string; readonly notCallable: string };

  /** The filter's options: every tool, then a verdict's tools. */
  export function filters(verdicts: Verdicts): ReadonlyArray<[string, string]> {
    return [
      ['all', 'all tools'],
      ['callable', verdicts.callable],
      ['blocked', verdicts.notCallable]
    ];
  }

  export const CATALOG_COLUMNS = [
    'tool',
    'title',
    'description',
    'verdict',
    'input',
    'output',
    'bindable as',
    'bound as',
    'hints',
    'reasons'
  ];

  export function passes(filter: string, callable: boolean): boolean {
    return filter === 'all' || (filter === 'callable') === callable;
  }

  // --- reading untrusted JSON ---------------------------------------------------------------

  export function asObject(value: unknown): JSONObject | null {
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JSONObject) : null;
  }

  export function asArray(value: unknown): ReadonlyArray<unknown> {
    return Array.isArray(value) ? value : [];
  }

  /** A string as is; anything else (null and undefined aside) as JSON. */
  export function asText(value: unknown): string {
    if (typeof value === 'string') {
      return value;
    }
    return value === null || value === undefined ? '' : jsonText(value, false);
  }

  function jsonText(value: unknown, indent: boolean): string {
    try {
      return JSON.stringify(value, null, indent ? 2 : undefined) ?? String(value);
    } catch {
      return '(not representable as JSON)';
    }
  }

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
   * The fixed word `key` of the payload's `labels` (set by purra_jupyter, so no copy of it lives here); when it is
   * missing or not a string (a notebook saved before labels existed), `fallback`: by default the key itself, a
   * neutral placeholder that invents no words of the kit's.
   */
  export function label(data: JSONObject, key: string, fallback: string = key): string {
    const labels = asObject(data.labels);
    const value = labels === null ? undefined : labels[key];
    return typeof value === 'string' ? value : fallback;
  }

  /** What the effect `state` means, from the envelope payload's `labels.effectNotes`; empty when it has no note. */
  function effectNote(data: JSONObject, state: string): string {
    const notes = asObject(asObject(data.labels)?.effectNotes);
    const note = notes === null || !Object.prototype.hasOwnProperty.call(notes, state) ? undefined : notes[state];
    return typeof note === 'string' ? note : '';
  }

  // --- DOM helpers (textContent only) ---------------------------------------------------------

  export function el<K extends keyof HTMLElementTagNameMap>(
    tag: K,
    className?: string,
    content?: string
  ): HTMLElementTagNameMap[K] {
    const node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (content !== undefined) {
      node.textContent = content;
    }
    return node;
  }

  /**
   * `node` as a bidirectional isolate (`dir="auto"`): a right-to-left override in server text it holds ends with
   * it, so it cannot reverse the kit's words after it.
   */
  export function isolated<T extends HTMLElement>(node: T): T {
    node.dir = 'auto';
    return node;
  }

  export function text(content: string): Text {
    return document.createTextNode(content);
  }

  export function pre(content: string): HTMLPreElement {
    return el('pre', CLASS.pre, content);
  }

  export function malformed(mime: string): HTMLElement {
    return el('p', CLASS.error, `purra_jupyter: this output's ${mime} data is not an object.`);
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
   * arguments digest 1a2b…`), the full digest on hover. Absent for results not decided by a widget.
   */
  export function appendDecision(node: HTMLElement, data: JSONObject): void {
    const decision = asObject(data.decision);
    if (decision === null) {
      return;
    }
    const digest = asText(decision.argumentsDigest);
    const line = el('div', CLASS.decision);
    line.appendChild(el('b', undefined, asText(decision.state)));
    line.appendChild(
      text(` (${asText(decision.how)}) at ${localTime(asText(decision.at))} · ${asText(decision.server)}/${asText(decision.tool)}`)
    );
    const effect = asText(decision.effect);
    if (effect && effect !== 'read') {
      line.appendChild(text(` (${effect})`));
    }
    line.appendChild(text(' · arguments digest '));
    const code = el('code', undefined, `${digest.slice(0, 12)}…`);
    code.title = digest;
    line.appendChild(code);
    node.appendChild(line);
  }

  /** `2026-12-01T16:04:33+01:00` as `2026-12-01 16:04:33`: the kernel's local time, as the record says. */
  function localTime(iso: string): string {
    return iso.replace('T', ' ').slice(0, 19);
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

  /** Structured content: a records table when it holds records, and always a collapsible JSON tree. */
  export function appendStructured(node: HTMLElement, label: string, value: unknown): void {
    if (value === null || value === undefined) {
      return;
    }
    const records = recordsIn(value);
    if (records !== null) {
      const section = el('div', CLASS.section);
      section.appendChild(recordsTable(records));
      node.appendChild(section);
    }
    const tree = el('div', CLASS.tree);
    tree.appendChild(jsonTree(label, value, 0));
    node.appendChild(tree);
  }

  export function headRow(columns: ReadonlyArray<string>): HTMLTableSectionElement {
    const head = document.createElement('thead');
    const row = document.createElement('tr');
    for (const column of columns) {
      row.appendChild(el('th', undefined, column));
    }
    head.appendChild(row);
    return head;
  }

  function recordsTable(records: JSONObject[]): DocumentFragment {
    const fragment = document.createDocumentFragment();
    const columns = [...new Set(records.flatMap(record => Object.keys(record)))];
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

  function plural(count: number, noun: string): string {
    return `${count} ${noun}${count === 1 ? '' : 's'}`;
  }

  function cellText(value: unknown): string {
    return typeof value === 'string' ? value : jsonText(value, false);
  }

  /** A JSON value as nested `<details>`: objects and arrays fold, leaves show their JSON text. */
  function jsonTree(key: string, value: unknown, depth: number): HTMLElement {
    const isArray = Array.isArray(value);
    const object = asObject(value);
    if ((!isArray && object === null) || depth >= TREE_DEPTH) {
      const leaf = el('div', CLASS.treeLeaf);
      leaf.appendChild(el('span', CLASS.treeKey, `${key}: `));
      leaf.appendChild(el('span', CLASS.treeValue, jsonText(value, false)));
      return leaf;
    }
    const entries: Array<[string, unknown]> = isArray
      ? (value as unknown[]).map((item, index) => [String(index), item])
      : Object.entries(object ?? {});
    const details = document.createElement('details');
    details.open = depth === 0;
    const summary = document.createElement('summary');
    summary.appendChild(el('span', CLASS.treeKey, key));
    const count = isArray ? `[${plural(entries.length, 'item')}]` : `{${plural(entries.length, 'key')}}`;
    summary.appendChild(el('span', CLASS.muted, ` ${count}`));
    details.appendChild(summary);
    for (const [childKey, child] of entries.slice(0, TREE_CHILDREN)) {
      details.appendChild(jsonTree(childKey, child, depth + 1));
    }
    if (entries.length > TREE_CHILDREN) {
      details.appendChild(el('div', CLASS.muted, `… ${entries.length - TREE_CHILDREN} more`));
    }
    return details;
  }

  // --- raw MCP content blocks --------------------------------------------------------------

  /** A data URI for a PNG, JPEG, GIF or WebP block whose data is base64, else null. */
  function imageSrc(block: JSONObject): string | null {
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
      case 'resource_link': {
        const lines = [`name: ${asText(object.name)}`, `uri: ${asText(object.uri)}`];
        for (const field of ['title', 'description', 'mimeType', 'size']) {
          if (object[field] !== undefined && object[field] !== null) {
            lines.push(`${field}: ${asText(object[field])}`);
          }
        }
        container.appendChild(pre(lines.join('\n')));
        break;
      }
      case 'resource': {
        const resource = asObject(object.resource) ?? {};
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
        container.appendChild(pre(lines.join('\n')));
        break;
      }
      default:
        container.appendChild(pre(jsonText(object, true)));
    }
    return container;
  }

  // --- catalog rows --------------------------------------------------------------------------

  const HINTS: ReadonlyArray<[string, string]> = [
    ['read_only_hint', 'read-only'],
    ['destructive_hint', 'destructive'],
    ['idempotent_hint', 'idempotent'],
    ['open_world_hint', 'open-world']
  ];

  export function toolRow(tool: JSONObject, verdicts: Verdicts): HTMLTableRowElement {
    const row = document.createElement('tr');
    const cell = (content?: string): HTMLTableCellElement => {
      const td = el('td', undefined, content);
      row.appendChild(td);
      return td;
    };
    const name = cell();
    name.appendChild(isolated(el('code', undefined, asText(tool.shown_name ?? tool.tool))));
    const warning = asText(tool.name_warning);
    if (warning) {
      name.appendChild(el('div', CLASS.nameWarning, `⚠ name ${warning}`));
    }
    cell(asText(tool.title));
    const description = asText(tool.description);
    if (description.length > DESCRIPTION_LIMIT) {
      const details = document.createElement('details');
      details.appendChild(el('summary', undefined, description.slice(0, DESCRIPTION_LIMIT - 1) + '…'));
      details.appendChild(el('div', CLASS.pre, description));
      cell().appendChild(details);
    } else {
      cell(description);
    }
    const callable = tool.callable === true;
    const badgeClass = `${CLASS.badge} ${callable ? CLASS.ok : CLASS.error}`;
    cell().appendChild(el('span', badgeClass, callable ? verdicts.callable : verdicts.notCallable));
    cell(asText(tool.input_verdict));
    cell(asText(tool.output_verdict));
    cell(asText(tool.bindable_as));
    cell(asText(tool.bound_as));
    const hints = HINTS.filter(([field]) => tool[field] === true).map(([, label]) => label);
    if (typeof tool.task_support === 'string') {
      hints.push(`tasks: ${tool.task_support}`);
    }
    if (typeof tool.schema_bytes === 'number') {
      hints.push(`schemas: ${tool.schema_bytes} B`);
    }
    cell(hints.join(', '));
    const reasons = asArray(tool.reasons).map(asText);
    if (reasons.length === 0) {
      cell('—');
    } else {
      const details = document.createElement('details');
      details.appendChild(el('summary', undefined, plural(reasons.length, 'reason')));
      const list = document.createElement('ul');
      for (const reason of reasons) {
        list.appendChild(el('li', undefined, reason));
      }
      details.appendChild(list);
      cell().appendChild(details);
    }
    return row;
  }
}
