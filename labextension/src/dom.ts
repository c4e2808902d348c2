/**
 * Pure DOM helpers: reading untrusted JSON and building elements from it.
 *
 * Every string here may come from an MCP server nobody trusts, so it only ever reaches the page as
 * `textContent` (or a `Text` node): no helper takes HTML.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

export type JSONObject = { readonly [key: string]: unknown };

/** Our own UI words (`trans.__`), from the renderer options' translator, domain `purra-jupyter`. */
export type Trans = Pick<IRenderMime.TranslationBundle, '__' | '_n'>;

/** CSS classes (style/base.css). */
export const CLASS = {
  root: 'jp-PurraRenderer',
  envelope: 'jp-PurraEnvelope',
  raw: 'jp-PurraRawResult',
  catalog: 'jp-PurraCatalog',
  header: 'jp-PurraRenderer-header',
  decision: 'jp-PurraRenderer-decision',
  arguments: 'jp-PurraRenderer-arguments',
  activity: 'jp-PurraRenderer-activity',
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
  catalogTable: 'jp-PurraCatalog-table',
  badge: 'jp-PurraRenderer-badge',
  nameWarning: 'jp-PurraRenderer-nameWarning',
  filter: 'jp-PurraRenderer-filter',
  search: 'jp-PurraCatalog-search',
  schemas: 'jp-PurraCatalog-schemas',
  sharedReason: 'jp-PurraCatalog-sharedReason',
  tree: 'jp-PurraRenderer-tree',
  treeKey: 'jp-PurraRenderer-treeKey',
  treeLeaf: 'jp-PurraRenderer-treeLeaf',
  treeValue: 'jp-PurraRenderer-treeValue'
} as const;

/**
 * The words as written, `%1`, `%2` … replaced by `args`: what `trans.__` does when no translator is given
 * (as JupyterLab's `nullTranslator`, which is not a dependency of a MIME extension).
 */
export const untranslated: Trans = {
  __: (msgid: string, ...args: unknown[]): string => substitute(msgid, args),
  _n: (singular: string, plural: string, n: number, ...args: unknown[]): string =>
    substitute(n === 1 ? singular : plural, [n, ...args])
};

function substitute(words: string, args: unknown[]): string {
  return words.replace(/%(\d+)/g, (match, index: string) => {
    const value = args[Number(index) - 1];
    return value === undefined ? match : String(value);
  });
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

export function jsonText(value: unknown, indent: boolean): string {
  try {
    return JSON.stringify(value, null, indent ? 2 : undefined) ?? String(value);
  } catch {
    return '(not representable as JSON)';
  }
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

// --- elements (textContent only) ----------------------------------------------------------

// Control, format (bidirectional, zero-width), separator, private-use and unassigned characters but the line breaks,
// tabs and spaces that lay text out: what `readable` writes as escapes (the kit's Python does the same in its HTML).
const INVISIBLE = /[^\P{C}\n\t]|[\p{Zl}\p{Zp}]|[^\P{Zs} ]/gu;

/**
 * `content` as a person reads it: every invisible character as its escape (`\u202e`), so that no server text
 * reorders or hides what is shown; line breaks and tabs stay.
 */
export function readable(content: string): string {
  return content.replace(INVISIBLE, char => {
    const code = char.codePointAt(0) ?? 0;
    return code > 0xffff ? `\\U${code.toString(16).padStart(8, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

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
    node.textContent = readable(content);
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
  return document.createTextNode(readable(content));
}

export function pre(content: string): HTMLPreElement {
  return el('pre', CLASS.pre, content);
}

export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
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
