// The Centrifuge client SDKs of Go and Python over JSON against the gateway's Centrifugo door
// (/connection/websocket): the scenario set of scenarios.json with each SDK's runner (README.md). The Protobuf
// runs, Java's among them, are in the long tier (centrifuge-sdks-protobuf.test.ts).
import { describeCentrifugeSdks } from "./suite.js";
import { RUNNERS } from "./runners.js";

describeCentrifugeSdks(RUNNERS.filter((r) => r.format === "json"));
