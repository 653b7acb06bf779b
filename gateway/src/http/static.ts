import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { extname, join, resolve } from "node:path";
import { PACKAGE_ROOT } from "../config/config.js";
import type { Logger } from "../log.js";
import type { HttpResponse, TemplatedApp } from "../uws.js";
import { statusLine } from "../protocol/http-reply.js";

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
};

export type StaticFile = { body: Buffer; contentType: string; etag: string };
/** The files by URL path, and the vendored modules that were not installed. */
export type StaticFiles = { files: Map<string, StaticFile>; missing: string[] };

/** Where the served files come from, relative to the package root. */
export const CLIENT_BUNDLE = "dist/gateway/client/client.js";
export const PUBLIC_DIR = "gateway/public";
/**
 * Files of npm dependencies the page loads, by URL path: the charting library (uPlot) and its license. They
 * are resolved as modules from the package root, so they come from whatever `npm ci` installed (hoisted or
 * not) and the page needs no CDN.
 */
export const VENDOR_FILES: Record<string, string> = {
  "/vendor/uPlot.esm.js": "uplot/dist/uPlot.esm.js",
  "/vendor/uPlot.min.css": "uplot/dist/uPlot.min.css",
  "/vendor/uPlot.LICENSE.txt": "uplot/LICENSE",
};

/**
 * Reads the web page (gateway/public/, flat), the client SDK bundle and the vendored files once, keyed by URL
 * path. Files are small and fixed for the life of the worker, so they are held in memory and never read per
 * request.
 */
export function loadStaticFiles(root: string = PACKAGE_ROOT): StaticFiles {
  const files = new Map<string, StaticFile>();
  const missing: string[] = [];
  const add = (urlPath: string, file: string) => {
    const body = readFileSync(file);
    const contentType = CONTENT_TYPES[extname(urlPath)] ?? CONTENT_TYPES[extname(file)] ?? "application/octet-stream";
    files.set(urlPath, { body, contentType, etag: `"${createHash("sha1").update(body).digest("base64url").slice(0, 16)}"` });
  };
  const pub = resolve(root, PUBLIC_DIR);
  if (existsSync(pub)) {
    for (const name of readdirSync(pub)) {
      const file = join(pub, name);
      if (statSync(file).isFile()) add(`/${name}`, file);
    }
  }
  const bundle = resolve(root, CLIENT_BUNDLE);
  if (existsSync(bundle)) add("/client.js", bundle);
  if (existsSync(`${bundle}.map`)) add("/client.js.map", `${bundle}.map`);
  const require = createRequire(resolve(root, "package.json"));
  for (const [urlPath, spec] of Object.entries(VENDOR_FILES)) {
    try {
      add(urlPath, require.resolve(spec));
    } catch {
      missing.push(spec);
    }
  }
  const index = files.get("/index.html");
  if (index) files.set("/", index);
  return { files, missing };
}

/** Registers GET and HEAD routes for the static files; call before the catch-all 404 route. */
export function registerStaticRoutes(app: TemplatedApp, log: Logger, { files, missing }: StaticFiles = loadStaticFiles()): void {
  if (!files.has("/client.js"))
    log.warn({ expected: resolve(PACKAGE_ROOT, CLIENT_BUNDLE) }, "client SDK bundle not found (run npm run build); /client.js will answer 404");
  if (missing.length > 0) log.warn({ missing }, "the live page's charting library is not installed (npm ci); the page shows no charts");
  for (const [path, file] of files) {
    app.get(path, (res, req) => {
      if (req.getHeader("if-none-match") === file.etag) return write(res, 304, file);
      write(res, 200, file, file.body);
    });
    // HEAD answers what GET would, headers only (curl -I, link checkers, caches revalidating).
    app.head(path, (res, req) => {
      if (req.getHeader("if-none-match") === file.etag) return write(res, 304, file);
      head(res, file);
    });
  }
}

function write(res: HttpResponse, status: 200 | 304, file: StaticFile, body?: Buffer): void {
  res.cork(() => {
    res.writeStatus(statusLine(status)).writeHeader("etag", file.etag).writeHeader("cache-control", "no-cache");
    if (body) res.writeHeader("content-type", file.contentType).writeHeader("x-content-type-options", "nosniff");
    res.end(body);
  });
}

/** The headers of the 200 a GET gets (its Content-Length included), without the body. */
function head(res: HttpResponse, file: StaticFile): void {
  // uWS.js 20.51 does not count endWithoutBody as an answer: without an abort handler it aborts the process
  // ("Returning from a request handler without responding…").
  res.onAborted(() => undefined);
  res.writeStatus(statusLine(200)).writeHeader("etag", file.etag).writeHeader("cache-control", "no-cache");
  res.writeHeader("content-type", file.contentType).writeHeader("x-content-type-options", "nosniff");
  res.endWithoutBody(file.body.length);
}
