// Extends the create-plugin style base in .config/. Tests run in UTC so time formatting is stable.
process.env.TZ = 'UTC';

module.exports = {
  ...require('./.config/jest.config'),
  // Rendering Grafana UI forms in jsdom takes seconds on a busy 2-core CI machine.
  testTimeout: 30000,
};
