// Preloaded into the gateway's processes by bench:million (`--expose-gc --require` this file): SIGUSR2 runs a
// full collection and writes the process's memory right after it to `<FGW_GC_REPORT_DIR>/<pid>.json`, so the
// bench can tell what a connection keeps alive (JS heap in use) from what the heap holds committed but empty
// (the young generation grown in the connect storm, old-space pages with free room) and from memory outside the
// JS heap (uWS.js and malloc). Never loaded in service.
"use strict";
const { writeFileSync } = require("node:fs");
const { join } = require("node:path");
const v8 = require("node:v8");

const dir = process.env.FGW_GC_REPORT_DIR;
if (typeof globalThis.gc === "function" && dir)
  process.on("SIGUSR2", () => {
    globalThis.gc();
    const m = process.memoryUsage();
    const space = (name) => v8.getHeapSpaceStatistics().find((s) => s.space_name === name)?.space_size ?? 0;
    const report = { at: Date.now(), rss: m.rss, heapTotal: m.heapTotal, heapUsed: m.heapUsed, external: m.external, newSpace: space("new_space") };
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify(report));
  });
