// Prettier settings shared by Grafana plugins (create-plugin layout); extend from the root file.
module.exports = {
  endOfLine: 'auto',
  printWidth: 120,
  trailingComma: 'es5',
  semi: true,
  jsxSingleQuote: false,
  singleQuote: true,
  useTabs: false,
  tabWidth: 2,
};
