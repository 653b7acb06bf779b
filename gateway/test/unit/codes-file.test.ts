import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { codesFile } from "../../src/protocol/codes-file.js";
import { CloseCode, ErrorCode } from "../../src/protocol/codes.js";

describe("codes.json — the generated codes file SDKs read", () => {
  it("codes.json — the committed file is what the build writes from codes.ts (else: npm run build, and commit it)", () => {
    const committed = readFileSync(new URL("../../src/protocol/codes.json", import.meta.url), "utf8");
    expect(committed).toBe(codesFile());
  });

  it("codes.json — every error code with temporary and an HTTP status, every close code", () => {
    const file = JSON.parse(codesFile()) as { errors: Record<string, { temporary: unknown; httpStatus: unknown }>; closeCodes: Record<string, number> };
    expect(Object.keys(file.errors).sort()).toEqual(Object.values(ErrorCode).sort());
    for (const v of Object.values(file.errors)) {
      expect(typeof v.temporary).toBe("boolean");
      expect(v.httpStatus).toBeGreaterThanOrEqual(400);
    }
    expect(file.closeCodes).toEqual({ ...CloseCode });
    expect(file.errors.broker_unavailable).toEqual({ temporary: true, httpStatus: 503 });
  });
});
