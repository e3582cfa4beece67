// Base jest configuration (create-plugin layout); extend it from the root jest.config.js.
const path = require('path');

// ESM-only packages that must be transformed for jest's CommonJS runtime.
const esModules = [
  '@codemirror',
  '@lezer',
  '@prometheus-io',
  'lru-cache',
  'crelt',
  'style-mod',
  'w3c-keyname',
  '@marijn',
  'd3',
  'd3-[a-z-]+',
  'internmap',
  'ol',
  'rxjs',
  'uuid',
  'marked',
  '@grafana/schema',
  '@wojtekmaj',
  'react-calendar',
  'get-user-locale',
  'memoize',
  'mimic-function',
  'ml-distance',
  'is-network-error',
  'ky',
  'nanoid',
  '@react-awesome-query-builder',
].join('|');

module.exports = {
  moduleNameMapper: {
    '\\.(css|scss|sass)$': 'identity-obj-proxy',
    'react-inlinesvg': path.resolve(__dirname, 'jest', 'mocks', 'react-inlinesvg.tsx'),
  },
  modulePaths: ['<rootDir>/src'],
  setupFilesAfterEnv: ['<rootDir>/jest-setup.js'],
  testEnvironment: 'jest-environment-jsdom',
  testMatch: ['<rootDir>/src/**/*.{spec,test,jest}.{js,jsx,ts,tsx}'],
  transform: {
    '^.+\\.(t|j)sx?$|^.+\\.mjs$': [
      '@swc/jest',
      {
        sourceMaps: 'inline',
        jsc: {
          parser: { syntax: 'typescript', tsx: true, decorators: false, dynamicImport: true },
          transform: { react: { runtime: 'classic' } },
        },
      },
    ],
  },
  // Nested copies (node_modules/x/node_modules/y) count too, hence the .* in the lookahead.
  transformIgnorePatterns: [`node_modules/(?!.*(${esModules})/.*)`],
  watchPathIgnorePatterns: ['<rootDir>/node_modules', '<rootDir>/dist'],
};
