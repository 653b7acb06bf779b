import { describeConformance } from "./vitest-suite.js";

// The TypeScript SDK again, speaking fanout.v1.msgpack (binary frames): every scenario holds on both codecs.
describeConformance("typescript-msgpack");
