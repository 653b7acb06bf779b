// What a phone needs of the Kotlin SDK, beyond the conformance suite: pause()/resume() for the background,
// reconnectNow() for a network change. Played as scenarios by the conformance runner against a real gateway,
// through the adapter's pause, resume and reconnectNow commands.
import { afterAll, beforeAll, describe, it } from "vitest";
import { parseArgs } from "../../conformance/cli.js";
import { startHarness, type GatewayHarness } from "../../conformance/harness.js";
import { runScenario, type Scenario } from "../../conformance/runner.js";

const { client } = parseArgs(["--client", "kotlin"]);
let harness: GatewayHarness;
beforeAll(async () => {
  harness = await startHarness();
});
afterAll(async () => {
  await harness?.close();
});

const scenarios: Scenario[] = [
  {
    name: "pause-resume",
    description: "paused, the socket closes and nothing reconnects; resumed, the subscription goes on from its position with what was published meanwhile",
    steps: [
      { do: "connect", options: { minDelayMs: 50, maxDelayMs: 300 } },
      { do: "subscribe", sub: "s1", channel: "$ch", from: "all" },
      { fault: "publish", channel: "$ch", n: [1] },
      { expect: "messages", sub: "s1", n: [1] },
      { do: "pause" },
      { expect: "event", type: "disconnected", match: { code: 1000, willReconnect: false } },
      { fault: "publish", channel: "$ch", n: [2, 3] },
      { fault: "wait", ms: 1500 },
      { expect: "no_event", type: "connecting", match: { attempt: { gte: 1 } } },
      { expect: "no_event", type: "resubscribed", match: { subscriptions: 1 } },
      { do: "resume" },
      { expect: "event", type: "resubscribed" },
      { expect: "messages", sub: "s1", n: [1, 2, 3] },
    ],
  },
  {
    name: "reconnect-now",
    description: "reconnectNow drops a healthy socket and connects at once (reconnectInMs 0, whatever the backoff bounds), resuming without gap or duplicate",
    steps: [
      { do: "connect", options: { minDelayMs: 5000, maxDelayMs: 10000 } },
      { do: "subscribe", sub: "s1", channel: "$ch", from: "all" },
      { fault: "publish", channel: "$ch", n: [1] },
      { expect: "messages", sub: "s1", n: [1] },
      { do: "reconnectNow" },
      { expect: "event", type: "disconnected", match: { willReconnect: true, reconnectInMs: 0 } },
      { expect: "event", type: "resubscribed", match: { subscriptions: 1 } },
      { fault: "publish", channel: "$ch", n: [2] },
      { expect: "messages", sub: "s1", n: [1, 2] },
    ],
  },
];

describe("Kotlin SDK — on a phone", () => {
  for (const s of scenarios) {
    it(`Kotlin SDK — ${s.name}: ${s.description}`, async () => {
      try {
        await runScenario(s, harness, client);
      } finally {
        await harness.reset();
      }
    }, 90_000);
  }
});
