import { TREE_CHILDREN, TREE_DEPTH, jsonTree } from '../src/tree';

function nested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) {
    value = { next: value };
  }
  return value;
}

describe('jsonTree', () => {
  it('folds objects and arrays, the root open unless asked otherwise', () => {
    const tree = jsonTree('structured', { a: { b: 1 }, list: [1, 2] });
    const [root, a, list] = Array.from(tree.querySelectorAll('details'));
    expect(root.open).toBe(true);
    expect(a.open).toBe(false);
    expect(list.querySelector('summary')?.textContent).toBe('list [2 items]');
    expect(root.querySelector('summary')?.textContent).toBe('structured {2 keys}');
    expect(jsonTree('arguments', { a: 1 }, false).querySelector('details')?.open).toBe(false);
  });

  it('shows a leaf as its JSON text, and markup in it as text', () => {
    const tree = jsonTree('v', { name: '<img src=x onerror=alert(1)>', n: 1.5, none: null });
    expect(tree.querySelector('img')).toBeNull();
    const values = Array.from(tree.querySelectorAll('.jp-PurraRenderer-treeValue')).map(node => node.textContent);
    expect(values).toEqual(['"<img src=x onerror=alert(1)>"', '1.5', 'null']);
  });

  it('a scalar root is one leaf', () => {
    const tree = jsonTree('x', 'text');
    expect(tree.querySelector('details')).toBeNull();
    expect(tree.textContent).toBe('x: "text"');
  });

  it('folds a long list after its first children, saying how many more', () => {
    const long = Array.from({ length: TREE_CHILDREN + 7 }, (_, index) => index);
    const root = jsonTree('long', long).querySelector('details') as HTMLDetailsElement;
    expect(root.querySelectorAll(':scope > .jp-PurraRenderer-treeLeaf')).toHaveLength(TREE_CHILDREN);
    expect(root.lastElementChild?.textContent).toBe('… 7 more');
  });

  it('shows a node past the depth limit as plain JSON', () => {
    const tree = jsonTree('deep', nested(TREE_DEPTH + 3));
    expect(tree.querySelectorAll('details')).toHaveLength(TREE_DEPTH);
    const deepest = tree.querySelectorAll('.jp-PurraRenderer-treeValue');
    expect(deepest).toHaveLength(1);
    expect(deepest[0].textContent).toBe('{"next":{"next":{"next":"bottom"}}}');
  });
});
