// The Centrifuge client SDKs over Protobuf (Go, Python and Java, which speaks nothing else) against the gateway's
// Centrifugo door: the scenario set of scenarios.json (README.md). In the long tier, not `npm test`: Java's one
// `mvn package` takes 15 to 30 s on two cores and its scenarios about 25 s, and Go and Python over Protobuf add
// about 35 s to the JSON runs' 40 s (gateway/test/centrifuge-sdk.test.ts covers the format in `npm test`).
import { describeCentrifugeSdks } from "./suite.js";
import { RUNNERS } from "./runners.js";

describeCentrifugeSdks(RUNNERS.filter((r) => r.format === "protobuf"));
