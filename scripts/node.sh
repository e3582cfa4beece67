# Sourced by scripts/test.sh and .ci/run: puts a Node.js of the major version in .nvmrc (the LTS
# CI runs on) first on PATH. A machine Node of that major or newer is used as it is; an older
# one gets the platform's Node build from the npm registry (package node-<os>-<arch>, the
# binaries the `node` package installs, fetched without install scripts) into .cache/, once.
# SYSTEM_NODE=1 keeps the machine's Node; package.json's engines (24 or newer, what
# @grafana/aws-sdk and @grafana/plugin-ui declare) say which ones work.
want=$(tr -dc 0-9 <.nvmrc) # callers run from the repository root
have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "${SYSTEM_NODE:-0}" != 1 ] && [ "$have" -lt "$want" ]; then
  pkg="node-$(node -p 'process.platform + "-" + process.arch' 2>/dev/null || echo linux-x64)"
  dir="$PWD/.cache/node-$want"
  if [ ! -x "$dir/node_modules/$pkg/bin/node" ]; then
    echo "Node $have is older than .nvmrc's $want: installing $pkg@$want from the npm registry into .cache/" >&2
    npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error "$pkg@$want" >&2
  fi
  export PATH="$dir/node_modules/$pkg/bin:$PATH"
fi
unset want have pkg dir
