import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { toCentrifugoChannel, toGatewayChannel } from "../../src/protocol/centrifugo-channels.js";

/** Centrifugo name → this gateway's channel; each row maps back to the same name. */
const MAPPED: [string, string][] = [
  ["news", "news"],
  ["chat:room1", "chat.room1"],
  ["chat:room.1", "chat.room.1"],
  ["chat:a:b", "chat.a:b"],
  ["news.sport", "news%2Esport"],
  ["app.v1:inbox", "app%2Ev1.inbox"],
  ["$secret", "%24secret"],
  ["$chat:x", "%24chat.x"],
  ["chat:$x", "chat.$x"],
  ["personal:#42", "personal.#42"],
  ["personal:#42,43", "personal.#42,43"],
  ["50%off", "50%25off"],
  ["chat:a b", "chat.a%20b"],
  ["chat:a*b>c", "chat.a%2Ab%3Ec"],
  ["chat:tab\there", "chat.tab%09here"],
  ["chat:zero\u200bwidth", "chat.zero%E2%80%8Bwidth"],
  ["chat:Ünïcödé/ok", "chat.Ünïcödé/ok"],
  ["👨‍👩‍👧", "👨‍👩‍👧"],
  [".", "%2E"],
];

/** Centrifugo names this gateway cannot hold (the server API answers 107). */
const REFUSED: [string, RegExp][] = [
  ["", /empty/],
  [":x", /empty namespace/],
  ["chat:", /nothing after/],
  ["chat:a..b", /empty token/],
  ["chat:a.", /empty token/],
  ["lone\ud800", /well-formed/],
  ["ns:" + Array.from({ length: 16 }, (_, i) => `t${i}`).join("."), /more than 16 tokens/],
  ["x".repeat(256), /longer than 255/],
  ["ns:" + " ".repeat(90), /longer than 255/],
];

/** Gateway channels without a Centrifugo name (their forward mapping is another channel). */
const UNNAMED = ["50%off", "%41", "x:y.z", "a%2", "%2e"];

describe("centrifugo channel names — table", () => {
  it.each(MAPPED)("%j ⇄ %j", (centrifugo, gateway) => {
    expect(toGatewayChannel(centrifugo)).toEqual({ ok: true, name: gateway });
    expect(toCentrifugoChannel(gateway)).toEqual({ ok: true, name: centrifugo });
  });

  it.each(REFUSED)("%j is refused (%s)", (name, why) => {
    const r = toGatewayChannel(name);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(why);
  });

  it.each(UNNAMED)("gateway channel %j has no Centrifugo name", (channel) => {
    expect(toCentrifugoChannel(channel).ok).toBe(false);
  });

  it("native channels made of plain tokens all have a name: the first dot is the namespace boundary", () => {
    expect(toCentrifugoChannel("orders.eu.paris")).toEqual({ ok: true, name: "orders:eu.paris" });
    expect(toCentrifugoChannel("orders")).toEqual({ ok: true, name: "orders" });
  });
});

describe("centrifugo channel names — properties", () => {
  it("every name that maps comes back as itself, and distinct names map to distinct channels", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), fc.string({ unit: "binary", maxLength: 40 }), (a, b) => {
        const [ma, mb] = [toGatewayChannel(a), toGatewayChannel(b)];
        if (ma.ok) expect(toCentrifugoChannel(ma.name)).toEqual({ ok: true, name: a });
        if (ma.ok && mb.ok && a !== b) expect(ma.name).not.toBe(mb.name);
      }),
      { numRuns: 2_000 },
    );
  });
});
