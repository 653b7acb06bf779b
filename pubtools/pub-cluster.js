#!/usr/bin/env node
// Entry shim: the tool is TypeScript, compiled by `npm run build` into dist/.
import "../dist/pubtools/src/pub-cluster.js";
