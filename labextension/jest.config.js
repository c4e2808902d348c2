// Unit tests of the pure modules (src/dom.ts, renderers.ts, blocks.ts, tree.ts, catalog.ts, guard.ts, widgetoutput/renderers.ts, mcpapps/protocol.ts, origins.ts, renderers.ts, sandbox.ts) in jsdom, compiled by ts-jest.
module.exports = {
  testEnvironment: 'jsdom',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }] }
};
