import { describeConformance } from "../../conformance/vitest-suite.js";

// The Kotlin SDK speaking fanout.v1.msgpack (conformance-adapter.sh --msgpack) held to every conformance scenario in npm test.
describeConformance("kotlin-msgpack");
