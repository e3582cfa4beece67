// Extends create-plugin's configuration in .config/; project rules go here.
import { defineConfig } from 'eslint/config';
import baseConfig from './.config/eslint.config.mjs';

export default defineConfig([
  {
    ignores: [
      '**/node_modules/',
      '**/dist/',
      '**/coverage/',
      '**/*.d.ts',
      '.config/',
      '.cache/',
      'provisioning/',
      'pkg/',
      'cmd/',
      'dashboards/',
      'scripts/',
      'examples/',
      'src/dashboards/',
      'e2e/dist/',
      'test-results/',
      '**/.eslintcache',
    ],
  },
  ...baseConfig,
]);
