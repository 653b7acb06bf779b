import { base64Decode, utf8Decode } from "./deltas.js";
import { GatewayError, messageOf } from "./errors.js";
import { clearTimer, setTimer, type Timer } from "./platform.js";

/** A subscription token is refreshed once this share of its remaining lifetime has passed. */
export const REFRESH_AT = 0.8;

/** The app's `getSubscriptionToken`: a token for `channel`, or nothing (the connection's own rights then). */
export type GetSubscriptionToken = (channel: string) => string | undefined | Promise<string | undefined>;

/**
 * Subscription tokens (PROTOCOL.md `sub` `token`, `sub_refresh`): asks the app for one at each (re)subscribe,
 * and refreshes each before its `exp`. One timer per subscription holding a token.
 */
export class SubTokens {
  private readonly timers = new Map<object, Timer>();

  constructor(private readonly get: GetSubscriptionToken | undefined) {}

  get enabled(): boolean {
    return this.get !== undefined;
  }

  /** The token to subscribe to `channel` with (undefined: none); rejects with a temporary `token_error`. */
  async tokenFor(channel: string): Promise<string | undefined> {
    if (!this.get) return undefined;
    try {
      return (await this.get(channel)) || undefined;
    } catch (e) {
      throw new GatewayError("token_error", `getSubscriptionToken(${channel}) failed: ${messageOf(e)}`, { cause: e, temporary: true });
    }
  }

  /** Runs `refresh` when REFRESH_AT of the time to `exp` (unix seconds) has passed; replaces `key`'s timer. */
  schedule(key: object, exp: number | undefined, refresh: () => void): void {
    this.cancel(key);
    if (exp === undefined) return;
    const t = setTimer(
      () => {
        this.timers.delete(key);
        refresh();
      },
      Math.max(0, (exp * 1000 - Date.now()) * REFRESH_AT),
    );
    (t as { unref?: () => void }).unref?.();
    this.timers.set(key, t);
  }

  cancel(key: object): void {
    clearTimer(this.timers.get(key));
    this.timers.delete(key);
  }

  cancelAll(): void {
    for (const t of this.timers.values()) clearTimer(t);
    this.timers.clear();
  }
}

/** The `exp` claim of a JWT (read, not verified: the server verifies), or undefined. */
export function expOf(token: string): number | undefined {
  try {
    const part = token.split(".")[1] ?? "";
    const json = utf8Decode(base64Decode(part.replace(/-/g, "+").replace(/_/g, "/")));
    const exp = (JSON.parse(json) as { exp?: unknown }).exp;
    return typeof exp === "number" ? exp : undefined;
  } catch {
    return undefined;
  }
}
