import { describe, expect, it } from "vitest";
import { msgFrame } from "../../src/protocol/serialize.js";
import { HEARTBEAT, namedEvent, parseEventId, parseStart, sseEventOf, streamPreamble } from "../../src/sse/event.js";

const EPOCH = "2026-01-02T03:04:05.123456789Z";
const q = (s: string) => new URLSearchParams(s);

describe("sse event — message events", () => {
  it("sse event — id is <epoch>:<seq>, data is the msg frame, the event ends with a blank line", () => {
    const frame = msgFrame({ channel: "a.b", pattern: "a.*", seq: 42, ts: 1000 }, Buffer.from('{"x":1}'));
    const ev = sseEventOf(frame, 42, EPOCH).toString();
    expect(ev).toBe(`id: ${EPOCH}:42\ndata: ${frame.toString()}\n\n`);
    expect(JSON.parse(ev.split("\n")[1]!.slice(6))).toMatchObject({ op: "msg", seq: 42, data: { x: 1 } });
  });

  it("sse event — built once per frame object (the hub and every stream share the bytes)", () => {
    const frame = msgFrame({ channel: "a", pattern: "a", seq: 1, ts: 1 }, Buffer.from("1"));
    expect(sseEventOf(frame, 1, EPOCH)).toBe(sseEventOf(frame, 1, EPOCH));
  });

  it("sse event — a payload with line breaks between JSON tokens becomes several data lines that join back to the frame", () => {
    const payload = Buffer.from('{\r\n "a": 1,\n "b": [1,\r2]\n}');
    const frame = msgFrame({ channel: "c", pattern: "c", seq: 7, ts: 5 }, payload);
    const ev = sseEventOf(frame, 7, EPOCH).toString();
    const lines = ev.split("\n");
    expect(lines.slice(1, -2).every((l) => l.startsWith("data: "))).toBe(true);
    expect(ev).not.toContain("\r");
    const joined = lines
      .slice(1, -2)
      .map((l) => l.slice(6))
      .join("\n");
    expect(JSON.parse(joined)).toMatchObject({ seq: 7, data: { a: 1, b: [1, 2] } });
  });

  it("sse event — without an epoch (a broker without history) there is no id", () => {
    const frame = msgFrame({ channel: "r", pattern: "r", seq: 3, ts: 1 }, Buffer.from("true"));
    expect(sseEventOf(frame, 3, undefined).toString()).toBe(`data: ${frame.toString()}\n\n`);
  });

  it("sse event — named events, preamble and heartbeat", () => {
    expect(namedEvent("gap", { truncated: true }, `${EPOCH}:9`)).toBe(`event: gap\nid: ${EPOCH}:9\ndata: {"truncated":true}\n\n`);
    expect(namedEvent("err", { code: "x" })).toBe(`event: err\ndata: {"code":"x"}\n\n`);
    expect(streamPreamble(1500)).toBe("retry: 1500\n: ok\n\n");
    expect(HEARTBEAT).toBe(": hb\n\n");
  });
});

describe("sse event — start positions", () => {
  it("sse event — Last-Event-ID: <epoch>:<seq> (epochs hold colons) or a bare seq", () => {
    expect(parseEventId(`${EPOCH}:17`)).toEqual({ after: 17, epoch: EPOCH });
    expect(parseEventId("17")).toEqual({ after: 17 });
    expect(parseEventId(" 0 ")).toEqual({ after: 0 });
    for (const bad of ["", ":5", "e:", "e:x", "e:-1", "1.5", "x".repeat(300), "e:99999999999999999"]) expect(parseEventId(bad), bad).toBeUndefined();
  });

  it("sse event — the header wins over the query; one query position at most", () => {
    expect(parseStart(q("from_seq=5"), `${EPOCH}:9`)).toEqual({ ok: true, start: { kind: "after", after: 9, epoch: EPOCH } });
    expect(parseStart(q(""), "")).toEqual({ ok: true, start: { kind: "live" } });
    expect(parseStart(q("from_seq=5"), "")).toEqual({ ok: true, start: { kind: "after", after: 4 } });
    expect(parseStart(q("last=3"), "")).toEqual({ ok: true, start: { kind: "last", last: 3 } });
    expect(parseStart(q("since=2026-01-02T03:04:05Z"), "")).toEqual({ ok: true, start: { kind: "time", time: "2026-01-02T03:04:05.000Z" } });
    expect(parseStart(q("since=0"), "")).toEqual({ ok: true, start: { kind: "time", time: "1970-01-01T00:00:00.000Z" } });
    expect(parseStart(q(`last_event_id=${encodeURIComponent(`${EPOCH}:3`)}`), "")).toEqual({ ok: true, start: { kind: "after", after: 3, epoch: EPOCH } });
    expect(parseStart(q("token=abc"), "")).toEqual({ ok: true, start: { kind: "live" } });
  });

  it("sse event — bad positions are refused with a message", () => {
    for (const bad of [
      "from_seq=0",
      "from_seq=-1",
      "from_seq=1.5",
      "from_seq=",
      "last=0",
      "last=1000001",
      "last=x",
      "since=soon",
      "since=",
      "since=9e99",
      "from_seq=1&since=0",
      "last_event_id=x:y",
    ]) {
      const r = parseStart(q(bad), "");
      expect(r.ok, bad).toBe(false);
    }
    expect(parseStart(q(""), "junk").ok).toBe(false);
  });
});
