/** The folded JSON tree: nested `<details>` whose leaves show their JSON text. */

import { CLASS, asObject, el, jsonText, plural } from './dom';

/** Children shown per node, and the depth past which a node is shown as plain JSON. */
export const TREE_CHILDREN = 500;
export const TREE_DEPTH = 40;

/**
 * `value` as a tree under `key`: objects and arrays fold, only the root open unless `open` is false (a tree
 * shown under a record or in a catalog row starts folded, a reader opens it).
 */
export function jsonTree(key: string, value: unknown, open = true): HTMLElement {
  const tree = el('div', CLASS.tree);
  const root = node(key, value, 0);
  if (root instanceof HTMLDetailsElement) {
    root.open = open;
  }
  tree.appendChild(root);
  return tree;
}

function node(key: string, value: unknown, depth: number): HTMLElement {
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
  const summary = document.createElement('summary');
  summary.appendChild(el('span', CLASS.treeKey, key));
  const count = isArray ? `[${plural(entries.length, 'item')}]` : `{${plural(entries.length, 'key')}}`;
  summary.appendChild(el('span', CLASS.muted, ` ${count}`));
  details.appendChild(summary);
  for (const [childKey, child] of entries.slice(0, TREE_CHILDREN)) {
    details.appendChild(node(childKey, child, depth + 1));
  }
  if (entries.length > TREE_CHILDREN) {
    details.appendChild(el('div', CLASS.muted, `… ${entries.length - TREE_CHILDREN} more`));
  }
  return details;
}
