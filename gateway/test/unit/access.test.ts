// The authorization chain's pure parts in process: what a failure answers, who a read counts against, the
// permission checked again after the subscribe hook's await, what the hook is told, and a ttl against maxAge.
import { describe, expect, it } from "vitest";
import { AccessControl, anonymousIdentity, readerOf, refusal, type Identity } from "../../src/auth/access.js";
import { Authenticator } from "../../src/auth/authenticator.js";
import { AuthError } from "../../src/auth/errors.js";
import type { Hooks } from "../../src/auth/hooks.js";
import { GatewayError } from "../../src/errors.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { namespacesSection } from "../../src/namespaces/namespace.js";
import type { NamespaceSpec } from "../../src/namespaces/spec.js";

const auth = new Authenticator(sectionsOf(loadConfig([], {}).config).auth);
const user = (sub: string[], u = "alice"): Identity => ({ principal: { user: u, perms: { sub, pub: [] } }, ip: "127.0.0.1", identified: true, trusted: false });

describe("access — the chain's pure parts", () => {
  it("access — a failure answers 401 for a token, its own code for a refusal, 500 internal for anything else", () => {
    expect(refusal(new AuthError("expired", "token has expired"))).toMatchObject({ status: 401, code: ErrorCode.Unauthorized, temporary: false });
    expect(refusal(new GatewayError(ErrorCode.HookUnavailable, "down"))).toMatchObject({ status: 503, code: ErrorCode.HookUnavailable, temporary: true });
    expect(refusal(new TypeError("bug"))).toMatchObject({ status: 500, code: ErrorCode.Internal, temporary: true });
  });

  it("access — reads count against a named user only: not anon, not an API key", () => {
    expect(readerOf(user(["a"]))).toBe("alice");
    expect(readerOf(anonymousIdentity("127.0.0.1"))).toBeUndefined();
    expect(readerOf({ ...user(["a"], "api-key"), trusted: true })).toBeUndefined();
  });

  it("access — the permission is checked again after the subscribe hook: a refresh meanwhile refuses the read", async () => {
    let current = user(["rooms.>"]);
    const hooks = {
      subscribeEnabled: true,
      connectEnabled: false,
      subscribe: async () => {
        current = user(["other.>"]); // a refresh lands while the hook is asked
      },
    } as unknown as Hooks;
    const access = new AccessControl(auth, hooks);
    await expect(access.authorize(() => current, { right: "sub", channel: "rooms.1" })).rejects.toMatchObject({ code: ErrorCode.Forbidden });
    current = user(["rooms.>"]);
    const fixed = current;
    await expect(access.authorize(fixed, { right: "sub", channel: "rooms.1" })).resolves.toBeUndefined();
    await expect(access.authorize(fixed, { right: "pub", channel: "rooms.1" })).rejects.toMatchObject({ code: ErrorCode.Forbidden });
  });

  it("access — the subscribe hook is told whether it is asked about a pattern", async () => {
    const asked: unknown[] = [];
    const hooks = { subscribeEnabled: true, connectEnabled: false, subscribe: async (r: unknown) => void asked.push(r) } as unknown as Hooks;
    const access = new AccessControl(auth, hooks);
    for (const channel of ["rooms.1", "rooms.*", "rooms.>"]) await access.authorize(user(["rooms.>"]), { right: "sub", channel });
    expect(asked).toMatchObject([
      { channel: "rooms.1", pattern: false },
      { channel: "rooms.*", pattern: true },
      { channel: "rooms.>", pattern: true },
    ]);
  });

  it("access — a ttl longer than the namespace's maxAge is bad_request naming both; up to it passes", async () => {
    const base = sectionsOf(loadConfig([], {}).config).stream;
    const spec = { name: "chat", prefix: "chat", allowMsgTtl: true, maxAgeMs: 3_600_000, features: { publish: true }, resumeWindowMs: 0 };
    const namespaces = namespacesSection([spec as unknown as NamespaceSpec], base);
    const access = new AccessControl(auth, undefined, undefined, namespaces);
    const writer: Identity = { ...user([]), principal: { user: "w", perms: { sub: [], pub: [">"] } } };
    await expect(access.authorize(writer, { right: "pub", channel: "chat.x", ttl: "3600s" })).resolves.toBeUndefined();
    await expect(access.authorize(writer, { right: "pub", channel: "chat.x", ttl: "3601s" })).rejects.toMatchObject({
      code: ErrorCode.BadRequest,
      message: expect.stringContaining("ttl 3601s is longer than namespace chat's maxAge (3600s)"),
    });
    await expect(access.authorize(writer, { right: "pub", channel: "other.x", ttl: "1s" })).rejects.toMatchObject({ code: ErrorCode.FeatureDisabled });
  });
});
