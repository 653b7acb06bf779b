import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/protocol/codes.js";
import { WIRE_ERRORS } from "../../src/errors.js";
import { GatewayError, WIRE_CODES } from "../src/index.js";

// The wire error codes live in three places: the gateway's (protocol/codes.ts, with each code's default
// `temporary` in errors.ts), the protocol's table (PROTOCOL.md), and the SDK's fallback table. These tests
// keep them one list.

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

describe("codes — the SDK, the gateway and PROTOCOL.md name the same codes, equally temporary", () => {
  it("codes — the SDK's table is the gateway's ErrorCode list with WIRE_ERRORS' temporary", () => {
    const gateway = Object.fromEntries(Object.values(ErrorCode).map((c) => [c, WIRE_ERRORS[c].temporary]));
    expect(Object.keys(gateway).length).toBeGreaterThan(20);
    expect(sorted(sdk)).toEqual(sorted(gateway));
  });

  it("codes — the SDK's table is PROTOCOL.md's error code table", () => {
    const table = protocolTable();
    expect(Object.keys(table).length).toBeGreaterThan(20);
    expect(sorted(sdk)).toEqual(sorted(table));
  });

  it("codes — an err frame without `temporary` falls back to the table; unknown codes count as temporary", () => {
    for (const [code, temporary] of Object.entries(sdk)) expect(new GatewayError(code, "x").temporary).toBe(temporary);
    expect(new GatewayError("a_code_added_later", "x").temporary).toBe(true);
    expect(new GatewayError("forbidden", "x", { temporary: true }).temporary).toBe(true);
  });
});
