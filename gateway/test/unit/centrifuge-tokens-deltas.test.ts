import { describe, expect, it } from "vitest";
import { lifeOf, permissionsOf } from "../../src/auth/centrifugo-claims.js";
import { deltaPush, deltaSubscriptionPush } from "../../src/protocol/centrifuge/json.js";

describe("centrifugo claims — channels and subs", () => {
  it("a list of channels and the keys of subs are server-side subscriptions, mapped, and readable", () => {
    expect(permissionsOf({ channels: ["news:all", "plain.name"], subs: { "chat:room.1": {} } })).toEqual({
      sub: ["news.all", "plain%2Ename", "chat.room.1"],
      pub: [],
      auto: ["news.all", "plain%2Ename", "chat.room.1"],
    });
  });

  it("this gateway's channels object is kept, subs add to it", () => {
    expect(permissionsOf({ channels: { sub: ["a.>"], pub: ["a.b"] }, subs: { "x:y": {} } })).toEqual({ sub: ["a.>", "x.y"], pub: ["a.b"], auto: ["x.y"] });
    expect(permissionsOf({ channels: { sub: ["a.>"], pub: [] } })).toEqual({ sub: ["a.>"], pub: [] });
  });

  it("refuses names that map to no channel, non-strings, a subs that is no object, and too many", () => {
    expect(permissionsOf({ channels: ["chat:"] })).toMatch(/nothing after its namespace/);
    expect(permissionsOf({ channels: [1] })).toMatch(/Centrifugo channel names/);
    expect(permissionsOf({ subs: ["a"] })).toMatch(/subs must be an object/);
    expect(permissionsOf({ channels: Array.from({ length: 101 }, (_, i) => `c:${i}`) })).toMatch(/at most 100/);
  });
});

describe("centrifugo claims — expire_at", () => {
  it("replaces exp; 0 is no expiry; absent keeps exp; anything else is refused", () => {
    expect(lifeOf(100, 200)).toBe(200);
    expect(lifeOf(100, 0)).toBeUndefined();
    expect(lifeOf(100, undefined)).toBe(100);
    expect(lifeOf(100, "soon")).toMatch(/expire_at must be/);
    expect(lifeOf(100, -1)).toMatch(/expire_at must be/);
  });
});

describe("centrifuge JSON deltas — frames", () => {
  const meta = { channel: "cf.d", pattern: "cf.d", seq: 7, ts: 1 };
  const payload = Buffer.from('{"a":"é"}');

  it("a delta subscription's full publication carries its JSON as a string; a delta is a string with delta: true", () => {
    expect(JSON.parse(deltaSubscriptionPush(meta, payload).toString())).toEqual({ push: { channel: "cf:d", pub: { data: '{"a":"é"}', offset: 7 } } });
    expect(JSON.parse(deltaPush(meta, 6, Buffer.from("3\n1:x"), payload).toString())).toEqual({
      push: { channel: "cf:d", pub: { data: "3\n1:x", offset: 7, delta: true } },
    });
  });

  it("a delta that is not UTF-8 is sent as the whole publication", () => {
    expect(JSON.parse(deltaPush(meta, 6, Buffer.from([0x33, 0x0a, 0xc3]), payload).toString())).toEqual({
      push: { channel: "cf:d", pub: { data: '{"a":"é"}', offset: 7 } },
    });
  });
});
