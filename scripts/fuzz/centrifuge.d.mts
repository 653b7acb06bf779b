import type fc from "fast-check";

/** A Protobuf frame with a length that lies, and which lie it is. */
export type LyingFrame = { bytes: Uint8Array; why: string; nested: boolean };

/** The Centrifuge door's fuzz generators (scripts/fuzz/centrifuge.mjs), built on the gateway's proto-wire encoder. */
export declare function centrifugeArbitraries(wire: { encodeDelimited: (name: string, o: object) => Uint8Array }): {
  jsonFrame: fc.Arbitrary<string>;
  protoFrame: fc.Arbitrary<Uint8Array>;
  lyingFrame: fc.Arbitrary<LyingFrame>;
};

/** The fuzz run's targets for those decoders: [name, share of the run, generator, check]. */
export declare function centrifugeTargets(
  modules: Record<string, unknown>,
  assert: (cond: unknown, what: string) => void,
): [string, number, fc.Arbitrary<unknown>, (x: unknown) => void][];
