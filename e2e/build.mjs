// Bundles the browser tests' page (e2e/page) with the real Grafana packages into e2e/dist.
// esbuild rather than the plugin's webpack config: that one leaves @grafana/*, react and
// rxjs to Grafana (externals), and bundling them here takes seconds instead of minutes.
import { build } from 'esbuild';
import { copyFile, cp, mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist');
await mkdir(out, { recursive: true });

// @grafana/plugin-compat (through @grafana/plugin-ui) imports host APIs that newer Grafana
// versions add and falls back when one is undefined. In Grafana @grafana/runtime is a module
// object, so a missing name reads as undefined; bundled as ES modules here, esbuild rejects
// it. Its named imports from @grafana/runtime become reads of the module object, as in Grafana.
const compatHostApis = {
  name: 'plugin-compat-host-apis',
  setup(b) {
    b.onLoad({ filter: /[\\/]@grafana[\\/]plugin-compat[\\/].*\.mjs$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const contents = source.replace(
        /import \{([^}]*)\} from '@grafana\/runtime';/g,
        (_, names) =>
          "import * as hostRuntime from '@grafana/runtime';\n" +
          names
            .split(',')
            .map((n) => n.trim().split(/\s+as\s+/))
            .map(([name, local = name]) => `const ${local} = hostRuntime[${JSON.stringify(name)}];`)
            .join('\n')
      );
      return { contents, loader: 'js' };
    });
  },
};
const started = Date.now();
await build({
  entryPoints: [join(here, 'page', 'main.tsx')],
  outfile: join(out, 'main.js'),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'chrome120',
  jsx: 'transform',
  define: { 'process.env.NODE_ENV': '"development"', global: 'globalThis' },
  // Fonts and images that Grafana's packages import are not needed to test the editors.
  loader: { '.svg': 'empty', '.woff': 'empty', '.woff2': 'empty', '.png': 'empty', '.ttf': 'empty' },
  logLevel: 'warning',
  plugins: [
    compatHostApis,
    {
      name: 'cjs-default',
      setup(b) {
        b.onResolve({ filter: /^react-custom-scrollbars-2$/ }, () => ({ path: join(here, 'page', 'scrollbars.ts') }));
      },
    },
  ],
});
await copyFile(join(here, 'page', 'index.html'), join(out, 'index.html'));
// @grafana/ui's Icon loads its SVGs at run time from public/build/img/icons/, as in Grafana.
await cp(
  join(here, '..', 'node_modules', '@grafana', 'ui', 'dist', 'public', 'img', 'icons'),
  join(out, 'public', 'build', 'img', 'icons'),
  {
    recursive: true,
  }
);
console.log(`e2e page bundled into ${out} in ${Date.now() - started} ms`);
