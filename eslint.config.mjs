// Extends the create-plugin style base in .config/; project rules go here.
import baseConfig from './.config/eslint.config.mjs';

export default [
  ...baseConfig,
  {
    ignores: ['pkg/**', 'cmd/**', 'dashboards/**', 'scripts/**', 'examples/**', 'src/dashboards/**', 'e2e/dist/**', 'test-results/**'],
  },
];
