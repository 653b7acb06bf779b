// The authorization chain's pure parts in process: what a failure answers, who a read counts against, and the
// permission checked again after the subscribe hook's await.
import { describe, expect, it } from "vitest";
import { AccessControl, anonymousIdentity, readerOf, refusal, type Identity } from "../../src/auth/access.js";
import { Authenticator } from "../../src/auth/authenticator.js";
import { AuthError } from "../../src/auth/errors.js";
import type { Hooks } from "../../src/auth/hooks.js";
import { GatewayError } from "../../src/errors.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections.js";

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
});
