// The Centrifuge client SDKs against the gateway's Centrifugo door (/connection/websocket): the scenario set of
// scenarios.json with each SDK's runner (README.md): Go and Python over JSON, Java over Protobuf (it speaks nothing
// else; its runner is built during the set-up, scripts/setup-centrifuge-sdks.sh). Go and Python over Protobuf are in
// the long tier (centrifuge-sdks-protobuf.test.ts); gateway/test/centrifuge-sdk.test.ts covers the JavaScript SDK in
// both formats.
import { describeCentrifugeSdks } from "./suite.js";
import { RUNNERS } from "./runners.js";

describeCentrifugeSdks(RUNNERS.filter((r) => r.format === "json" || r.sdk === "java"));
