// Unit tests of the pure functions (src/dom.ts, renderers.ts, tree.ts, blocks.ts, catalog.ts, guard.ts, widgetoutput/renderers.ts, mcpapps/sandbox.ts, protocol.ts, origins.ts) in jsdom, compiled by ts-jest.
module.exports = {
  testEnvironment: 'jsdom',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }] }
};
