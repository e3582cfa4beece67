// Production and development build of the plugin frontend (create-plugin layout, written by
// hand). Output goes to dist/, next to the backend binaries that mage writes there.
import CopyWebpackPlugin from 'copy-webpack-plugin';
import ForkTsCheckerWebpackPlugin from 'fork-ts-checker-webpack-plugin';
import fs from 'fs';
import path from 'path';
import type { Configuration, ExternalItemFunctionData } from 'webpack';

const root = path.resolve(__dirname, '..', '..');
const srcDir = path.join(root, 'src');
const distDir = path.join(root, 'dist');

// fs.readFileSync follows the src/plugin.json symlink to the root plugin.json.
const pluginJson = JSON.parse(fs.readFileSync(path.join(srcDir, 'plugin.json'), 'utf8'));
const packageJson = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

// Packages Grafana provides at runtime through SystemJS; bundling them would load a second
// React or a second copy of @grafana/data into the page.
const externals = [
  'lodash',
  'jquery',
  'moment',
  'slate',
  'emotion',
  '@emotion/react',
  '@emotion/css',
  'prismjs',
  'slate-plain-serializer',
  '@grafana/slate-react',
  'react',
  'react-dom',
  'react-redux',
  'redux',
  'rxjs',
  'i18next',
  'react-router',
  'react-router-dom',
  'd3',
  'angular',
  /^@grafana\/ui/i,
  /^@grafana\/runtime/i,
  /^@grafana\/data/i,
  // Grafana resolves this one itself; plugins import its enums and types only.
  ({ request }: ExternalItemFunctionData, callback: (err?: Error, result?: string) => void) => {
    const prefix = 'grafana/';
    if (request?.startsWith(prefix)) {
      return callback(undefined, request.slice(prefix.length));
    }
    callback();
  },
];

// Replace the build placeholders in plugin.json the way create-plugin's build does.
function fillPluginJson(content: Buffer): string {
  const today = new Date().toISOString().slice(0, 10);
  return content
    .toString()
    .replace(/%VERSION%/g, packageJson.version)
    .replace(/%TODAY%/g, today);
}

const config = (env: Record<string, unknown>): Configuration => {
  const production = Boolean(env.production);
  const copyPatterns = [
    { from: path.join(srcDir, 'plugin.json'), to: 'plugin.json', transform: fillPluginJson },
    { from: path.join(srcDir, 'img'), to: 'img' },
    // The catalog shows the users' README (src/README.md), not the developers' one.
    { from: path.join(srcDir, 'README.md'), to: '.' },
    { from: path.join(root, 'CHANGELOG.md'), to: '.', noErrorOnMissing: true },
    { from: path.join(root, 'LICENSE'), to: '.', noErrorOnMissing: true },
    { from: path.join(srcDir, 'dashboards'), to: 'dashboards', noErrorOnMissing: true },
  ];
  return {
    cache: { type: 'filesystem', buildDependencies: { config: [__filename] } },
    context: srcDir,
    devtool: production ? 'source-map' : 'eval-source-map',
    entry: { module: './module.ts' },
    externals,
    mode: production ? 'production' : 'development',
    module: {
      rules: [
        {
          exclude: /node_modules/,
          test: /\.[tj]sx?$/,
          use: {
            loader: 'swc-loader',
            options: {
              jsc: {
                baseUrl: srcDir,
                target: 'es2015',
                loose: false,
                parser: { syntax: 'typescript', tsx: true, decorators: false, dynamicImport: true },
              },
            },
          },
        },
        {
          test: /\.(png|jpe?g|gif|svg)$/,
          type: 'asset/resource',
          generator: { filename: 'img/[name][ext]' },
        },
      ],
    },
    output: {
      clean: { keep: /^gpx_|^(MANIFEST\.txt|go_plugin_build_manifest)$/ },
      filename: '[name].js',
      library: { type: 'amd' },
      path: distDir,
      publicPath: `public/plugins/${pluginJson.id}/`,
      uniqueName: pluginJson.id,
    },
    performance: { hints: false },
    plugins: [
      new CopyWebpackPlugin({ patterns: copyPatterns }),
      new ForkTsCheckerWebpackPlugin({
        async: !production,
        issue: { include: [{ file: '**/*.{ts,tsx}' }] },
        typescript: { configFile: path.join(root, 'tsconfig.json') },
      }),
    ],
    resolve: {
      extensions: ['.js', '.jsx', '.ts', '.tsx'],
      modules: [srcDir, 'node_modules'],
    },
  };
};

export default config;
