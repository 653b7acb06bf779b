// The Go and Python Centrifuge SDKs over Protobuf against the gateway's Centrifugo door: the scenario set of
// scenarios.json (README.md). In the long tier, not `npm test`: they add about 35 s to the JSON runs, and `npm test`
// covers the format with the Java SDK (centrifuge-sdks.test.ts) and the JavaScript one (gateway/test/centrifuge-sdk.test.ts).
import { describeCentrifugeSdks } from "./suite.js";
import { RUNNERS } from "./runners.js";

describeCentrifugeSdks(RUNNERS.filter((r) => r.format === "protobuf" && r.sdk !== "java"));
