import { describe, expect, it } from "vitest";
import { distance, unknownSettings } from "../../src/config/unknown-env.js";

describe("config — environment variables that look like settings", () => {
  it("config — a settings prefix without a setting, or a near miss, is named with the likely setting; other variables are not", () => {
    const env = {
      JWT_SECERT: "x",
      STREAM_MAX_AGEE: "1h",
      HOOKS_TIMEOUT: "1s",
      JWT_PUBLIC_KEY: "x",
      JWT_SECRET: "ok",
      PATH: "/bin",
      HOME: "/root",
      NODE_ENV: "test",
      FGW_WORKER_CONFIG: "{}",
    };
    expect(unknownSettings(env)).toEqual([
      { variable: "HOOKS_TIMEOUT", didYouMean: "HOOK_TIMEOUT" },
      { variable: "JWT_PUBLIC_KEY", didYouMean: "JWT_PUBLIC_KEY_FILE" },
      { variable: "JWT_SECERT", didYouMean: "JWT_SECRET" },
      { variable: "STREAM_MAX_AGEE", didYouMean: "STREAM_MAX_AGE" },
    ]);
    expect(distance("JWT_SECERT", "JWT_SECRET")).toBe(2);
    // a Kubernetes Service named nats gives every pod these: not settings, not misspelt either
    const links = { NATS_SERVICE_HOST: "10.0.0.1", NATS_SERVICE_PORT: "4222", NATS_PORT: "tcp://10.0.0.1:4222", NATS_PORT_4222_TCP_ADDR: "10.0.0.1" };
    expect(unknownSettings(links)).toEqual([]);
  });
});
