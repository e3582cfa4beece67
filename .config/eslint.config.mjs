// Base eslint flat config (create-plugin layout); extend it from the root eslint.config.mjs.
import grafanaConfig from '@grafana/eslint-config';

export default [
  {
    ignores: ['**/node_modules/**', 'dist/**', 'coverage/**', '.config/**', '**/*.d.ts', 'provisioning/**'],
  },
  ...grafanaConfig,
  {
    files: ['**/*.{ts,tsx,js,jsx,mjs}'],
    rules: {
      'react/prop-types': 'off',
    },
  },
];
