// The payloads of the conformance scenarios, as the runner turns them into line-protocol fields and checks
// what arrived: JSON payloads `{"n": …}` (`"n"` in a step) and binary payloads (PROTOCOL.md "Binary
// payloads"), bytes written as hex in a step (`"hex"`, with a content `"type"`), sent to an adapter as
// `"bytes"` in base64 and reported back by it the same way.

/** The bytes a step's `hex` names; a scenario with an odd length or a non-hex digit is refused, not read as fewer bytes. */
export function bytesOfHex(hex: string): Uint8Array<ArrayBuffer> {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new Error(`"hex" must be pairs of hex digits, not ${JSON.stringify(hex)}`);
  return new Uint8Array(Buffer.from(hex, "hex"));
}

/**
 * A publish's (or batch item's) fields as the adapter gets them: `n` becomes `data: {n}`, `hex` becomes
 * `bytes` (base64; `type` passes as it is); anything else passes as it is.
 */
export function payloadFields({ n, hex, ...rest }: Record<string, unknown>): Record<string, unknown> {
  if (hex !== undefined) return { ...rest, bytes: Buffer.from(bytesOfHex(hex as string)).toString("base64") };
  return n === undefined ? rest : { ...rest, data: { n } };
}

/** One expected message of `expect: payloads`: bytes of a content type, or the JSON payload `{n}`. */
export type ExpectedPayload = { hex: string; type: string } | { n: number };

/**
 * Why `got` (a sub's `message` events, in arrival order) is not exactly `want`, or undefined when it is: each
 * bytes entry a message with `bytes` (base64) equal to its hex and its `type`; each `n` entry a message whose
 * `data.n` is `n` and that carries no `bytes` or `type`.
 */
export function payloadMismatch(got: readonly Record<string, unknown>[], want: readonly ExpectedPayload[]): string | undefined {
  if (got.length !== want.length) return `${got.length} messages, want ${want.length}: ${describe(got)}`;
  for (const [k, w] of want.entries()) {
    const m = got[k]!;
    const wrong = (what: string) => `message ${k + 1} (seq ${String(m.seq)}) ${what}; got ${describe(got)}`;
    if ("hex" in w) {
      if (typeof m.bytes !== "string") return wrong(`is not bytes, want ${w.hex}`);
      const hex = Buffer.from(m.bytes, "base64").toString("hex");
      if (hex !== Buffer.from(bytesOfHex(w.hex)).toString("hex")) return wrong(`has bytes ${hex}, want ${w.hex}`);
      if (m.type !== w.type) return wrong(`has type ${JSON.stringify(m.type)}, want ${JSON.stringify(w.type)}`);
    } else {
      if (m.bytes !== undefined || m.type !== undefined) return wrong(`is bytes, want the JSON {"n":${w.n}}`);
      if ((m.data as { n?: unknown } | undefined)?.n !== w.n) return wrong(`has data ${JSON.stringify(m.data)}, want {"n":${w.n}}`);
    }
  }
  return undefined;
}

/** Messages as `{seq, hex, type}` or `{seq, data}`, for a failure report. */
function describe(got: readonly Record<string, unknown>[]): string {
  return JSON.stringify(
    got.map((m) =>
      typeof m.bytes === "string" ? { seq: m.seq, hex: Buffer.from(m.bytes, "base64").toString("hex"), type: m.type } : { seq: m.seq, data: m.data },
    ),
  );
}
