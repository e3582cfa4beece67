// Run before every npm script (package.json's pre-scripts): with an older Node the build and
// the tests fail with obscure errors (`Unknown file extension ".ts"` for the webpack config),
// so this names the version needed and the fix first. Plain CommonJS without newer syntax, so
// any Node that can start it gets the message. `npm ci` and `npm install` are stopped earlier,
// by .npmrc's engine-strict (npm runs the root's preinstall only after installing everything).
'use strict';
var path = require('path');
var range = require(path.join(__dirname, '..', 'package.json')).engines.node; // ">=24"
var match = /^>=\s*(\d+)$/.exec(range);
if (!match) {
  console.error('scripts/check-node.cjs: package.json engines.node is "' + range + '"; it reads only ">=<major>"');
  process.exit(2);
}
var needed = Number(match[1]);
var found = Number(process.versions.node.split('.')[0]);
if (found < needed) {
  console.error(
    'Node ≥ ' + needed + ' needed, found ' + found + ' (' + process.execPath + '): ' +
      'run `source scripts/node.sh` or `nvm use`'
  );
  process.exit(1);
}
