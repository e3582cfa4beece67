// The project's build: create-plugin's configuration in .config/ (managed by
// `npx @grafana/create-plugin@latest update`), with the changes made here.
import CopyWebpackPlugin from 'copy-webpack-plugin';
import type { Configuration } from 'webpack';

import grafanaConfig, { type Env } from './.config/webpack/webpack.config.ts';
import { copyFilePatterns } from './.config/bundler/copyFiles.ts';

// The base copies every src/**/*.json into dist/. src/ also holds JSON that module.js bundles
// (defaults, query types, semantic conventions); besides plugin.json (a pattern of its own),
// only the dashboards that plugin.json includes belong in dist/.
const patterns = copyFilePatterns.map((p) => (p.from === '**/*.json' ? { ...p, from: 'dashboards/*.json' } : p));

const config = async (env: Env): Promise<Configuration> => {
  const base = await grafanaConfig(env);
  return {
    ...base,
    // module.js bundles the editor (CodeMirror, the PromQL grammar): over webpack's 244 KiB hint by design.
    performance: { hints: false },
    plugins: base.plugins?.map((p) => (p instanceof CopyWebpackPlugin ? new CopyWebpackPlugin({ patterns }) : p)),
  };
};

export default config;
