// The benchmark payload, shared by pub-cluster (writes it) and sub-cluster (reads it):
//   {"p":"<publisher>","s":<seq from 1>,"t":<send time, integer µs since the epoch>[,"o":<µs>],"x":"<padding>"}
// and, once per publisher and channel at the end of a run, {"p":"<publisher>","end":true,"total":N}.
// "o" is the publisher's clock offset to the server (server time − publisher time), when it measured one:
// subscribers on other hosts correct their latencies with it.
// Padding is a run of "x" so that no key pattern can appear inside it.

const PAD = "x".repeat(1 << 16);

/** A data message of at least `size` bytes (exactly `size` when the fields fit in it). */
export function dataPayload(p: string, s: number, tUs: number, size: number, offsetUs: number | null = null): string {
  const head = `{"p":"${p}","s":${s},"t":${Math.round(tUs)}${offsetUs === null ? "" : `,"o":${Math.round(offsetUs)}`},"x":"`;
  let pad = size - head.length - 2;
  if (pad <= 0) return head + '"}';
  let x = "";
  while (pad > PAD.length) {
    x += PAD;
    pad -= PAD.length;
  }
  return head + x + PAD.slice(0, pad) + '"}';
}

/** The end marker a publisher sends after its last message on a channel. */
export function endPayload(p: string, total: number): string {
  return `{"p":"${p}","end":true,"total":${total}}`;
}

/** Publisher ids must be safe inside a JSON string without escaping. */
export function safePublisherId(id: string): string {
  return id.replace(/[^A-Za-z0-9._:@-]/g, "_");
}
