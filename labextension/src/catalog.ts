/**
 * The catalog view: a server's tools with PurrA's verdicts, a text search over names and descriptions and a
 * verdict filter (composed), each tool's schemas as folded JSON, and a reason several tools give shown once below
 * the table, naming them (the payload's `sharedReasons`, grouped by `shared_reasons` in catalog.py). It fits its
 * area: the table is as wide as its area, and each column has a least width (`catalogColumns`) that its words fit
 * in, so they wrap between words; only a word longer than its column (a long unbroken name) breaks inside.
 */

import { CLASS, JSONObject, Trans, asArray, asObject, asText, el, isolated, label, plural, text } from './dom';
import { jsonTree } from './tree';

/** Descriptions longer than this are folded (as `_shorten` in catalog.py). */
export const DESCRIPTION_LIMIT = 300;

/** The words of a tool's verdict badge, from the catalog payload's labels. */
export type Verdicts = { readonly callable: string; readonly notCallable: string };

/** The verdict filter's values. */
export type Filter = 'all' | 'callable' | 'blocked';

/**
 * The columns, each with its least width in `em`: wide enough for the words it holds (a tool's name and title,
 * "destructive,", "callable", "bindable", a reason's words), together within the output of a 950 px notebook area;
 * the table shares the rest by content. (An opened schema's tree is JSON in a narrow column: a long key may still
 * break inside.)
 */
export function catalogColumns(trans: Trans): ReadonlyArray<[string, number]> {
  return [
    [trans.__('tool'), 11],
    [trans.__('description'), 9],
    [trans.__('verdict'), 5],
    [trans.__('schemas'), 8],
    [trans.__('binding'), 5],
    [trans.__('hints'), 6],
    [trans.__('reasons'), 14]
  ];
}

/** A reason several tools give, shown once below the table: the reason and the tools' names. */
export type SharedReason = { readonly reason: string; readonly tools: ReadonlyArray<string> };

/** The payload's `sharedReasons` (none in a catalog saved before they were grouped: each row then shows all). */
export function sharedReasons(data: JSONObject): ReadonlyArray<SharedReason> {
  return asArray(data.sharedReasons).map(group => {
    const shared = asObject(group) ?? {};
    return { reason: asText(shared.reason), tools: asArray(shared.tools).map(asText) };
  });
}

/** The filter's options: every tool, then a verdict's tools. */
export function filters(verdicts: Verdicts, trans: Trans): ReadonlyArray<[Filter, string]> {
  return [
    ['all', trans.__('all tools')],
    ['callable', verdicts.callable],
    ['blocked', verdicts.notCallable]
  ];
}

export function passes(filter: string, callable: boolean): boolean {
  return filter === 'all' || (filter === 'callable') === callable;
}

/** Whether `tool`'s name, shown name, title or description holds `query` (case and surrounding spaces aside). */
export function matches(tool: JSONObject, query: string): boolean {
  const needle = query.trim().toLowerCase();
  if (!needle) {
    return true;
  }
  return [tool.tool, tool.shown_name, tool.title, tool.description].some(field =>
    asText(field).toLowerCase().includes(needle)
  );
}

/** Draw the catalog `data` into `node`: summary, search and filter, then the table. */
export function drawCatalog(node: HTMLElement, data: JSONObject, trans: Trans): void {
  const tools = asArray(data.tools).map(tool => asObject(tool) ?? {});
  const verdicts: Verdicts = {
    callable: label(data, 'callable'),
    notCallable: label(data, 'notCallable')
  };
  node.appendChild(summary(data, tools));
  const note = asText(data.note);
  if (note) {
    node.appendChild(el('p', CLASS.message, note));
  }
  const dropped = asArray(data.dropped).map(asText);
  if (dropped.length > 0) {
    node.appendChild(el('p', CLASS.error, `${label(data, 'dropped')}: ${dropped.join(', ')}`));
  }

  const groups = sharedReasons(data);
  const shared = new Set(groups.map(group => group.reason));
  const sharedBelow = label(data, 'sharedBelow');
  const rows = tools.map(tool => ({ tool, row: toolRow(tool, verdicts, trans, { shared, sharedBelow }) }));
  const search = el('input', CLASS.search);
  search.type = 'search';
  search.placeholder = trans.__('search names and descriptions');
  search.setAttribute('aria-label', trans.__('search tools'));
  const select = el('select');
  for (const [value, words] of filters(verdicts, trans)) {
    const option = el('option', undefined, words);
    option.value = value;
    select.appendChild(option);
  }
  const shown = el('span', CLASS.muted);
  const apply = (): void => {
    let count = 0;
    for (const { tool, row } of rows) {
      row.hidden = !(passes(select.value, tool.callable === true) && matches(tool, search.value));
      count += row.hidden ? 0 : 1;
    }
    shown.textContent = ` ${trans.__('showing %1 of %2', count, rows.length)}`;
  };
  search.addEventListener('input', apply);
  select.addEventListener('change', apply);
  const controls = el('div', CLASS.filter);
  controls.appendChild(search);
  controls.appendChild(text(' '));
  const filter = el('label', undefined, `${trans.__('Show')} `);
  filter.appendChild(select);
  controls.appendChild(filter);
  controls.appendChild(shown);
  node.appendChild(controls);
  node.appendChild(
    catalogTable(
      rows.map(({ row }) => row),
      trans
    )
  );
  const names = new Map(tools.map(tool => [asText(tool.tool), asText(tool.shown_name ?? tool.tool)]));
  for (const group of groups) {
    node.appendChild(sharedSection(group, label(data, 'sharedBy'), names));
  }
  apply();
}

/** `Shared by 13 tools: a, b, c`, each name as code (a bidirectional isolate), then the reason once. */
export function sharedSection(group: SharedReason, sharedBy: string, names: ReadonlyMap<string, string>): HTMLElement {
  const section = el('div', CLASS.sharedReason);
  const heading = el('p');
  heading.appendChild(el('b', undefined, `${sharedBy} ${group.tools.length} tools:`));
  group.tools.forEach((tool, index) => {
    heading.appendChild(text(index === 0 ? ' ' : ', '));
    heading.appendChild(isolated(el('code', undefined, names.get(tool) ?? tool)));
  });
  section.appendChild(heading);
  const list = el('ul');
  list.appendChild(el('li', undefined, group.reason));
  section.appendChild(list);
  return section;
}

function summary(data: JSONObject, tools: ReadonlyArray<JSONObject>): HTMLElement {
  const usable = tools.filter(tool => tool.callable === true).length;
  const line = el('div', CLASS.header);
  line.appendChild(el('span', CLASS.kind, 'PurrA catalog'));
  line.appendChild(
    text(
      ` · ${asText(data.server)}: ${tools.length} tools, ${usable} ${label(data, 'callableUnder')}` +
        ` · digest ${asText(data.digest).slice(0, 12)}`
    )
  );
  if (typeof data.protocolVersion === 'string') {
    line.appendChild(el('span', CLASS.muted, ` · protocol ${data.protocolVersion}`));
  }
  return line;
}

/** The table, each column at least its least width (the header cell's `min-width`), its own as wide as its area. */
export function catalogTable(rows: ReadonlyArray<HTMLTableRowElement>, trans: Trans): HTMLTableElement {
  const table = el('table', `${CLASS.table} ${CLASS.catalogTable}`);
  const head = el('thead');
  const headRow = el('tr');
  for (const [name, least] of catalogColumns(trans)) {
    const th = el('th', undefined, name);
    th.style.minWidth = `${least}em`;
    headRow.appendChild(th);
  }
  head.appendChild(headRow);
  table.appendChild(head);
  const body = el('tbody');
  for (const row of rows) {
    body.appendChild(row);
  }
  table.appendChild(body);
  return table;
}

const HINTS: ReadonlyArray<[string, string]> = [
  ['read_only_hint', 'read-only'],
  ['destructive_hint', 'destructive'],
  ['idempotent_hint', 'idempotent'],
  ['open_world_hint', 'open-world']
];

/** The reasons shown once below the table, and the words a row says of its own that are among them. */
export type Shared = { readonly shared: ReadonlySet<string>; readonly sharedBelow: string };

/** One tool's row; every cell's text is the server's, drawn as text. */
export function toolRow(
  tool: JSONObject,
  verdicts: Verdicts,
  trans: Trans,
  shared: Shared = { shared: new Set(), sharedBelow: '' }
): HTMLTableRowElement {
  const row = el('tr');
  const cell = (content?: string): HTMLTableCellElement => row.appendChild(el('td', undefined, content));
  const name = cell();
  name.appendChild(isolated(el('code', undefined, asText(tool.shown_name ?? tool.tool))));
  const warning = asText(tool.name_warning);
  if (warning) {
    name.appendChild(el('div', CLASS.nameWarning, `⚠ name ${warning}`));
  }
  const title = asText(tool.title);
  if (title) {
    name.appendChild(el('div', CLASS.muted, title)); // (under the name: a column of its own would be too narrow)
  }
  cell().appendChild(description(asText(tool.description)));
  const callable = tool.callable === true;
  const badgeClass = `${CLASS.badge} ${callable ? CLASS.ok : CLASS.error}`;
  cell().appendChild(el('span', badgeClass, callable ? verdicts.callable : verdicts.notCallable));
  schemasCell(cell(), tool, trans);
  cell(bindingText(tool, trans));
  cell(hintsText(tool));
  reasonsCell(cell(), asArray(tool.reasons).map(asText), shared);
  return row;
}

function description(words: string): Node {
  if (words.length <= DESCRIPTION_LIMIT) {
    return text(words);
  }
  const details = el('details');
  details.appendChild(el('summary', undefined, words.slice(0, DESCRIPTION_LIMIT - 1) + '…'));
  details.appendChild(el('div', CLASS.pre, words));
  return details;
}

/** Each schema's verdict, and the schema itself as a folded JSON tree (none for a tool without output schema). */
function schemasCell(td: HTMLTableCellElement, tool: JSONObject, trans: Trans): void {
  const sides: ReadonlyArray<[string, unknown, unknown]> = [
    [trans.__('input'), tool.input_verdict, tool.input_schema],
    [trans.__('output'), tool.output_verdict, tool.output_schema]
  ];
  for (const [side, verdict, schema] of sides) {
    const part = el('div', CLASS.schemas);
    if (schema === undefined || schema === null) {
      part.textContent = `${side}: ${asText(verdict)}`;
    } else {
      part.appendChild(jsonTree(`${side}: ${asText(verdict)}`, schema, false));
    }
    td.appendChild(part);
  }
}

function bindingText(tool: JSONObject, trans: Trans): string {
  const bound = asText(tool.bound_as);
  const bindable = trans.__('bindable as %1', asText(tool.bindable_as));
  return bound ? `${bindable}; ${trans.__('bound as %1', bound)}` : bindable;
}

function hintsText(tool: JSONObject): string {
  const hints = HINTS.filter(([field]) => tool[field] === true).map(([, words]) => words);
  if (typeof tool.task_support === 'string') {
    hints.push(`tasks: ${tool.task_support}`);
  }
  if (typeof tool.view === 'string') {
    hints.push(`view: ${tool.view}`);
  }
  if (tool.app_only === true) {
    hints.push('app only (its view calls it, a model never sees it)');
  }
  if (typeof tool.schema_bytes === 'number') {
    hints.push(`schemas: ${tool.schema_bytes} B`);
  }
  return hints.join(', ');
}

/** The tool's own reasons, folded; then how many of its reasons are shown once below (`+ 2 shared, below`). */
function reasonsCell(td: HTMLTableCellElement, reasons: ReadonlyArray<string>, { shared, sharedBelow }: Shared): void {
  if (reasons.length === 0) {
    td.textContent = '—';
    return;
  }
  const own = reasons.filter(reason => !shared.has(reason));
  if (own.length > 0) {
    const details = el('details');
    details.appendChild(el('summary', undefined, plural(own.length, 'reason')));
    const list = el('ul');
    for (const reason of own) {
      list.appendChild(el('li', undefined, reason));
    }
    details.appendChild(list);
    td.appendChild(details);
  }
  if (own.length < reasons.length) {
    td.appendChild(el('div', CLASS.muted, `+ ${reasons.length - own.length} ${sharedBelow}`));
  }
}
