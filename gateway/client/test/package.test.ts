import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// What a user of @fanout-gateway/client installs: built from the sources here, packed as npm would.
const pkgDir = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(`${pkgDir}/package.json`, "utf8")) as Record<string, unknown> & { version: string; exports: Record<string, unknown> };
const modules = readdirSync(`${pkgDir}/src`)
  .filter((f) => f.endsWith(".ts"))
  .map((f) => f.slice(0, -3));

describe("package — @fanout-gateway/client as published", () => {
  it("package — npm pack holds exactly the built JS, declarations, source maps, README and package.json", () => {
    execFileSync(process.execPath, [fileURLToPath(new URL("../../../node_modules/typescript/bin/tsc", import.meta.url)), "-p", "tsconfig.json"], {
      cwd: pkgDir,
      stdio: "pipe",
    });
    const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: pkgDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const [packed] = JSON.parse(out) as [{ name: string; version: string; files: { path: string }[] }];
    expect([packed.name, packed.version]).toEqual(["@fanout-gateway/client", pkg.version]);
    const expected = ["README.md", "package.json", ...modules.flatMap((m) => [`dist/${m}.js`, `dist/${m}.js.map`, `dist/${m}.d.ts`])];
    expect(packed.files.map((f) => f.path).sort()).toEqual(expected.sort());
  });

  it("package — ESM with typed exports, one pinned dependency (the Fossil delta applier), and a major version that is the wire protocol's", async () => {
    expect(pkg.type).toBe("module");
    expect(pkg.exports["."]).toEqual({ types: "./dist/index.d.ts", default: "./dist/index.js" });
    expect(pkg.dependencies).toEqual({ "fossil-delta": "2.0.0" });
    for (const field of ["peerDependencies", "optionalDependencies", "bundleDependencies"]) expect(pkg[field]).toBeUndefined();
    const protocol = readFileSync(new URL("../../PROTOCOL.md", import.meta.url), "utf8");
    const wireVersion = /^# .*wire protocol, version (\d+)/m.exec(protocol)?.[1];
    expect(pkg.version.split(".")[0]).toBe(wireVersion);
    const sdk = await import("../src/index.js");
    expect(sdk.SUBPROTOCOL).toBe(`fanout.v${wireVersion}`);
  });

  it("package — the built entry loads in plain Node and exports the SDK", async () => {
    const built = (await import(/* @vite-ignore */ new URL("../dist/index.js", import.meta.url).href)) as Record<string, unknown>;
    expect(Object.keys(built).sort()).toEqual(
      [
        "DEFAULT_OPTIONS",
        "EVENT_TYPES",
        "GatewayClient",
        "GatewayError",
        "SUBPROTOCOL",
        "SUBPROTOCOL_MSGPACK",
        "WIRE_CODES",
        "backoffDelay",
        "isTemporary",
        "subscribeEvents",
      ].sort(),
    );
  });

  it("package — the README's events section lists every event the client emits", async () => {
    const { EVENT_TYPES } = await import("../src/index.js");
    const readme = readFileSync(`${pkgDir}/README.md`, "utf8");
    const section = readme.slice(readme.indexOf("## Events"), readme.indexOf("\n## ", readme.indexOf("## Events") + 1));
    const tableRows = [...section.matchAll(/^\| `([a-zA-Z]+)`\s*\|/gm)].map((m) => m[1]);
    const unionTypes = [...section.matchAll(/\{ type: "([a-zA-Z]+)"/g)].map((m) => m[1]);
    expect(new Set(tableRows)).toEqual(new Set(EVENT_TYPES));
    expect(unionTypes).toEqual([...EVENT_TYPES]);
  });
});
