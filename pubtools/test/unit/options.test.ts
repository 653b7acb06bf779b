import { describe, expect, it } from "vitest";
import { parsePubOptions, PubUsageError } from "../../src/options.js";

describe("pub-cluster options", () => {
  it("pub-cluster options — the users' command lines keep their meaning", () => {
    expect(parsePubOptions(["-t", "1000", "-n", "1", "-c", "1", "-p", "100"])).toMatchObject({
      intervalMs: 1000,
      perInterval: 1,
      processes: 1,
      passes: 100,
      target: "gateway-ws",
      port: 9000,
      sync: false,
      window: 100,
    });
    expect(parsePubOptions(["-n", "5", "-t", "100", "-c", "20", "-H", "10.1.2.3"])).toMatchObject({
      perInterval: 5,
      intervalMs: 100,
      processes: 20,
      hosts: ["10.1.2.3"],
    });
  });

  it("pub-cluster options — targets pick their default ports; --sync means one in flight", () => {
    expect(parsePubOptions(["--target", "redis"]).port).toBe(6379);
    expect(parsePubOptions(["--target", "jetstream"]).port).toBe(4222);
    expect(parsePubOptions(["--target", "gateway-http", "--port", "8080"]).port).toBe(8080);
    expect(parsePubOptions(["--sync"]).window).toBe(1);
    expect(parsePubOptions(["--window", "8"]).window).toBe(8);
  });

  it("pub-cluster options — conflicts and bad values are refused", () => {
    expect(() => parsePubOptions(["--sync", "--window", "3"])).toThrow(PubUsageError);
    expect(() => parsePubOptions(["--target", "mqtt"])).toThrow(/--target/);
    expect(() => parsePubOptions(["-p", "0"])).toThrow(/-p must be/);
    expect(() => parsePubOptions(["extra"])).toThrow(/unexpected/);
    expect(() => parsePubOptions(["--target", "redis", "--batch", "10"])).toThrow(/gateway targets/);
    expect(() => parsePubOptions(["--batch", "10", "--window", "5"])).toThrow(/--window of at least 10/);
    expect(parsePubOptions(["--target", "gateway-http", "--batch", "10"]).batch).toBe(10);
  });
});
