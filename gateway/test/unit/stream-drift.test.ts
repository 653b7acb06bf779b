import { describe, expect, it } from "vitest";
import type { StreamConfig } from "@nats-io/jetstream";
import { bucketDrift, streamDrift } from "../../src/broker/jetstream/stream-watch.js";
import { desiredStream } from "../../src/broker/jetstream/stream.js";
import { eventsStream } from "../../src/broker/jetstream/events-stream.js";
import { ownStreamDrift } from "../../src/broker/jetstream/own-stream.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";

const wanted = desiredStream(sectionsOf(loadConfig([], {}).config).stream);
const as = (c: Partial<StreamConfig>) => c as StreamConfig;

describe("stream drift — what of the stream's setup the gateway relies on", () => {
  it("stream drift — none for the stream it creates; each missing part named", () => {
    expect(streamDrift(as(wanted), wanted)).toEqual([]);
    expect(streamDrift(undefined, wanted)).toEqual(["stream_missing"]);
    expect(streamDrift(as({ ...wanted, republish: undefined }), wanted)).toEqual(["republish_changed"]);
    expect(streamDrift(as({ ...wanted, allow_direct: false, subjects: ["other.>"] }), wanted)).toEqual(["allow_direct_off", "subjects_changed"]);
    // limits an operator tunes at run time are not drift
    expect(streamDrift(as({ ...wanted, max_age: 1 }), wanted)).toEqual([]);
    expect(bucketDrift(undefined, wanted)).toEqual(["bucket_missing"]);
    expect(bucketDrift(as({ ...wanted, republish: undefined }), wanted)).toEqual(["bucket_republish_changed"]);
  });

  it("stream drift — regions: a stream found in another region than HOME_REGION (a promoted home) is reported, not repaired", () => {
    const home = desiredStream(sectionsOf(loadConfig([], { REGION: "a", REGIONS: "a,b,c", NATS_URL: "nats://127.0.0.1:4222" }).config).stream);
    expect(home.placement).toEqual({ cluster: "a" });
    expect(streamDrift(as(home), home)).toEqual([]);
    // After `scripts/region-promote.sh b`: the stream is in b and republishes under b's prefix.
    const promoted = as({ ...home, placement: { cluster: "b" } as StreamConfig["placement"], republish: { src: "ev.>", dest: "evlive.b.>" } });
    expect(streamDrift(promoted, home)).toEqual(["home_region_moved"]);
  });

  it("stream drift — the events feature's streams: missing, or a setting the gateway keeps changed; the others are the operator's", () => {
    const events = eventsStream(sectionsOf(loadConfig([], { EVENTS: "all" }).config).events);
    expect(ownStreamDrift(as(events.wanted), events)).toEqual([]);
    expect(ownStreamDrift(undefined, events)).toEqual(["events_stream_missing"]);
    expect(ownStreamDrift(as({ ...events.wanted, max_age: 1 }), events)).toEqual(["events_stream_changed"]);
    expect(ownStreamDrift(as({ ...events.wanted, subjects: ["other.>"] }), events)).toEqual(["events_stream_changed"]);
    expect(ownStreamDrift(as({ ...events.wanted, description: "an operator's note" }), events)).toEqual([]);
  });
});
