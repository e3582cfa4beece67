// react-custom-scrollbars-2 is CommonJS with an __esModule default export. @grafana/ui's .mjs
// files import its default, which esbuild resolves with Node's rules for .mjs importers (the
// whole exports object, not its default); this module hands them the component itself.
// @ts-expect-error: the package's types describe its entry point, not this file
import * as scrollbars from 'react-custom-scrollbars-2/lib/index.js';

export default scrollbars.default;
export const Scrollbars = scrollbars.Scrollbars;
