// Extends create-plugin's configuration in .config/. Tests run in UTC so time formatting is stable.
process.env.TZ = 'UTC';
const base = require('./.config/jest.config');
const { grafanaESModules, nodeModulesToTransform } = require('./.config/jest/utils');

// ESM-only packages of CodeMirror, the PromQL editor and @grafana/ui's dependencies that jest's
// CommonJS runtime needs transformed, beyond create-plugin's list. Nested copies
// (node_modules/x/node_modules/y) match too.
const esModules = [
  '@codemirror',
  '@lezer',
  '@prometheus-io',
  '@marijn',
  'crelt',
  'style-mod',
  'w3c-keyname',
  'lru-cache',
  'd3-[a-z-]+',
  'internmap',
  '@wojtekmaj',
  'ml-distance',
  'is-network-error',
  'ky',
  'nanoid',
  '@react-awesome-query-builder',
  '@marcbachmann',
];

module.exports = {
  ...base,
  // Some of those packages ship .mjs files.
  transform: { '^.+\\.(t|j)sx?$|^.+\\.mjs$': base.transform['^.+\\.(t|j)sx?$'] },
  transformIgnorePatterns: [nodeModulesToTransform([...grafanaESModules, ...esModules])],
  // Rendering Grafana UI forms in jsdom takes seconds on a busy 2-core CI machine.
  testTimeout: 30000,
};
