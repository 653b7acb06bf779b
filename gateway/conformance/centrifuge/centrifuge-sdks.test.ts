// The Centrifuge client SDKs of Go and Python against the gateway's Centrifugo door (/connection/websocket): the
// scenario set of scenarios.json with each SDK's runner (README.md).
import { describeCentrifugeSdks } from "./suite.js";
import { RUNNERS } from "./runners.js";

describeCentrifugeSdks(RUNNERS.filter((r) => r.sdk !== "java"));
