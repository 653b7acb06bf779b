import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GatewayError, WIRE_CODES } from "../src/index.js";

// The wire error codes an SDK needs come from one file, gateway/src/protocol/codes.json, generated from the
// gateway's protocol/codes.ts and errors.ts (gateway/test/unit/codes-file.test.ts keeps it current). The
// SDK's fallback table and the protocol's documented table must both be that list.
const codesJson = JSON.parse(readFileSync(new URL("../../src/protocol/codes.json", import.meta.url), "utf8")) as {
  errors: Record<string, { temporary: boolean }>;
};
const generated = Object.fromEntries(Object.entries(codesJson.errors).map(([code, v]) => [code, v.temporary]));

/** PROTOCOL.md's "Error codes" table: code → temporary ("yes…" or "no"). */
function protocolTable(): Record<string, boolean> {
  const md = readFileSync(new URL("../../PROTOCOL.md", import.meta.url), "utf8");
  const section = md.slice(md.indexOf("## Error codes"), md.indexOf("\n## ", md.indexOf("## Error codes") + 1));
  const rows: Record<string, boolean> = {};
  for (const line of section.split("\n")) {
    const m = /^\|\s*`([a-z_]+)`\s*\|\s*\d+\s*\|\s*([^|]+)\|/.exec(line);
    if (m) rows[m[1]!] = m[2]!.trim().startsWith("yes");
  }
  return rows;
}

const sdk = Object.fromEntries(Object.entries(WIRE_CODES).map(([code, v]) => [code, v.temporary]));
const sorted = (o: Record<string, boolean>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));

describe("codes — the SDK and PROTOCOL.md name codes.json's codes, equally temporary", () => {
  it("codes — the SDK's table is codes.json's", () => {
    expect(Object.keys(generated).length).toBeGreaterThan(20);
    expect(sorted(sdk)).toEqual(sorted(generated));
  });

  it("codes — PROTOCOL.md's error code table documents codes.json's codes", () => {
    const table = protocolTable();
    expect(sorted(table)).toEqual(sorted(generated));
  });

  it("codes — an err frame without `temporary` falls back to the table; unknown codes count as temporary", () => {
    for (const [code, temporary] of Object.entries(sdk)) expect(new GatewayError(code, "x").temporary).toBe(temporary);
    expect(new GatewayError("a_code_added_later", "x").temporary).toBe(true);
    expect(new GatewayError("forbidden", "x", { temporary: true }).temporary).toBe(true);
  });
});
