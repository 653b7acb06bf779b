import { describeConformance } from "./vitest-suite.js";

// The TypeScript SDK (adapters/typescript.mjs) held to every scenario, or the client CONFORMANCE_CLIENT names
// as `npm run conformance -- --client` takes it. Another SDK in `npm test`: a test file that calls
// describeConformance("kotlin").
describeConformance(process.env.CONFORMANCE_CLIENT ?? "typescript");
