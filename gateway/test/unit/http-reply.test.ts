// The HTTP reply module every door answers through, and the start log's account of what is open.
import { describe, expect, it } from "vitest";
import { errorBody, statusLine, statusOf, unsupportedMedia } from "../../src/protocol/http-reply.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import { WIRE_ERRORS } from "../../src/errors.js";
import { exposureWarnings } from "../../src/config/exposure.js";
import { loadConfig } from "../../src/config/config.js";

describe("http reply", () => {
  it("every wire code has a status with a reason phrase, and its body says the code's temporary unless told", () => {
    for (const code of Object.values(ErrorCode)) {
      expect(statusLine(WIRE_ERRORS[code].status), code).not.toMatch(/Status$/);
      expect(JSON.parse(errorBody({ code, message: "m" }))).toEqual({ error: code, message: "m", temporary: WIRE_ERRORS[code].temporary });
    }
    expect(JSON.parse(errorBody({ code: ErrorCode.BrokerError, message: "refused", temporary: false })).temporary).toBe(false);
    expect(statusOf({ code: ErrorCode.NotFound, message: "" })).toBe(404);
    expect(statusOf({ code: ErrorCode.Disconnected, message: "", status: 503 })).toBe(503);
  });

  it("a state-changing request must declare JSON; parameters and case do not matter", () => {
    expect(unsupportedMedia("application/json")).toBeUndefined();
    expect(unsupportedMedia("Application/JSON; charset=utf-8")).toBeUndefined();
    expect(unsupportedMedia("application/x-ndjson", ["application/json", "application/x-ndjson"])).toBeUndefined();
    for (const t of ["", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"])
      expect(unsupportedMedia(t), t).toMatchObject({ code: "unsupported_media_type" });
  });
});

describe("exposure warnings", () => {
  const config = (env: Record<string, string>) => loadConfig([], env).config;

  it("authentication off: loopback by default; HOST=0.0.0.0 says the network; the control plane is this host's", () => {
    const [local] = exposureWarnings(config({}), -1);
    expect(config({}).host).toBe("127.0.0.1");
    expect(local).toMatch(/^AUTHENTICATION IS OFF: open to this host only \(HOST=127\.0\.0\.1\)/);
    expect(local).toMatch(/\/metrics and \/v1\/stats/);
    const [open] = exposureWarnings(config({ HOST: "0.0.0.0" }), 9100);
    expect(open).toMatch(/every address that reaches 0\.0\.0\.0:9000/);
    expect(open).not.toMatch(/\/metrics/); // on the admin listener then
    expect(open).toMatch(/control plane .* from this host/);
  });

  it("authentication on: HOST defaults to every interface, and API_KEYS' keys are called admin keys", () => {
    const c = config({ JWT_SECRET: "s".repeat(40), API_KEYS: "k".repeat(20) });
    expect(c.host).toBe("0.0.0.0");
    expect(exposureWarnings(c, 9100)).toEqual([expect.stringMatching(/^API_KEYS: each of its 1 key\(s\) is an admin key/)]);
    expect(exposureWarnings(config({ JWT_SECRET: "s".repeat(40) }), 9100)).toEqual([]);
    expect(exposureWarnings(config({ JWT_SECRET: "s".repeat(40) }), -1)).toEqual([
      expect.stringMatching(/^ADMIN_PORT=off: \/metrics and \/v1\/stats are served on the public port/),
    ]);
  });
});
