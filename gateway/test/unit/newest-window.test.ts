// A page of history read backwards keeps the newest messages within `limit` and the byte bound, and says
// when it let older ones go (replay.ts NewestWindow), so the next page continues before its oldest message.
import { describe, expect, it } from "vitest";
import { NewestWindow } from "../../src/broker/jetstream/replay.js";

const msg = (seq: number, size: number) => ({ seq, payload: new Uint8Array(size) });

function fill(limit: number, maxBytes: number, sizes: number[]): { seqs: number[]; dropped: boolean } {
  const w = new NewestWindow<ReturnType<typeof msg>>(limit, maxBytes);
  sizes.forEach((size, i) => w.push(msg(i + 1, size)));
  return { seqs: w.newestFirst().map((m) => m.seq), dropped: w.dropped };
}

describe("newest window — a backwards page", () => {
  it("newest window — keeps the newest `limit`, newest first, and says it dropped older ones", () => {
    expect(fill(3, Infinity, [1, 1, 1, 1, 1])).toEqual({ seqs: [5, 4, 3], dropped: true });
    expect(fill(5, Infinity, [1, 1, 1])).toEqual({ seqs: [3, 2, 1], dropped: false });
  });

  it("newest window — the byte bound keeps the newest that fit, and the newest alone however large", () => {
    expect(fill(10, 25, [10, 10, 10, 10])).toEqual({ seqs: [4, 3], dropped: true });
    expect(fill(10, 25, [10, 100])).toEqual({ seqs: [2], dropped: true });
    expect(fill(10, 25, [5, 10, 10])).toEqual({ seqs: [3, 2, 1], dropped: false });
  });
});
