import { describeConformance } from "../../conformance/vitest-suite.js";

// The Kotlin SDK (gateway/client-kotlin/conformance-adapter.sh) held to every conformance scenario in npm test.
describeConformance("kotlin");
