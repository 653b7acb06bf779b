// The Kotlin SDK's README example is a real program (src/test/kotlin/Example.kt): the README shows that file
// as it is, and it runs against a real gateway with JWT auth and prints what the README says it prints.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";

const dir = new URL("../", import.meta.url);
let nats: NatsServerHandle;
let gw: GatewayHandle;

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE } });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

describe("Kotlin SDK — the README's example", () => {
  it("Kotlin SDK — the README's JVM program is src/test/kotlin/Example.kt, and it publishes, receives its message and exits", async () => {
    const readme = readFileSync(new URL("README.md", dir), "utf8");
    const block = /## A JVM program[\s\S]*?```kotlin\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(readFileSync(new URL("src/test/kotlin/Example.kt", dir), "utf8"));
    const token = await sign({ channels: { sub: ["chat.>"], pub: ["chat.>"] } });
    const { stdout } = await promisify(execFile)("bash", [new URL("scripts/run-test-main.sh", dir).pathname, "ExampleKt"], {
      env: { ...process.env, GATEWAY_URL: gw.wsUrl, GATEWAY_TOKEN: token },
      timeout: 240_000,
    });
    const seq = /^stored as seq (\d+)$/m.exec(stdout)?.[1];
    expect(seq, stdout).toBeDefined();
    expect(stdout).toContain(`chat.lobby #${seq}: {"text":"hello from Kotlin"}`);
  }, 300_000);
});
